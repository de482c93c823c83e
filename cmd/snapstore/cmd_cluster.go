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
//	snapstore cluster nodes [--json]   the members, as the server sees them
//	snapstore cluster keygen           print a new gossip key (base64)
//
// nodes asks a running server (--server, else the configured listen
// address): membership lives in the serving process, so there is no
// data-directory fallback.
func cmdCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const use = "usage: snapstore cluster nodes [--json] | snapstore cluster keygen"
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
	case "nodes":
		fs, cf := newFlagSet("cluster nodes", stderr, true)
		asJSON := fs.Bool("json", false, "print the JSON of GET /v1/cluster/nodes instead of a table")
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

// dash stands in for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
