package server

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// staticCluster is a fixed member list. The real one is package cluster's
// Membership, which server cannot import (one layer); cmd/snapstore's
// tests and tests/e2e run GET /v1/cluster/nodes over it.
type staticCluster []ClusterNode

func (c staticCluster) Nodes() []ClusterNode { return c }

// TestClusterNodes checks GET /v1/cluster/nodes: the members as the
// Cluster gives them, in the documented shape (the fixture validates every
// answer against openapi.yaml), and 404 not_clustered on a node alone.
func TestClusterNodes(t *testing.T) {
	alone := newFixture(t, fixtureOpts{})
	alone.wantProblem(http.StatusNotFound, "not_clustered", "", "GET", "/v1/cluster/nodes", "")

	heard := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	failing := heard.Add(-5 * time.Second)
	f := newFixture(t, fixtureOpts{cluster: staticCluster{
		{ID: "a", Address: "127.0.0.1:7946", State: "active", Since: heard, LastHeard: &heard, Self: true, Tags: map[string]string{"api": "127.0.0.1:8080", "w": "100"}},
		{ID: "b", Address: "127.0.0.2:7946", State: "active", Since: heard, LastHeard: &failing, FailingSince: &failing, Tags: map[string]string{"w": "100"}},
	}})
	var got struct {
		Nodes []ClusterNode `json:"nodes"`
	}
	f.must(http.StatusOK, "GET", "/v1/cluster/nodes", "").json(t, &got)
	if len(got.Nodes) != 2 || got.Nodes[0].ID != "a" || !got.Nodes[0].Self || got.Nodes[0].Tags["api"] != "127.0.0.1:8080" ||
		got.Nodes[1].FailingSince == nil || !got.Nodes[1].FailingSince.Equal(failing) || got.Nodes[0].FailingSince != nil {
		t.Errorf("nodes %+v", got.Nodes)
	}
}

// staticBacklog is a fixed backlog; the real one is cluster/transfer's
// Transport, whose tests check its figures, and tests/e2e reads it here.
type staticBacklog TransferBacklog

func (b staticBacklog) Backlog() TransferBacklog { return TransferBacklog(b) }

// TestClusterBacklog checks GET /v1/cluster/backlog: 404 not_clustered on
// a node alone, enabled false on a member without a transfer listener,
// and the backlog in the documented shape.
func TestClusterBacklog(t *testing.T) {
	alone := newFixture(t, fixtureOpts{})
	alone.wantProblem(http.StatusNotFound, "not_clustered", "", "GET", "/v1/cluster/backlog", "")

	members := staticCluster{{ID: "a", Address: "127.0.0.1:7946", State: "active", Self: true, Tags: map[string]string{}}}
	var got TransferBacklog
	newFixture(t, fixtureOpts{cluster: members}).must(http.StatusOK, "GET", "/v1/cluster/backlog", "").json(t, &got)
	if got.Enabled || len(got.Nodes) != 0 || got.Nodes == nil {
		t.Errorf("without a transfer listener: %+v", got)
	}

	down := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f := newFixture(t, fixtureOpts{cluster: members, transfer: staticBacklog{MemoryBytes: 4096, Nodes: []NodeBacklog{
		{Node: "b", Rows: 1000, Bytes: 64000, Batches: 2, SpilledBytes: 32000, DownSince: &down, LastError: "connection refused",
			Datasets: []DatasetBacklog{{Dataset: "orders", Rows: 1000, Bytes: 64000, Batches: 2}}},
		{Node: "c", Connections: 4},
	}}})
	got = TransferBacklog{}
	f.must(http.StatusOK, "GET", "/v1/cluster/backlog", "").json(t, &got)
	if !got.Enabled || got.MemoryBytes != 4096 || len(got.Nodes) != 2 || got.Nodes[0].Rows != 1000 || !got.Nodes[0].DownSince.Equal(down) ||
		got.Nodes[0].Datasets[0].Dataset != "orders" || got.Nodes[1].Datasets == nil || got.Nodes[1].Connections != 4 {
		t.Errorf("backlog %+v", got)
	}
}

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

	down := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f := newFixture(t, fixtureOpts{
		cluster: staticCluster{
			{ID: "node-a", Address: "127.0.0.1:7946", State: "active", Self: true, Tags: map[string]string{"api": "127.0.0.1:8080", "w": "100"}},
			{ID: "node-b", Address: "127.0.0.2:7946", State: "failed", Tags: map[string]string{"api": "127.0.0.2:8080", "w": "100", "zone": "rack-b"}},
			{ID: "node-c", Address: "127.0.0.3:7946", State: "active", Tags: map[string]string{"w": "200"}},
		},
		transfer: staticBacklog{MemoryBytes: 1 << 20, Nodes: []NodeBacklog{
			{Node: "node-b", Rows: 1234567, Bytes: 80 << 20, Batches: 300, SpilledBytes: 60 << 20, DownSince: &down, LastError: "dial tcp 127.0.0.2:7950: connection refused",
				Datasets: []DatasetBacklog{{Dataset: "orders", Rows: 1234567, Bytes: 80 << 20, Batches: 300}}},
			{Node: "node-c", Rows: 10, Bytes: 8 << 20, Batches: 1, Connections: 4, Datasets: []DatasetBacklog{{Dataset: "orders", Rows: 10, Bytes: 8 << 20, Batches: 1}}},
			{Node: "node-x", Rows: 5, Bytes: 1000, Batches: 1, Datasets: []DatasetBacklog{{Dataset: "items", Rows: 5, Bytes: 1000, Batches: 1}}},
		}},
	})
	b := newBrowser(t, f)
	b.page("/ui/", `href="/ui/cluster"`)
	page := b.page("/ui/cluster", `data-node="node-a"`, "(this node)", `state-failed`, "rack-b",
		"1,234,567 rows", "80.0 MiB", "60.0 MiB on disk", "unreachable since 2026-12-02 10:00:00Z", "connection refused",
		`style="width: 100%"`, `style="width: 75%"`, `style="width: 10%"`,
		`data-node="node-x"`, "not a member", `data-dataset="items"`, `hx-trigger="every 5s"`)
	if strings.Index(page, `data-node="node-x"`) < strings.Index(page, `data-node="node-c"`) {
		t.Error("a node that is no member is listed before the members")
	}
}
