package server

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// staticCluster is a fixed member list standing in for the cluster: the
// real one is package cluster's Membership and Placement, which server
// cannot import (one layer); cmd/snapstore's tests and tests/e2e run the
// cluster routes over them. It records the drains, resumes and forgets
// asked of it, takes "Snapstore-Node n1 ok" as the one valid cluster
// credential, and holds one key per member.
type staticCluster struct {
	mu    sync.Mutex
	nodes []ClusterNode
	calls []string
	// keyErr, when set, is the error of every keyring operation, with
	// keyMsgs as the nodes' answers.
	keyErr  error
	keyMsgs map[string]string
	// lag, when set, keeps a drain or resume of another node out of
	// Nodes, as gossip does until the node's new state reaches this one.
	lag bool
}

func (c *staticCluster) Nodes() []ClusterNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

func (c *staticCluster) VerifyRequest(r *http.Request, body []byte) (string, error) {
	if r.Header.Get("Authorization") != "Snapstore-Node n1 ok" {
		return "", fmt.Errorf("%w: not the test credential", ErrClusterCredential)
	}
	return "n1", nil
}

func (c *staticCluster) record(call, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call+" "+id)
	for i, n := range c.nodes {
		if n.ID != id {
			continue
		}
		switch {
		case call == "forget" && n.State != "failed":
			return fmt.Errorf("%w: %s is %s", ErrNodeAlive, id, n.State)
		case call == "forget":
			c.nodes = slices.Delete(c.nodes, i, i+1)
		case c.lag && !n.Self:
		case call == "drain":
			c.nodes[i].State = "draining"
		case call == "resume":
			c.nodes[i].State = "active"
		}
		return nil
	}
	return fmt.Errorf("%w: %s", ErrNodeNotFound, id)
}

func (c *staticCluster) Drain(ctx context.Context, id string) error  { return c.record("drain", id) }
func (c *staticCluster) Resume(ctx context.Context, id string) error { return c.record("resume", id) }
func (c *staticCluster) Forget(ctx context.Context, id string) error { return c.record("forget", id) }

// Owns gives every name to the node marked Self.
func (c *staticCluster) Owns(name string) bool {
	for _, n := range c.Nodes() {
		if n.Self {
			return n.State == "active"
		}
	}
	return false
}

func (c *staticCluster) Keys(ctx context.Context) (KeyringReport, error) {
	n := len(c.Nodes())
	if c.keyErr != nil {
		return KeyringReport{Nodes: n, Responses: n, Errors: len(c.keyMsgs), Messages: c.keyMsgs}, c.keyErr
	}
	return KeyringReport{Nodes: n, Responses: n, Keys: map[string]int{"0011223344556677": n}, Primary: map[string]int{"0011223344556677": n}}, nil
}

func (c *staticCluster) KeyOp(ctx context.Context, op, key string) (KeyringReport, error) {
	c.mu.Lock()
	c.calls = append(c.calls, "key "+op)
	c.mu.Unlock()
	return c.Keys(ctx)
}

func testCluster() *staticCluster {
	heard := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	failing := heard.Add(-5 * time.Second)
	return &staticCluster{nodes: []ClusterNode{
		{ID: "a", Address: "127.0.0.1:7946", State: "active", Since: heard, LastHeard: &heard, Self: true, API: "127.0.0.1:8080", Weight: 100, Tags: map[string]string{"api": "127.0.0.1:8080", "w": "100"}},
		{ID: "b", Address: "127.0.0.2:7946", State: "active", Since: heard, LastHeard: &failing, FailingSince: &failing, Weight: 100, RunsInProgress: 2, Tags: map[string]string{"w": "100"},
			ConfigMismatches: []ConfigMismatch{{Kind: "adapter", Name: "x", Problem: "differs", Nodes: []string{"a", "b"}}}},
		{ID: "c", Address: "127.0.0.3:7946", State: "failed", Since: heard, Weight: 100, Tags: map[string]string{"w": "100"}},
	}}
}

// TestClusterNodes checks GET /v1/cluster/nodes: the members as the
// Cluster gives them, in the documented shape (the fixture validates every
// answer against openapi.yaml), and 404 not_clustered on a node alone.
func TestClusterNodes(t *testing.T) {
	alone := newFixture(t, fixtureOpts{})
	alone.wantProblem(http.StatusNotFound, "not_clustered", "", "GET", "/v1/cluster/nodes", "")
	alone.wantProblem(http.StatusNotFound, "not_clustered", "", "POST", "/v1/cluster/nodes/a/drain", "")

	f := newFixture(t, fixtureOpts{cluster: testCluster()})
	var got struct {
		Nodes []ClusterNode `json:"nodes"`
	}
	f.must(http.StatusOK, "GET", "/v1/cluster/nodes", "").json(t, &got)
	if len(got.Nodes) != 3 || got.Nodes[0].ID != "a" || !got.Nodes[0].Self || got.Nodes[0].Tags["api"] != "127.0.0.1:8080" ||
		got.Nodes[1].FailingSince == nil || got.Nodes[0].FailingSince != nil || got.Nodes[1].RunsInProgress != 2 ||
		len(got.Nodes[1].ConfigMismatches) != 1 || got.Nodes[0].ConfigMismatches == nil {
		t.Errorf("nodes %+v", got.Nodes)
	}
}

// TestClusterAdmin checks drain, resume and forget of a node and the
// keyring routes over the Cluster: each reaches it with the node of the
// path, unknown nodes are 404 node_not_found, forgetting an alive node is
// 409 node_alive, and a key that is not a gossip key is refused without
// being echoed.
func TestClusterAdmin(t *testing.T) {
	cl := testCluster()
	f := newFixture(t, fixtureOpts{cluster: cl})
	// The answer is the node as it asked to be, also while gossip has not
	// brought its new state here yet (lag).
	for _, lag := range []bool{false, true} {
		cl.lag = lag
		var n ClusterNode
		f.must(http.StatusOK, "POST", "/v1/cluster/nodes/b/drain", "").json(t, &n)
		if n.ID != "b" || n.State != "draining" {
			t.Errorf("drained (gossip lagging %v): %+v", lag, n)
		}
		f.must(http.StatusOK, "DELETE", "/v1/cluster/nodes/b/drain", "").json(t, &n)
		if n.State != "active" {
			t.Errorf("resumed (gossip lagging %v): %+v", lag, n)
		}
	}
	cl.lag = false
	f.wantProblem(http.StatusNotFound, "node_not_found", "id", "POST", "/v1/cluster/nodes/zz/drain", "")
	f.wantProblem(http.StatusConflict, "node_alive", "id", "DELETE", "/v1/cluster/nodes/b", "")
	f.must(http.StatusNoContent, "DELETE", "/v1/cluster/nodes/c", "")
	var rep KeyringReport
	f.must(http.StatusOK, "GET", "/v1/cluster/keys", "").json(t, &rep)
	if rep.Nodes != 2 || rep.Keys["0011223344556677"] != 2 {
		t.Errorf("keys %+v", rep)
	}
	key := "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ=" // 32 bytes
	f.must(http.StatusOK, "POST", "/v1/cluster/keys/install", `{"key":"`+key+`"}`)
	p := f.wantProblem(http.StatusBadRequest, "bad_request", "body.key", "POST", "/v1/cluster/keys/use", `{"key":"bm90IGEga2V5"}`)
	if strings.Contains(p.Detail, "bm90IGEga2V5") {
		t.Errorf("the refused key is echoed: %s", p.Detail)
	}
	f.wantProblem(http.StatusBadRequest, "bad_request", "op", "POST", "/v1/cluster/keys/rotate", `{"key":"`+key+`"}`)
	if want := []string{"drain b", "resume b", "drain b", "resume b", "forget b", "forget c", "key install"}; !slices.Equal(cl.calls, want) {
		t.Errorf("calls %v, want %v", cl.calls, want)
	}
}

// TestClusterHandOffAuth checks that the route nodes hand runs to takes
// the cluster credential only: none is 401, a bearer token of any role
// 403, and the credential reaches the handler.
func TestClusterHandOffAuth(t *testing.T) {
	f := newFixture(t, fixtureOpts{cluster: testCluster(), tokens: []Token{{Name: "ops", Token: "admin-tok", Role: RoleAdmin}}})
	body := `{"adapter":"nope","run_id":"r1764669600000000000-0001","trigger":"api","placed_by":"n1"}`
	f.wantProblem(http.StatusUnauthorized, "unauthorized", "", "POST", "/v1/cluster/runs", body)
	if r := f.do("POST", "/v1/cluster/runs", body, "Authorization", "Bearer admin-tok"); r.status != http.StatusForbidden {
		t.Errorf("an admin token: %d %s", r.status, r.body)
	}
	r := f.do("POST", "/v1/cluster/runs", body, "Authorization", "Snapstore-Node n1 ok")
	if r.status != http.StatusNotFound || !strings.Contains(string(r.body), "adapter_not_found") {
		t.Errorf("with the credential: %d %s", r.status, r.body)
	}
	// A node alone: no credential is still 401, one is not_clustered.
	alone := newFixture(t, fixtureOpts{})
	alone.wantProblem(http.StatusUnauthorized, "unauthorized", "", "POST", "/v1/cluster/runs", body)
	if r := alone.do("POST", "/v1/cluster/runs", body, "Authorization", "Snapstore-Node n1 ok"); r.status != http.StatusNotFound || !strings.Contains(string(r.body), "not_clustered") {
		t.Errorf("a node alone, with a credential: %d %s", r.status, r.body)
	}
}

// TestCollectGarbage_OwnedOnly checks that the periodic GC of a cluster
// node collects the datasets it owns and no other: here the node owns
// everything while active and nothing while draining.
func TestCollectGarbage_OwnedOnly(t *testing.T) {
	cl := testCluster()
	f := newFixture(t, fixtureOpts{cluster: cl})
	f.run("products")
	cl.record("drain", "a")
	if reps, err := f.srv.CollectGarbage(context.Background()); err != nil || len(reps) != 0 {
		t.Fatalf("collected while owning nothing: %+v %v", reps, err)
	}
	cl.record("resume", "a")
	if reps, err := f.srv.CollectGarbage(context.Background()); err != nil || len(reps) != 1 || reps[0].Dataset != "products" {
		t.Fatalf("collected while owning everything: %+v %v", reps, err)
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

	members := &staticCluster{nodes: []ClusterNode{{ID: "a", Address: "127.0.0.1:7946", State: "active", Self: true, Tags: map[string]string{}}}}
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

// TestClusterKeyringProblems checks the answers of a keyring operation
// that fails: 409 gossip_not_encrypted on a cluster without a gossip key,
// and 502 keyring_failed with each failed node's answer in the problem's
// messages.
func TestClusterKeyringProblems(t *testing.T) {
	key := `{"key":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="}`
	cl := testCluster()
	cl.keyErr = fmt.Errorf("%w: no keyring", ErrGossipNotEncrypted)
	f := newFixture(t, fixtureOpts{cluster: cl})
	f.wantProblem(http.StatusConflict, "gossip_not_encrypted", "", "GET", "/v1/cluster/keys", "")
	if p := f.wantProblem(http.StatusConflict, "gossip_not_encrypted", "", "POST", "/v1/cluster/keys/install", key); p.Messages != nil {
		t.Errorf("gossip_not_encrypted with messages %v", p.Messages)
	}

	cl = testCluster()
	cl.keyErr = fmt.Errorf("%w: 2 of 3 nodes failed", ErrKeyring)
	cl.keyMsgs = map[string]string{"b": "Key not found", "c": "Removing the primary key is not allowed"}
	f = newFixture(t, fixtureOpts{cluster: cl})
	for _, path := range []string{"/v1/cluster/keys", "/v1/cluster/keys/remove"} {
		method, body := "GET", ""
		if path != "/v1/cluster/keys" {
			method, body = "POST", key
		}
		p := f.wantProblem(http.StatusBadGateway, "keyring_failed", "", method, path, body)
		if !maps.Equal(p.Messages, cl.keyMsgs) {
			t.Errorf("%s %s: messages %v, want %v", method, path, p.Messages, cl.keyMsgs)
		}
	}
}
