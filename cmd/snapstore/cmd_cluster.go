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

const clusterHelp = `The cluster: its members as a server sees them, and a new gossip key for
cluster.gossip_key_file (docs/cluster.md).`

// cmdCluster is `snapstore cluster nodes|keygen`.
func cmdCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "cluster", clusterHelp, []subcommand{
		{"nodes", "", "the members, as the server asked sees them", clusterNodes},
		{"keygen", "", "print a new gossip key (base64)", clusterKeygen},
	}, args, stdout, stderr)
}

func clusterKeygen(_ context.Context, args []string, stdout, _ io.Writer) error {
	c := newCmdLine("cluster keygen", "", "Print a new random gossip key (32 bytes, base64) for the file that cluster.gossip_key_file names.", flagsNone, stdout)
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if err := c.wantArgs(pos, 0, 0); err != nil {
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
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if err := c.wantArgs(pos, 0, 0); err != nil {
		return err
	}
	if c.cf.dataSet {
		return usageError("cluster nodes asks a server: give --server URL, not --data")
	}
	if c.cf.server == "" {
		cfg, err := loadConfig(c.cf, os.Environ())
		if err != nil {
			return err
		}
		c.cf.server = "http://" + cfg.Listen
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		var body struct {
			Nodes []server.ClusterNode `json:"nodes"`
		}
		raw, err := t.api.get(ctx, "/v1/cluster/nodes", nil, &body)
		if err != nil || c.cf.json() {
			return orJSON(stdout, raw, err)
		}
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
