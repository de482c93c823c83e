package server

import (
	"net/http"
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
