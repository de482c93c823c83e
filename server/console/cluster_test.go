package console

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/server"
)

// staticCluster is a fixed member list standing in for the cluster, for
// the cluster page; changes are refused.
type staticCluster struct {
	nodes []server.ClusterNode
}

func (c *staticCluster) Nodes() []server.ClusterNode { return c.nodes }

func (c *staticCluster) VerifyRequest(r *http.Request, body []byte) (string, error) {
	return "", server.ErrClusterCredential
}

func (c *staticCluster) Drain(ctx context.Context, id string) error  { return server.ErrNodeNotFound }
func (c *staticCluster) Resume(ctx context.Context, id string) error { return server.ErrNodeNotFound }
func (c *staticCluster) Forget(ctx context.Context, id string) error { return server.ErrNodeNotFound }

// Owns gives every name to the node marked Self.
func (c *staticCluster) Owns(name string) bool {
	for _, n := range c.nodes {
		if n.Self {
			return n.State == "active"
		}
	}
	return false
}

func (c *staticCluster) Keys(ctx context.Context) (server.KeyringReport, error) {
	return server.KeyringReport{}, server.ErrGossipNotEncrypted
}

func (c *staticCluster) KeyOp(ctx context.Context, op, key string) (server.KeyringReport, error) {
	return server.KeyringReport{}, server.ErrGossipNotEncrypted
}

// staticBacklog is a fixed backlog standing in for the transfer layer.
type staticBacklog server.TransferBacklog

func (b staticBacklog) Backlog() server.TransferBacklog { return server.TransferBacklog(b) }

// TestConsole_ClusterPage renders the cluster page: every member with its
// state, a backlog bar for a node that waits, its rows and the part on
// disk, the node it cannot reach, the backlog by dataset, a node with a
// backlog that is no member any more; the navigation links it only on a
// cluster member, and a node alone answers not_clustered.
func TestConsole_ClusterPage(t *testing.T) {
	alone := newBrowser(t, newFixture(t, fixtureOpts{}))
	if home := alone.page("/ui/", "Datasets"); strings.Contains(home, `href="/ui/cluster"`) {
		t.Error("a node alone links the cluster page")
	}
	if r := alone.get("/ui/cluster"); r.status != http.StatusNotFound || !strings.Contains(string(r.body), "not_clustered") {
		t.Errorf("cluster page alone: %d", r.status)
	}
	if form := alone.page("/ui/adapters/new", `name="schedule"`); strings.Contains(form, `id="cluster-fields"`) {
		t.Error("a node alone offers the cluster's fields in the adapter form")
	}

	down := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f := newFixture(t, fixtureOpts{
		cluster: &staticCluster{nodes: []server.ClusterNode{
			{ID: "node-a", Address: "127.0.0.1:7946", State: "active", Self: true, Tags: map[string]string{"api": "127.0.0.1:8080", "w": "100"}},
			{ID: "node-b", Address: "127.0.0.2:7946", State: "failed", Tags: map[string]string{"api": "127.0.0.2:8080", "w": "100", "zone": "rack-b"}},
			{ID: "node-c", Address: "127.0.0.3:7946", State: "active", Tags: map[string]string{"w": "200"}},
		}},
		transfer: staticBacklog{MemoryBytes: 1 << 20, Nodes: []server.NodeBacklog{
			{Node: "node-b", Rows: 1234567, Bytes: 80 << 20, Batches: 300, SpilledBytes: 60 << 20, DownSince: &down, LastError: "dial tcp 127.0.0.2:7950: connection refused",
				Datasets: []server.DatasetBacklog{{Dataset: "orders", Rows: 1234567, Bytes: 80 << 20, Batches: 300}}},
			{Node: "node-c", Rows: 10, Bytes: 8 << 20, Batches: 1, Connections: 4, Datasets: []server.DatasetBacklog{{Dataset: "orders", Rows: 10, Bytes: 8 << 20, Batches: 1}}},
			{Node: "node-x", Rows: 5, Bytes: 1000, Batches: 1, Datasets: []server.DatasetBacklog{{Dataset: "items", Rows: 5, Bytes: 1000, Batches: 1}}},
		}},
	})
	b := newBrowser(t, f)
	b.page("/ui/", `href="/ui/cluster"`)
	b.page("/ui/adapters/new", `id="cluster-fields"`, `<select name="strategy"`, `name="partition_key"`, `name="transfer_compression"`,
		`<option value="local" selected>`, `<option value="round-robin">`, `<option value="single-node">`, `<option value="partition-by-key">`)
	page := b.page("/ui/cluster", `data-node="node-a"`, "(this node)", `state-failed`, "rack-b",
		"1,234,567 rows", "80.0 MiB", "60.0 MiB on disk", "unreachable since 2026-12-02 10:00:00Z", "connection refused",
		`style="width: 100%"`, `style="width: 75%"`, `style="width: 10%"`,
		`data-node="node-x"`, "not a member", `data-dataset="items"`, `hx-trigger="every 5s"`)
	if strings.Index(page, `data-node="node-x"`) < strings.Index(page, `data-node="node-c"`) {
		t.Error("a node that is no member is listed before the members")
	}
}
