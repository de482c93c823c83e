package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// placementOf returns the owner and the single node of adapter as p
// reports them (GET /v1/adapters/{name}).
func (p *proc) placementOf(t *testing.T, adapter string) (owner, single string) {
	t.Helper()
	var a struct {
		Owner      string `json:"owner"`
		SingleNode string `json:"single_node"`
	}
	p.jsonCall(t, http.StatusOK, "GET", "/v1/adapters/"+adapter, nil, &a)
	return a.Owner, a.SingleNode
}

// agree reports whether every one of ps lists exactly ids, each active,
// and reports one owner for every adapter of names, and one single node
// for the single-node adapter csn, among ids.
func agree(t *testing.T, ids, names []string, ps ...*proc) bool {
	for _, p := range ps {
		if !p.seesAll(t, ids) {
			return false
		}
	}
	for _, name := range names {
		o0, s0 := ps[0].placementOf(t, name)
		if !slices.Contains(ids, o0) || (name == "csn") != slices.Contains(ids, s0) {
			return false
		}
		for _, p := range ps[1:] {
			if o, s := p.placementOf(t, name); o != o0 || s != s0 {
				return false
			}
		}
	}
	return true
}

// TestClusterForgetRejoin runs three nodes on 127.0.0.1-3 over one HBase
// table, without a gossip key, and checks that a forgotten node that
// comes back is a node that joins (docs/cluster.md, cluster.K10, K15):
//
//   - node 3 drained, stopped (SIGTERM), forgotten and started again on
//     its data dir within seconds: every node lists the three active and
//     agrees on the owner of each adapter and on the single node of a
//     single-node adapter, within the gossip convergence bound, and still
//     after a while (serf's memory of the forget, a leave intent kept for
//     minutes, must not turn it left again on any node);
//   - node 3 killed with SIGKILL, confirmed failed, forgotten and started
//     again: the same;
//   - key rotation without a gossip key is 409 gossip_not_encrypted, not
//     a failure of every node.
func TestClusterForgetRejoin(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	env := hbaseEnv(t)
	src := filepath.Join(t.TempDir(), "src.db")
	cli(t, "sqlite", src, "CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items VALUES (1, 'one');")
	names := []string{"csn", "l1", "l2", "l3", "l4", "l5", "l6"}
	cfg := fmt.Sprintf("connections: [{name: src, type: sqlite, options: {path: %q}}]\nadapters:\n", src)
	cfg += "  - {name: csn, connection: src, resource: items, strategy: single-node}\n"
	for _, n := range names[1:] {
		cfg += fmt.Sprintf("  - {name: %s, connection: src, resource: items}\n", n)
	}
	const confirm = 3 * time.Second
	gossip := []string{gossipAddr(t, "127.0.0.1"), gossipAddr(t, "127.0.0.2"), gossipAddr(t, "127.0.0.3")}
	nodeEnv := func(i int) []string {
		return append(slices.Clone(env),
			fmt.Sprintf("SNAPSTORE_LISTEN=127.0.0.%d:0", i+1),
			"SNAPSTORE_CLUSTER_BIND="+gossip[i],
			"SNAPSTORE_CLUSTER_PRESET=loopback",
			"SNAPSTORE_CLUSTER_CONFIRM_FAILURE="+confirm.String(),
			"SNAPSTORE_CLUSTER_HEARTBEAT=1s",
			"SNAPSTORE_CLUSTER_JOIN="+gossip[0],
		)
	}
	var nodes []*proc
	for i := range 3 {
		nodes = append(nodes, startServerWith(t, "no-secret-here", cfg, nodeEnv(i)...))
	}
	var ids []string
	for _, p := range nodes {
		ids = append(ids, p.self(t).ID)
	}
	all := slices.Sorted(slices.Values(ids))
	poll(t, 30*time.Second, "three members, active, agreeing on the placement", func() bool { return agree(t, all, names, nodes...) })

	// Key rotation on a cluster without a gossip key.
	for _, c := range []struct{ method, path string }{{"GET", "/v1/cluster/keys"}, {"POST", "/v1/cluster/keys/install"}} {
		r, err := nodes[1].call(c.method, c.path, map[string]string{"key": "T9jncgl9mbLus+baTTa7q7nPSUrXwbDi2dhbtqir37s="})
		if err != nil {
			t.Fatal(err)
		}
		wantProblem(t, c.method+" "+c.path+" without a gossip key", r, http.StatusConflict, "gossip_not_encrypted")
	}

	n3, id3 := nodes[2], ids[2]
	// The bound within which the views must agree after the restart: a
	// join and one push-pull of the loopback preset, and the heartbeat.
	const converge = 30 * time.Second
	// hold is how long the agreement must last: serf keeps a leave
	// intent for minutes, and the push-pull (15 s on loopback) replays
	// what each member knows.
	const hold = 40 * time.Second
	for _, variant := range []string{"drained and stopped", "killed"} {
		gone := "failed"
		if variant == "killed" {
			n3.kill()
		} else {
			cli(t, "cluster", "drain", id3, "--wait", "--timeout", "30s", "--server", nodes[0].base)
			n3.stop()
			gone = "left"
		}
		poll(t, 60*time.Second, "node 3 "+gone+" on nodes 1 and 2", func() bool {
			for _, p := range nodes[:2] {
				if n, _ := member(p.members(t), id3); n.State != gone {
					return false
				}
			}
			return true
		})
		cli(t, "cluster", "forget", id3, "--yes", "--server", nodes[0].base)
		poll(t, 30*time.Second, "node 3 gone from nodes 1 and 2", func() bool {
			for _, p := range nodes[:2] {
				if _, ok := member(p.members(t), id3); ok {
					return false
				}
			}
			return true
		})
		two := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return id == id3 })
		poll(t, 30*time.Second, "nodes 1 and 2 agree without node 3", func() bool { return agree(t, two, names, nodes[:2]...) })
		n3.start()
		restarted := time.Now()
		poll(t, converge, variant+", forgotten and restarted: every node lists the three active and agrees on the placement", func() bool {
			return agree(t, all, names, nodes...)
		})
		t.Logf("node 3 %s, forgotten, restarted: the three agree %s after its start", variant, time.Since(restarted).Round(time.Millisecond))
		for end := time.Now().Add(hold); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
			if !agree(t, all, names, nodes...) {
				for i, p := range nodes {
					_, s := p.placementOf(t, "csn")
					t.Logf("node %d: single node %s, members %+v", i+1, s, p.members(t))
				}
				t.Fatalf("node 3 %s, forgotten, restarted: the views parted %s after its start", variant, time.Since(restarted).Round(time.Millisecond))
			}
		}
	}
}
