package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/cluster/placement"
)

// ownersAdapters is how many config adapters TestClusterOwners places:
// enough that the share a join moves stays within its bound whatever the
// random node ids (25% expected, 38% allowed: more than 4 standard
// deviations).
const ownersAdapters = 200

// adapterOwners returns adapter -> owner as p reports them
// (GET /v1/adapters).
func (p *proc) adapterOwners(t *testing.T) map[string]string {
	t.Helper()
	var out struct {
		Adapters []struct {
			Name  string `json:"name"`
			Owner string `json:"owner"`
		} `json:"adapters"`
	}
	p.jsonCall(t, http.StatusOK, "GET", "/v1/adapters", nil, &out)
	m := map[string]string{}
	for _, a := range out.Adapters {
		m[a.Name] = a.Owner
	}
	return m
}

// expectedOwners computes the owner of each adapter by weighted
// rendezvous over ids (all of weight 100), as every node must.
func expectedOwners(names []string, ids []string) map[string]string {
	var cands []placement.Candidate
	for _, id := range ids {
		cands = append(cands, placement.Candidate{ID: id, Weight: cluster.DefaultWeight})
	}
	m := map[string]string{}
	for _, n := range names {
		m[n], _ = placement.Owner(n, cands)
	}
	return m
}

// sameOwners polls until every one of ps reports want.
func sameOwners(t *testing.T, within time.Duration, what string, want map[string]string, ps ...*proc) {
	t.Helper()
	poll(t, within, what, func() bool {
		for _, p := range ps {
			got := p.adapterOwners(t)
			if len(got) != len(want) {
				return false
			}
			for n, o := range want {
				if got[n] != o {
					return false
				}
			}
		}
		return true
	})
}

// metric returns the value of the sample whose line starts with name
// (labels included) in p's /metrics, -1 when absent.
func (p *proc) metric(t *testing.T, name string) float64 {
	t.Helper()
	r := p.mustCall(t, http.StatusOK, "GET", "/metrics", nil)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(r.body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// cli runs the snapstore binary with args and returns its output.
func cli(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(binPath, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("snapstore %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestClusterOwners runs a cluster on 127.0.0.1-4 over one HBase table,
// every node with the same 200 config adapters, and checks where their
// scheduled runs belong (docs/cluster.md, cluster.K6, adapters.L1):
//
//   - three nodes agree on every adapter's owner (GET /v1/adapters), and
//     the owners are the weighted rendezvous of the names over their ids;
//   - an adapter created through the API on one node reaches the others on
//     its hint, long before their periodic reread (cluster.K9);
//   - a fourth node joins: exactly the adapters it wins move, to it, and
//     each node counts them in snapstore_cluster_ownership_moves_total;
//   - the fourth node drained from another node (snapstore cluster drain,
//     a serf query) is draining everywhere and owns nothing; resumed, it
//     owns its share again (cluster.K10);
//   - the gossip key is rotated with snapstore cluster keys (install, use,
//     remove): every member holds the new key alone;
//   - all four stopped and started again: the same owners come back;
//   - the fourth killed with SIGKILL is confirmed failed, its share moves,
//     forget is refused while it is alive and removes it once failed.
//
// Nodes 1, 2 and 4 write the table (each dataset has a writer slot,
// snapshot.W1); node 3 is started read-only, so that a run handed to it
// moves on.
func TestClusterOwners(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	env := hbaseEnv(t)
	key, keyFile := gossipKeyFile(t)
	src := filepath.Join(t.TempDir(), "src.db")
	cli(t, "sqlite", src, "CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items VALUES (1, 'one'), (2, 'two');")
	var names []string
	cfg := fmt.Sprintf("connections: [{name: src, type: sqlite, options: {path: %q}}]\nadapters:\n", src)
	for i := range ownersAdapters {
		name := fmt.Sprintf("a%02d", i)
		names = append(names, name)
		cfg += fmt.Sprintf("  - {name: %s, connection: src, resource: items}\n", name)
	}
	const confirm = 3 * time.Second
	gossip := []string{gossipAddr(t, "127.0.0.1"), gossipAddr(t, "127.0.0.2"), gossipAddr(t, "127.0.0.3"), gossipAddr(t, "127.0.0.4")}
	nodeEnv := func(i int) []string {
		e := append(slices.Clone(env),
			fmt.Sprintf("SNAPSTORE_LISTEN=127.0.0.%d:0", i+1),
			"SNAPSTORE_CLUSTER_BIND="+gossip[i],
			"SNAPSTORE_CLUSTER_PRESET=loopback",
			"SNAPSTORE_CLUSTER_CONFIRM_FAILURE="+confirm.String(),
			// Longer than the test: a definition reaches the others by
			// its hint.
			"SNAPSTORE_CLUSTER_DEFINITIONS_REFRESH=1h",
			"SNAPSTORE_CLUSTER_HEARTBEAT=1s",
			"SNAPSTORE_CLUSTER_GOSSIP_KEY_FILE="+keyFile,
		)
		if i > 0 {
			e = append(e, "SNAPSTORE_CLUSTER_JOIN="+gossip[0])
		}
		if i == 2 {
			e = append(e, "SNAPSTORE_HBASE_READ_ONLY=true")
		}
		return e
	}
	start := time.Now()
	var nodes []*proc
	for i := range 3 {
		nodes = append(nodes, startServerWith(t, key, cfg, nodeEnv(i)...))
	}
	ids := make([]string, 4)
	for i, p := range nodes {
		ids[i] = p.self(t).ID
	}
	three := slices.Sorted(slices.Values(ids[:3]))
	poll(t, 30*time.Second, "three members, active, on every node", func() bool {
		return nodes[0].seesAll(t, three) && nodes[1].seesAll(t, three) && nodes[2].seesAll(t, three)
	})
	want3 := expectedOwners(names, three)
	sameOwners(t, 30*time.Second, "three nodes agree on the owners", want3, nodes...)
	share := map[string]int{}
	for _, o := range want3 {
		share[o]++
	}
	t.Logf("3 nodes agree on the owners of %d adapters %s after the first start: %v", len(names), time.Since(start).Round(time.Millisecond), share)

	// An API adapter created on node 1 reaches nodes 2 and 3 by its hint.
	created := time.Now()
	nodes[0].jsonCall(t, http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "hinted", "connection": "src", "resource": "items"}, nil)
	poll(t, 10*time.Second, "nodes 2 and 3 know the adapter created on node 1", func() bool {
		for _, p := range nodes[1:] {
			if r, _ := p.call("GET", "/v1/adapters/hinted", nil); r.status != http.StatusOK {
				return false
			}
		}
		return true
	})
	t.Logf("an adapter created on node 1 was known to nodes 2 and 3 %s later (their periodic reread: 1h)", time.Since(created).Round(time.Millisecond))
	nodes[0].mustCall(t, http.StatusNoContent, "DELETE", "/v1/adapters/hinted", nil)
	poll(t, 10*time.Second, "nodes 2 and 3 forget the deleted adapter", func() bool {
		for _, p := range nodes[1:] {
			if r, _ := p.call("GET", "/v1/adapters/hinted", nil); r.status != http.StatusNotFound {
				return false
			}
		}
		return true
	})

	// A round-robin adapter run three times from node 2: each run goes to
	// the next node of the rotation of the three (handed over node 2's
	// API credential when it is another node), so the writers 1 and 2
	// both run it; read-only node 3 refuses the run handed to it
	// (read_only) and it goes on to the next node (adapters.L2, L5;
	// cluster.K8).
	nodes[0].jsonCall(t, http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "rr", "connection": "src", "resource": "items", "strategy": "round-robin"}, nil)
	poll(t, 10*time.Second, "node 2 knows rr", func() bool { r, _ := nodes[1].call("GET", "/v1/adapters/rr", nil); return r.status == http.StatusOK })
	ranOn := map[string]int{}
	for i := range 3 {
		var rec runRecord
		nodes[1].jsonCall(t, http.StatusOK, "POST", "/v1/adapters/rr/runs?wait=true", nil, &rec)
		handed := rec.Node != ids[1] // a run node 2 keeps has no placer
		if rec.Status != "succeeded" || rec.Node == ids[2] || handed != (rec.PlacedBy == ids[1]) || rec.Version == 0 {
			t.Fatalf("round-robin run %d asked of node 2: %+v", i, rec)
		}
		ranOn[rec.Node]++
	}
	if ranOn[ids[0]] == 0 || ranOn[ids[1]] == 0 {
		t.Errorf("three round-robin runs ran on %v: want both writers, node 1 (%s) and node 2 (%s)", ranOn, ids[0], ids[1])
	}
	if b, _ := os.ReadFile(nodes[1].logPath); !strings.Contains(string(b), "round-robin: the node cannot take the run; trying the next") {
		t.Error("node 2 never moved a run on from a read-only node")
	}
	nodes[0].mustCall(t, http.StatusNoContent, "DELETE", "/v1/adapters/rr", nil)
	// Every node forgets rr before the join, whose moves are counted below.
	poll(t, 10*time.Second, "every node forgets rr", func() bool {
		for _, p := range nodes {
			if r, _ := p.call("GET", "/v1/adapters/rr", nil); r.status != http.StatusNotFound {
				return false
			}
		}
		return true
	})

	// A fourth node: only the adapters it wins move, to it.
	movesBefore := make([]float64, 3)
	for i, p := range nodes {
		movesBefore[i] = p.metric(t, "snapstore_cluster_ownership_moves_total")
	}
	nodes = append(nodes, startServerWith(t, key, cfg, nodeEnv(3)...))
	ids[3] = nodes[3].self(t).ID
	four := slices.Sorted(slices.Values(ids))
	poll(t, 30*time.Second, "four members, active, on every node", func() bool {
		for _, p := range nodes {
			if !p.seesAll(t, four) {
				return false
			}
		}
		return true
	})
	want4 := expectedOwners(names, four)
	sameOwners(t, 30*time.Second, "four nodes agree on the owners", want4, nodes...)
	moved := 0
	for _, n := range names {
		if want4[n] != want3[n] {
			moved++
			if want4[n] != ids[3] {
				t.Errorf("%s moved from %s to %s, not to the new node", n, want3[n], want4[n])
			}
		}
	}
	frac := float64(moved) / float64(len(names))
	t.Logf("the 4th node took %d of %d adapters (%.1f%%; 1/4 = 25%%, bound 1/3 + 5%%)", moved, len(names), 100*frac)
	if frac > 1.0/3+0.05 {
		t.Errorf("the 4th node's join moved %.1f%% of the owners", 100*frac)
	}
	for i, p := range nodes[:3] {
		if got := p.metric(t, "snapstore_cluster_ownership_moves_total") - movesBefore[i]; got != float64(moved) {
			t.Errorf("node %d counts %v ownership moves for the join, want %d", i+1, got, moved)
		}
	}

	// Drain node 4 from node 2; resume it.
	out := cli(t, "cluster", "drain", ids[3], "--server", nodes[1].base, "--wait", "--timeout", "30s")
	t.Logf("snapstore cluster drain:\n%s", out)
	// The state spreads by gossip: a broadcast lost on the way is made up
	// by the next push-pull (15 s with the loopback preset).
	poll(t, 30*time.Second, "node 4 draining on every node", func() bool {
		for _, p := range nodes {
			if n, _ := member(p.members(t), ids[3]); n.State != "draining" {
				return false
			}
		}
		return true
	})
	sameOwners(t, 30*time.Second, "the owners without the draining node", want3, nodes...)
	cli(t, "cluster", "resume", ids[3], "--server", nodes[2].base)
	sameOwners(t, 30*time.Second, "the owners with node 4 resumed", want4, nodes...)

	// Rotate the gossip key through the CLI.
	key2, key2File := gossipKeyFile(t)
	for _, p := range nodes {
		p.addSecret(key2)
	}
	for _, op := range []string{"install", "use"} {
		cli(t, "cluster", "keys", op, "--key-file", key2File, "--server", nodes[1].base)
	}
	oldFile := keyFile
	out = cli(t, "cluster", "keys", "remove", "--key-file", oldFile, "--server", nodes[2].base)
	t.Logf("snapstore cluster keys remove:\n%s", out)
	k2, _ := cluster.ParseKey(key2)
	var rep struct {
		Nodes     int            `json:"nodes"`
		Responses int            `json:"responses"`
		Keys      map[string]int `json:"keys"`
		Primary   map[string]int `json:"primary"`
	}
	fp := cluster.Fingerprint(k2)
	poll(t, 10*time.Second, "every member holds the new key alone", func() bool {
		// A listing is a serf query: a node that answers late makes it
		// a 502; ask again.
		r, err := nodes[0].call("GET", "/v1/cluster/keys", nil)
		if err != nil || r.status != http.StatusOK || json.Unmarshal(r.body, &rep) != nil {
			return false
		}
		return rep.Responses == 4 && len(rep.Keys) == 1 && rep.Keys[fp] == 4 && rep.Primary[fp] == 4
	})

	// Full-cluster restart: the same owners come back. The old key file
	// is still configured; each node's keyring file holds the new key.
	for i := len(nodes) - 1; i >= 0; i-- {
		nodes[i].stop()
	}
	restarted := time.Now()
	for _, p := range nodes {
		p.start()
	}
	poll(t, 60*time.Second, "four members back, active, on every node", func() bool {
		for _, p := range nodes {
			if !p.seesAll(t, four) {
				return false
			}
		}
		return true
	})
	sameOwners(t, 30*time.Second, "the same owners after the restart", want4, nodes...)
	t.Logf("full restart: 4 nodes back with the same owners %s after the starts", time.Since(restarted).Round(time.Millisecond))

	// SIGKILL node 4: confirmed failed, its share moves; forgotten.
	r, err := nodes[0].call("DELETE", "/v1/cluster/nodes/"+ids[3], nil)
	if err != nil || r.status != http.StatusConflict || !strings.Contains(string(r.body), "node_alive") {
		t.Errorf("forget of an alive node: %v %d %s", err, r.status, r.body)
	}
	nodes[3].kill()
	killed := time.Now()
	poll(t, 60*time.Second, "node 4 failed on nodes 1-3", func() bool {
		for _, p := range nodes[:3] {
			if n, _ := member(p.members(t), ids[3]); n.State != "failed" {
				return false
			}
		}
		return true
	})
	sameOwners(t, 30*time.Second, "the owners without the failed node", want3, nodes[:3]...)
	t.Logf("SIGKILL of node 4: its share back on nodes 1-3 %s later (confirm_failure %s)", time.Since(killed).Round(time.Millisecond), confirm)
	out = cli(t, "cluster", "forget", ids[3], "--yes", "--server", nodes[1].base)
	t.Logf("snapstore cluster forget: %s", strings.TrimSpace(out))
	// serf's leave goes by gossip, the node list's entry goes at each
	// node's next read of it.
	poll(t, 40*time.Second, "node 4 gone from nodes 1-3", func() bool {
		for _, p := range nodes[:3] {
			if _, ok := member(p.members(t), ids[3]); ok {
				return false
			}
		}
		return true
	})
	var listed struct {
		Nodes []json.RawMessage `json:"nodes"`
	}
	nodes[2].jsonCall(t, http.StatusOK, "GET", "/v1/cluster/nodes", nil, &listed)
	if len(listed.Nodes) != 3 {
		t.Errorf("node 3 lists %d members after the forget", len(listed.Nodes))
	}
}
