package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/server"
)

const clusterHelp = `The cluster: its members as a server sees them, what waits on it to be sent
to each node, and a new gossip key for cluster.gossip_key_file
(docs/cluster.md). nodes and backlog ask a server (--server, or the
configured listen address): membership and queues live in a serving
process, never in a data directory.`

// cmdCluster is `snapstore cluster nodes|backlog|keygen`.
func cmdCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "cluster", clusterHelp, []subcommand{
		{"nodes", "", "the members, as the server asked sees them", clusterNodes},
		{"backlog", "", "what waits on the server to be sent to each node", clusterBacklog},
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
id, state, API and gossip addresses, zone, weight, when last heard.
Membership lives in a serving process, so this asks a server (--server, or
the configured listen address), never a data directory.`

// clusterNodes prints the members: a table (id, state, API and gossip
// addresses, zone, weight, last heard) or the server's JSON.
func clusterNodes(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("cluster nodes", "", clusterNodesHelp, flagsClient, stdout)
	type answer struct {
		Nodes []server.ClusterNode `json:"nodes"`
	}
	return serverCommand(ctx, c, args, stderr, "/v1/cluster/nodes", func(_ []string, body answer) error {
		tb := newTable(stdout, "ID", "STATE", "API", "GOSSIP", "ZONE", "WEIGHT", "LAST HEARD")
		for _, n := range body.Nodes {
			id, state := n.ID, n.State
			if n.Self {
				id += " (this)"
			}
			if n.FailingSince != nil && n.State != "failed" {
				state += " (failing since " + n.FailingSince.Local().Format(time.TimeOnly) + ")"
			}
			tb.row(id, state, n.Tags["api"], n.Address, n.Tags["zone"], n.Tags["w"], timeText(n.LastHeard))
		}
		return tb.flush()
	})
}

// serverCommand is readCommand for a command that asks a server only
// (cluster nodes, cluster backlog): --server, else the configured listen
// address; --data is a usage error.
func serverCommand[T any](ctx context.Context, c *cmdLine, args []string, stderr io.Writer, path string, table func([]string, T) error) error {
	return readCommand(ctx, c, args, stderr, 0, path0(path), table, serverOnly)
}

// serverOnly points c at a server: --server, else the configured listen
// address; --data is a usage error.
func serverOnly(c *cmdLine) error {
	if c.cf.dataSet {
		return usageError("%s asks a server: give --server URL, not --data", c.name)
	}
	if c.cf.server == "" {
		cfg, err := loadConfig(c.cf, os.Environ())
		if err != nil {
			return err
		}
		c.cf.server = "http://" + cfg.Listen
	}
	return nil
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
