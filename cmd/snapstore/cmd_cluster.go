package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/server"
)

const clusterHelp = `The cluster (docs/cluster.md): its members as a server sees them, what
waits on it to be sent to each node, drain, resume and forget of a node,
the gossip keys and their rotation, and a new gossip key for
cluster.gossip_key_file. Every subcommand but keygen asks a server
(--server, or the configured listen address): membership and queues live
in a serving process, never in a data directory.`

// cmdCluster is `snapstore cluster SUBCOMMAND`.
func cmdCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "cluster", clusterHelp, []subcommand{
		{"nodes", "", "the members, as the server asked sees them", clusterNodes},
		{"backlog", "", "what waits on the server to be sent to each node", clusterBacklog},
		{"partitions", "", "which node owns each partition of partitioned runs", clusterPartitions},
		{"drain", "NODE [--wait]", "NODE takes no new run and owns nothing; --wait until it runs none", clusterDrain},
		{"resume", "NODE", "a draining NODE takes runs again", clusterResume},
		{"forget", "NODE [--yes]", "remove a failed or left NODE for good (asks first)", clusterForget},
		{"keys", "[install|use|remove --key-file FILE]", "the gossip keys of every member, by fingerprint; a change of them", clusterKeys},
		{"keygen", "", "print a new gossip key (base64)", clusterKeygen},
	}, args, stdout, stderr)
}

func clusterKeygen(_ context.Context, args []string, stdout, _ io.Writer) error {
	c := newCmdLine("cluster keygen", "", "Print a new random gossip key (32 bytes, base64) for the file that cluster.gossip_key_file names.", flagsNone, stdout)
	if _, err := c.parseN(args, 0, 0); err != nil {
		return err
	}
	fmt.Fprintln(stdout, cluster.GenerateKey())
	return nil
}

const clusterNodesHelp = `The members of the cluster as the server asked sees them, itself included:
id, state, API and gossip addresses, zone, weight, runs in progress, when
last heard (or, for a node not heard since, when it last wrote its entry of
the node list); then the config-file definitions that the server and
another node do not share. Membership lives in a serving process, so this
asks a server (--server, or the configured listen address), never a data
directory.`

// clusterNodes prints the members and the config mismatches, or the
// server's JSON.
func clusterNodes(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("cluster nodes", "", clusterNodesHelp, flagsClient, stdout)
	type answer struct {
		Nodes []server.ClusterNode `json:"nodes"`
	}
	return serverCommand(ctx, c, args, stderr, "/v1/cluster/nodes", func(_ []string, body answer) error {
		tb := newTable(stdout, "ID", "STATE", "API", "GOSSIP", "ZONE", "WEIGHT", "RUNS", "LAST HEARD")
		var mismatches []string
		for _, n := range body.Nodes {
			id, state, heard := n.ID, n.State, timeText(n.LastHeard)
			if n.Self {
				id += " (this)"
			}
			if n.FailingSince != nil && n.State != "failed" {
				state += " (failing since " + timeText(n.FailingSince) + ")"
			}
			if n.LastHeard == nil && n.Recorded != nil {
				heard = timeText(&n.Recorded.LastHeard) + " (recorded)"
			}
			tb.row(id, state, n.Tags["api"], n.Address, n.Tags["zone"], n.Tags["w"], fmt.Sprint(n.RunsInProgress), heard)
			for _, m := range n.ConfigMismatches {
				line := fmt.Sprintf("config mismatch: %s %q %s (defined by %s)", m.Kind, m.Name, m.Problem, strings.Join(m.Nodes, ", "))
				if !slices.Contains(mismatches, line) {
					mismatches = append(mismatches, line)
				}
			}
		}
		if err := tb.flush(); err != nil {
			return err
		}
		for _, l := range mismatches {
			fmt.Fprintln(stdout, l)
		}
		return nil
	})
}

// serverCommand is readCommand for a command that asks a server only
// (cluster nodes, cluster backlog): --server, else the configured listen
// address; --data is a usage error.
func serverCommand[T any](ctx context.Context, c *cmdLine, args []string, stderr io.Writer, path string, table func([]string, T) error) error {
	return readCommand(ctx, c, args, stderr, 0, path0(path), table, func(c *cmdLine) error { return serverOnly(ctx, c) })
}

// serverOnly points c at a server: --server, else the configured listen
// address (over https when only HTTPS answers there, as openTarget
// finds it); --data is a usage error.
func serverOnly(ctx context.Context, c *cmdLine) error {
	if c.cf.dataSet {
		return usageError("%s asks a server: give --server URL, not --data", c.name)
	}
	if c.cf.server == "" {
		cfg, err := loadConfig(c.cf, os.Environ())
		if err != nil {
			return err
		}
		u := localURL(cfg)
		if u.Scheme == "http" {
			tc, _, err := clientTLS(c.cf, cfg)
			if err != nil {
				return err
			}
			if at := serverAt(ctx, u, tc); at != nil {
				u = at
			}
		}
		c.cf.server = u.String()
	}
	return nil
}

// onServer parses c's command line for n positional arguments, points it
// at a server (serverOnly) and runs f there.
func onServer(ctx context.Context, c *cmdLine, args []string, stderr io.Writer, n int, f func(t *target, pos []string) error) error {
	pos, err := c.parseN(args, n, n)
	if err != nil {
		return err
	}
	if err := serverOnly(ctx, c); err != nil {
		return err
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error { return f(t, pos) })
}

const clusterBacklogHelp = `What waits on the server asked to be sent to other nodes (the transfer of
partitioned runs): a line per destination node with its rows, bytes, the
part spilled to disk, batches, open connections and since when it is
unreachable, then a line per dataset under it.`

// clusterBacklog prints the server's transfer backlog, or its JSON.
func clusterBacklog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("cluster backlog", "", clusterBacklogHelp, flagsClient, stdout)
	return serverCommand(ctx, c, args, stderr, "/v1/cluster/backlog", func(_ []string, body server.TransferBacklog) error {
		if !body.Enabled {
			_, err := fmt.Fprintln(stdout, "this node has no transfer listener (cluster.transfer.listen): it sends no rows to other nodes")
			return err
		}
		if len(body.Nodes) == 0 {
			_, err := fmt.Fprintln(stdout, "nothing waits: this node has sent no rows to other nodes")
			return err
		}
		tb := newTable(stdout, "NODE", "DATASET", "ROWS", "BYTES", "ON DISK", "BATCHES", "CONNS", "STATE")
		for _, n := range body.Nodes {
			state := "reachable"
			if n.DownSince != nil {
				state = "unreachable since " + timeText(n.DownSince)
				if n.LastError != "" {
					state += ": " + n.LastError
				}
			}
			tb.row(n.Node, "", count(n.Rows), bytesText(n.Bytes), bytesText(n.SpilledBytes), count(n.Batches), fmt.Sprint(n.Connections), state)
			for _, d := range n.Datasets {
				tb.row("", d.Dataset, count(d.Rows), bytesText(d.Bytes), "", count(d.Batches), "", "")
			}
		}
		return tb.flush()
	})
}

const clusterPartitionsHelp = `The partition table of partitioned runs as the server asked read it last:
its epoch, when and by which node (the keeper) it last changed, then a
line per node with its count of partitions and their numbers.`

// clusterPartitions prints the server's partition table, or its JSON.
func clusterPartitions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("cluster partitions", "", clusterPartitionsHelp, flagsClient, stdout)
	return serverCommand(ctx, c, args, stderr, "/v1/cluster/partitions", func(_ []string, body server.ClusterPartitions) error {
		if !body.Enabled {
			_, err := fmt.Fprintln(stdout, "this node has no transfer listener (cluster.transfer.listen): it keeps no partition table")
			return err
		}
		head := fmt.Sprintf("%d partitions, epoch %d", body.Count, body.Epoch)
		if body.ChangedAt != nil {
			head += ", changed " + timeText(body.ChangedAt) + " by " + body.ChangedBy
		}
		if _, err := fmt.Fprintln(stdout, head); err != nil {
			return err
		}
		owned := map[string][]string{}
		for _, p := range body.Partitions {
			owned[p.Node] = append(owned[p.Node], fmt.Sprint(p.Partition))
		}
		tb := newTable(stdout, "NODE", "PARTITIONS", "WHICH")
		for _, n := range body.Nodes {
			name := n.Node
			if name == "" {
				name = "(no owner yet)"
			}
			tb.row(name, fmt.Sprint(n.Partitions), strings.Join(owned[n.Node], " "))
		}
		return tb.flush()
	})
}

const clusterDrainHelp = `Drain NODE (any member answers; the request goes on to NODE): it declares
itself draining, takes no new run, owns no scheduled run (its adapters move
to the others at once) and finishes the runs it has. --wait returns once it
runs none: then it may be stopped (SIGTERM), and records itself left.
snapstore cluster resume NODE takes it back.`

// clusterDrain drains a node and, with --wait, polls the members until
// it runs nothing.
func clusterDrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("cluster drain", "NODE [--wait] [--timeout D]", clusterDrainHelp, flagsClient, stdout)
	wait := c.fs.Bool("wait", false, "wait until the node runs no run (then it may be stopped)")
	timeout := c.fs.Duration("timeout", 30*time.Minute, "with --wait, give up after this `duration`")
	return onServer(ctx, c, args, stderr, 1, func(t *target, pos []string) error {
		var n server.ClusterNode
		raw, err := t.api.send(ctx, http.MethodPost, pathOf("/v1/cluster/nodes/", pos[0], "/drain"), nil, nil, &n)
		if err != nil {
			return err
		}
		if c.cf.json() && !*wait {
			return printJSON(stdout, raw)
		}
		if !c.cf.json() {
			fmt.Fprintf(stdout, "node %s draining: it takes no new run and owns no scheduled run\n", n.ID)
		}
		if !*wait {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		for {
			var body struct {
				Nodes []server.ClusterNode `json:"nodes"`
			}
			if _, err := t.api.get(ctx, "/v1/cluster/nodes", nil, &body); err != nil {
				return err
			}
			i := slices.IndexFunc(body.Nodes, func(x server.ClusterNode) bool { return x.ID == n.ID })
			if i < 0 {
				return fmt.Errorf("node %s is no longer a member", n.ID)
			}
			if x := body.Nodes[i]; x.State == "draining" && x.RunsInProgress == 0 {
				if c.cf.json() {
					return encodeJSON(stdout, x)
				}
				_, err := fmt.Fprintf(stdout, "node %s drained: no run in progress; it may be stopped\n", n.ID)
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("node %s still runs %d runs after %s: %w", n.ID, body.Nodes[i].RunsInProgress, *timeout, ctx.Err())
			case <-time.After(time.Second):
			}
		}
	})
}

// clusterResume makes a draining node active again.
func clusterResume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("cluster resume", "NODE", "A draining NODE becomes active again: it takes runs and owns its share of the adapters.", flagsClient, stdout)
	return onServer(ctx, c, args, stderr, 1, func(t *target, pos []string) error {
		var n server.ClusterNode
		raw, err := t.api.send(ctx, http.MethodDelete, pathOf("/v1/cluster/nodes/", pos[0], "/drain"), nil, nil, &n)
		if err != nil || c.cf.json() {
			return orJSON(stdout, raw, err)
		}
		_, err = fmt.Fprintf(stdout, "node %s resumed: it takes runs again\n", n.ID)
		return err
	})
}

const clusterForgetHelp = `Forget NODE, which will not come back: serf stops trying to reach it,
its entry leaves the node list, the runs it was running are marked aborted,
and its share of the work (the single node of single-node adapters
included) moves to the others. Refused while the node is alive or its
failure is not confirmed yet: drain it and stop it first. It asks first on
a terminal; --yes answers for scripts.`

// clusterForget forgets a node that will not come back.
func clusterForget(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("cluster forget", "NODE [--yes]", clusterForgetHelp, flagsClient, stdout)
	yes := c.fs.Bool("yes", false, "forget without asking")
	return onServer(ctx, c, args, stderr, 1, func(t *target, pos []string) error {
		ok, err := confirm(stderr, fmt.Sprintf("Forget node %s in the cluster of %s? Its running runs are marked aborted.", pos[0], t.where), *yes)
		if err != nil || !ok {
			return err
		}
		if _, err := t.api.call(ctx, http.MethodDelete, pathOf("/v1/cluster/nodes/", pos[0]), nil, nil); err != nil {
			return err
		}
		if c.cf.json() {
			return nil
		}
		_, err = fmt.Fprintf(stdout, "node %s forgotten: its share moved to the other nodes\n", pos[0])
		return err
	})
}

const clusterKeysHelp = `The gossip keys of every member, by fingerprint (a key is never shown),
or a change of every member's keyring: install a key, use an installed key
as the primary one, remove a key that is not primary. A rotation is
install, use, remove, each from any node. The key is read from --key-file
(- reads stdin), never from the command line, which other users can see.`

// clusterKeys lists the gossip keys, or installs, uses or removes one.
func clusterKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("cluster keys", "[install|use|remove --key-file FILE]", clusterKeysHelp, flagsClient, stdout)
	keyFile := c.fs.String("key-file", "", "`file` whose first line is the base64 key (- reads stdin)")
	pos, err := c.parseN(args, 0, 1)
	if err != nil {
		return err
	}
	op := "list"
	if len(pos) == 1 {
		op = pos[0]
	}
	var body any
	switch op {
	case "list":
		if *keyFile != "" {
			return usageError("--key-file goes with install, use or remove")
		}
	case "install", "use", "remove":
		if *keyFile == "" {
			return usageError("snapstore cluster keys %s needs --key-file FILE (- reads stdin)", op)
		}
		var b []byte
		if *keyFile == "-" {
			b, err = io.ReadAll(io.LimitReader(stdin, 4096))
		} else {
			b, err = os.ReadFile(*keyFile)
		}
		if err != nil {
			return fmt.Errorf("reading the key: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		body = map[string]string{"key": strings.TrimSpace(line)}
	default:
		return usageError("usage: snapstore cluster keys [install|use|remove --key-file FILE] (snapstore cluster keys --help)")
	}
	if err := serverOnly(ctx, c); err != nil {
		return err
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		var rep server.KeyringReport
		var raw []byte
		var err error
		if op == "list" {
			raw, err = t.api.get(ctx, "/v1/cluster/keys", nil, &rep)
		} else {
			raw, err = t.api.send(ctx, http.MethodPost, "/v1/cluster/keys/"+op, nil, body, &rep)
		}
		if err != nil || c.cf.json() {
			return orJSON(stdout, raw, err)
		}
		fmt.Fprintf(stdout, "%d nodes, %d answered, %d failed\n", rep.Nodes, rep.Responses, rep.Errors)
		tb := newTable(stdout, "KEY (fingerprint)", "NODES", "PRIMARY ON")
		for _, fp := range slices.Sorted(maps.Keys(rep.Keys)) {
			tb.row(fp, fmt.Sprint(rep.Keys[fp]), fmt.Sprint(rep.Primary[fp]))
		}
		if err := tb.flush(); err != nil {
			return err
		}
		for _, id := range slices.Sorted(maps.Keys(rep.Messages)) {
			fmt.Fprintf(stdout, "node %s: %s\n", id, rep.Messages[id])
		}
		return nil
	})
}
