package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/server"
)

// cmdCluster is `snapstore cluster SUBCOMMAND`:
//
//	snapstore cluster nodes [--json]     the members, as the server sees them
//	snapstore cluster backlog [--json]   what waits on the server to be sent to each node
//	snapstore cluster keygen             print a new gossip key (base64)
//
// nodes and backlog ask a running server (--server, else the configured
// listen address): membership and queues live in the serving process, so
// there is no data-directory fallback.
func cmdCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const use = "usage: snapstore cluster nodes [--json] | snapstore cluster backlog [--json] | snapstore cluster keygen"
	if len(args) == 0 {
		return usageError(use)
	}
	switch args[0] {
	case "keygen":
		if len(args) > 1 {
			return usageError("usage: snapstore cluster keygen (no arguments)")
		}
		fmt.Fprintln(stdout, cluster.GenerateKey())
		return nil
	case "nodes", "backlog":
		route := "/v1/cluster/" + args[0]
		fs, cf := newFlagSet("cluster "+args[0], stderr, true)
		asJSON := fs.Bool("json", false, "print the JSON of GET "+route+" instead of a table")
		pos, err := parseArgs(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			return usageError(use)
		}
		srv, err := clusterServer(cf)
		if err != nil {
			return err
		}
		if args[0] == "backlog" {
			return clusterBacklog(ctx, srv, stdout, *asJSON)
		}
		return clusterNodes(ctx, srv, stdout, *asJSON)
	}
	return usageError("unknown cluster subcommand %q; %s", args[0], use)
}

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
	return &serverClient{base: u, token: cf.token, hc: &http.Client{Timeout: 30 * time.Second}}, nil
}

// clusterNodes prints the members: a table (id, state, API and gossip
// addresses, zone, weight, last heard) or the server's JSON.
func clusterNodes(ctx context.Context, srv *serverClient, stdout io.Writer, asJSON bool) error {
	var body struct {
		Nodes []server.ClusterNode `json:"nodes"`
	}
	if err := srv.decode(ctx, http.MethodGet, "/v1/cluster/nodes", nil, "member list", &body); err != nil {
		return fmt.Errorf("asking %s: %w", srv.base, err)
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(body)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tAPI\tGOSSIP\tZONE\tWEIGHT\tLAST HEARD\t")
	for _, n := range body.Nodes {
		id, state, heard := n.ID, n.State, "-"
		if n.Self {
			id += " (this)"
		}
		if n.FailingSince != nil && n.State != "failed" {
			state += " (failing since " + n.FailingSince.Local().Format(time.TimeOnly) + ")"
		}
		if n.LastHeard != nil {
			heard = n.LastHeard.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", id, state, dash(n.Tags["api"]), n.Address, dash(n.Tags["zone"]), dash(n.Tags["w"]), heard)
	}
	return tw.Flush()
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
