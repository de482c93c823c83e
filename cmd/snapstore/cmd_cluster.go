package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/server"
)

// clusterUsage lists the cluster subcommands.
const clusterUsage = `usage:
  snapstore cluster nodes [--json]                  the members, as the server sees them
  snapstore cluster backlog [--json]                what waits on the server to be sent to each node
  snapstore cluster drain NODE [--wait] [--timeout D]  NODE takes no new run; --wait until it runs none
  snapstore cluster resume NODE                      a draining NODE takes runs again
  snapstore cluster forget NODE                      remove a failed or left NODE for good
  snapstore cluster keys                             the gossip keys of every member, by fingerprint
  snapstore cluster keys install|use|remove --key-file FILE   change every member's keyring (FILE - : stdin)
  snapstore cluster keygen                           print a new gossip key (base64)`

// cmdCluster is `snapstore cluster SUBCOMMAND` (clusterUsage). Every
// subcommand but keygen asks a running server (--server, else the
// configured listen address): membership and queues live in the serving
// process, so there is no data-directory fallback.
func cmdCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("%s", clusterUsage)
	}
	sub := args[0]
	if sub == "keygen" {
		if len(args) > 1 {
			return usageError("usage: snapstore cluster keygen (no arguments)")
		}
		fmt.Fprintln(stdout, cluster.GenerateKey())
		return nil
	}
	fs, cf := newFlagSet("cluster "+sub, stderr, true)
	var asJSON, wait *bool
	var timeout *time.Duration
	var keyFile *string
	want := 1 // positional arguments after the subcommand
	switch sub {
	case "nodes", "backlog":
		asJSON = fs.Bool("json", false, "print the JSON of GET /v1/cluster/"+sub+" instead of a table")
		want = 0
	case "drain":
		wait = fs.Bool("wait", false, "wait until the node runs no run (then it may be stopped)")
		timeout = fs.Duration("timeout", 30*time.Minute, "with --wait, give up after this long")
	case "resume", "forget":
	case "keys":
		keyFile = fs.String("key-file", "", "file whose first line is the base64 key (- reads stdin)")
		want = -1
	default:
		return usageError("unknown cluster subcommand %q\n%s", sub, clusterUsage)
	}
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if want >= 0 && len(pos) != want {
		return usageError("%s", clusterUsage)
	}
	srv, err := clusterServer(cf)
	if err != nil {
		return err
	}
	switch sub {
	case "nodes":
		return clusterNodes(ctx, srv, stdout, *asJSON)
	case "backlog":
		return clusterBacklog(ctx, srv, stdout, *asJSON)
	case "drain":
		return clusterDrain(ctx, srv, stdout, pos[0], *wait, *timeout)
	case "resume":
		var n server.ClusterNode
		if err := srv.send(ctx, http.MethodDelete, nodePath(pos[0])+"/drain", nil, "node", &n); err != nil {
			return fmt.Errorf("resuming %s: %w", pos[0], err)
		}
		fmt.Fprintf(stdout, "node %s resumed: it takes runs again\n", n.ID)
		return nil
	case "forget":
		if err := srv.send(ctx, http.MethodDelete, nodePath(pos[0]), nil, "", nil); err != nil {
			return fmt.Errorf("forgetting %s: %w", pos[0], err)
		}
		fmt.Fprintf(stdout, "node %s forgotten: its share moved to the other nodes\n", pos[0])
		return nil
	}
	return clusterKeys(ctx, srv, stdout, pos, *keyFile)
}

// nodePath is the API path of node id.
func nodePath(id string) string { return "/v1/cluster/nodes/" + url.PathEscape(id) }

// clusterServer is the server a cluster command asks: --server, else the
// configured listen address.
func clusterServer(cf *commonFlags) (*serverClient, error) {
	raw := cf.server
	if raw == "" {
		cfg, err := loadConfig(cf, os.Environ())
		if err != nil {
			return nil, err
		}
		raw = "http://" + cfg.Listen
	}
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError("--server: want a URL such as http://127.0.0.1:8080, got %q", raw)
	}
	return &serverClient{base: u, token: cf.token, hc: &http.Client{Timeout: 60 * time.Second}}, nil
}

// nodeList asks the server for its members.
func nodeList(ctx context.Context, srv *serverClient) ([]server.ClusterNode, error) {
	var body struct {
		Nodes []server.ClusterNode `json:"nodes"`
	}
	if err := srv.decode(ctx, http.MethodGet, "/v1/cluster/nodes", nil, "member list", &body); err != nil {
		return nil, fmt.Errorf("asking %s: %w", srv.base, err)
	}
	return body.Nodes, nil
}

// clusterNodes prints the members: a table (id, state, API and gossip
// addresses, zone, weight, runs in progress, last heard) and the config
// mismatches, or the server's JSON.
func clusterNodes(ctx context.Context, srv *serverClient, stdout io.Writer, asJSON bool) error {
	nodes, err := nodeList(ctx, srv)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"nodes": nodes})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tAPI\tGOSSIP\tZONE\tWEIGHT\tRUNS\tLAST HEARD\t")
	var mismatches []string
	for _, n := range nodes {
		id, state, heard := n.ID, n.State, "-"
		if n.Self {
			id += " (this)"
		}
		if n.FailingSince != nil && n.State != "failed" {
			state += " (failing since " + n.FailingSince.Local().Format(time.TimeOnly) + ")"
		}
		if n.LastHeard != nil {
			heard = n.LastHeard.Local().Format(time.DateTime)
		} else if n.Recorded != nil {
			heard = n.Recorded.LastHeard.Local().Format(time.DateTime) + " (recorded)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", id, state, dash(n.Tags["api"]), n.Address, dash(n.Tags["zone"]), dash(n.Tags["w"]), n.RunsInProgress, heard)
		for _, m := range n.ConfigMismatches {
			line := fmt.Sprintf("config mismatch: %s %q %s (defined by %s)", m.Kind, m.Name, m.Problem, strings.Join(m.Nodes, ", "))
			if !slices.Contains(mismatches, line) {
				mismatches = append(mismatches, line)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range mismatches {
		fmt.Fprintln(stdout, l)
	}
	return nil
}

// clusterDrain drains node id and, with wait, polls the members until it
// runs nothing.
func clusterDrain(ctx context.Context, srv *serverClient, stdout io.Writer, id string, wait bool, timeout time.Duration) error {
	var n server.ClusterNode
	if err := srv.send(ctx, http.MethodPost, nodePath(id)+"/drain", nil, "node", &n); err != nil {
		return fmt.Errorf("draining %s: %w", id, err)
	}
	fmt.Fprintf(stdout, "node %s draining: it takes no new run and owns no scheduled run\n", n.ID)
	if !wait {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		nodes, err := nodeList(ctx, srv)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(nodes, func(x server.ClusterNode) bool { return x.ID == n.ID })
		if i < 0 {
			return fmt.Errorf("node %s is no longer a member", n.ID)
		}
		if nodes[i].State == "draining" && nodes[i].RunsInProgress == 0 {
			fmt.Fprintf(stdout, "node %s drained: no run in progress; it may be stopped\n", n.ID)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s still runs %d runs after %s: %w", n.ID, nodes[i].RunsInProgress, timeout, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// clusterKeys lists the gossip keys, or installs, uses or removes one read
// from keyFile (never from the command line, which other users can see).
func clusterKeys(ctx context.Context, srv *serverClient, stdout io.Writer, pos []string, keyFile string) error {
	var rep server.KeyringReport
	switch {
	case len(pos) == 0 || (len(pos) == 1 && pos[0] == "list"):
		if keyFile != "" {
			return usageError("--key-file goes with install, use or remove")
		}
		if err := srv.decode(ctx, http.MethodGet, "/v1/cluster/keys", nil, "keyring", &rep); err != nil {
			return fmt.Errorf("listing the gossip keys: %w", err)
		}
	case len(pos) == 1 && (pos[0] == "install" || pos[0] == "use" || pos[0] == "remove"):
		if keyFile == "" {
			return usageError("snapstore cluster keys %s needs --key-file FILE (- reads stdin)", pos[0])
		}
		var b []byte
		var err error
		if keyFile == "-" {
			b, err = io.ReadAll(io.LimitReader(os.Stdin, 4096))
		} else {
			b, err = os.ReadFile(keyFile)
		}
		if err != nil {
			return fmt.Errorf("reading the key: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if err := srv.send(ctx, http.MethodPost, "/v1/cluster/keys/"+pos[0], map[string]string{"key": strings.TrimSpace(line)}, "keyring", &rep); err != nil {
			return fmt.Errorf("keys %s: %w", pos[0], err)
		}
	default:
		return usageError("%s", clusterUsage)
	}
	fmt.Fprintf(stdout, "%d nodes, %d answered, %d failed\n", rep.Nodes, rep.Responses, rep.Errors)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY (fingerprint)\tNODES\tPRIMARY ON\t")
	for _, fp := range slices.Sorted(maps.Keys(rep.Keys)) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", fp, rep.Keys[fp], rep.Primary[fp])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(rep.Messages)) {
		fmt.Fprintf(stdout, "node %s: %s\n", id, rep.Messages[id])
	}
	return nil
}

// clusterBacklog prints what waits on the server to be sent to other
// nodes: a line per destination node (rows, bytes, the part on disk,
// batches, open connections, and since when it is unreachable), then one
// per dataset under it; or the server's JSON.
func clusterBacklog(ctx context.Context, srv *serverClient, stdout io.Writer, asJSON bool) error {
	var body server.TransferBacklog
	if err := srv.decode(ctx, http.MethodGet, "/v1/cluster/backlog", nil, "backlog", &body); err != nil {
		return fmt.Errorf("asking %s: %w", srv.base, err)
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(body)
	}
	if !body.Enabled {
		fmt.Fprintln(stdout, "this node has no transfer listener (cluster.transfer.listen): it sends no rows to other nodes")
		return nil
	}
	if len(body.Nodes) == 0 {
		fmt.Fprintln(stdout, "nothing waits: this node has sent no rows to other nodes")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tDATASET\tROWS\tBYTES\tON DISK\tBATCHES\tCONNS\t  STATE")
	for _, n := range body.Nodes {
		state := "reachable"
		if n.DownSince != nil {
			state = "unreachable since " + n.DownSince.Local().Format(time.DateTime)
			if n.LastError != "" {
				state += ": " + n.LastError
			}
		}
		fmt.Fprintf(tw, "%s\t\t%d\t%d\t%d\t%d\t%d\t  %s\n", n.Node, n.Rows, n.Bytes, n.SpilledBytes, n.Batches, n.Connections, state)
		for _, d := range n.Datasets {
			fmt.Fprintf(tw, "\t%s\t%d\t%d\t\t%d\t\t\n", d.Dataset, d.Rows, d.Bytes, d.Batches)
		}
	}
	return tw.Flush()
}

// dash stands in for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
