package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/cluster"
)

// clusterNode is a member as GET /v1/cluster/nodes shows it.
type clusterNode struct {
	ID           string            `json:"id"`
	Address      string            `json:"address"`
	State        string            `json:"state"`
	Since        time.Time         `json:"since"`
	LastHeard    *time.Time        `json:"last_heard"`
	FailingSince *time.Time        `json:"failing_since"`
	Self         bool              `json:"self"`
	Tags         map[string]string `json:"tags"`
	Recorded     *struct {
		State     string    `json:"state"`
		LastHeard time.Time `json:"last_heard"`
	} `json:"recorded"`
	ConfigMismatches []struct {
		Kind    string   `json:"kind"`
		Name    string   `json:"name"`
		Problem string   `json:"problem"`
		Nodes   []string `json:"nodes"`
	} `json:"config_mismatches"`
}

// members asks p for its member list; nil when p does not answer.
func (p *proc) members(t *testing.T) []clusterNode {
	t.Helper()
	r, err := p.call("GET", "/v1/cluster/nodes", nil)
	if err != nil {
		t.Fatal(err) // a transport error or a leaked secret
	}
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/cluster/nodes: %d %s", r.status, r.body)
	}
	var out struct {
		Nodes []clusterNode `json:"nodes"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
	return out.Nodes
}

// member returns the node id of p's view, if there.
func member(ns []clusterNode, id string) (clusterNode, bool) {
	for _, n := range ns {
		if n.ID == id {
			return n, true
		}
	}
	return clusterNode{}, false
}

// self returns p's own id.
func (p *proc) self(t *testing.T) clusterNode {
	t.Helper()
	for _, n := range p.members(t) {
		if n.Self {
			return n
		}
	}
	t.Fatal("no member is self")
	return clusterNode{}
}

// seesAll reports whether p lists exactly ids, each active.
func (p *proc) seesAll(t *testing.T, ids []string) bool {
	ns := p.members(t)
	if len(ns) != len(ids) {
		return false
	}
	for _, id := range ids {
		if n, ok := member(ns, id); !ok || n.State != "active" {
			return false
		}
	}
	return true
}

// gossipKeyFile returns a new gossip key and a file that holds it.
func gossipKeyFile(t *testing.T) (string, string) {
	t.Helper()
	key := cluster.GenerateKey()
	file := filepath.Join(t.TempDir(), "gossip.key")
	if err := os.WriteFile(file, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return key, file
}

// without returns env less the variables named name.
func without(env []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}

// TestCluster runs a cluster of three snapstore processes on 127.0.0.1,
// 127.0.0.2 and 127.0.0.3 over one HBase table, with an encrypted gossip
// (cluster.K2) and the loopback preset (docs/cluster.md):
//
//   - they join and agree on the member list, each active, each listing
//     itself once, with its API address as tag; each is recorded in the
//     node list in HBase, and a connection that only node 2's config file
//     defines is reported by all three (log, metric, member list);
//   - a fourth process without the gossip key cannot join: it stays
//     alone and the three never list it; serve refuses a cluster off
//     loopback without a key, and a cluster on Pebble, saying why;
//   - node 3 killed with SIGKILL is seen failing while still active, and
//     failed only after the confirmation delay (cluster.K3);
//   - node 3 restarted with no join address rejoins on its own from its
//     data dir (the peers file beside serf's snapshot, whose buffered
//     writes a SIGKILL may lose), with a new incarnation.
//
// Every node writes the HBase table (writer slots, snapshot.W1).
func TestCluster(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	env := hbaseEnv(t)
	key, keyFile := gossipKeyFile(t)
	const confirm = 5 * time.Second
	gossip := []string{gossipAddr(t, "127.0.0.1"), gossipAddr(t, "127.0.0.2"), gossipAddr(t, "127.0.0.3"), gossipAddr(t, "127.0.0.4")}
	nodeEnv := func(i int, withKey bool, join ...string) []string {
		e := append(slices.Clone(env),
			fmt.Sprintf("SNAPSTORE_LISTEN=127.0.0.%d:0", i+1),
			"SNAPSTORE_CLUSTER_BIND="+gossip[i],
			"SNAPSTORE_CLUSTER_PRESET=loopback",
			"SNAPSTORE_CLUSTER_CONFIRM_FAILURE="+confirm.String(),
			fmt.Sprintf("SNAPSTORE_CLUSTER_ZONE=z%d", i+1),
			"SNAPSTORE_CLUSTER_HEARTBEAT=500ms")
		if withKey {
			e = append(e, "SNAPSTORE_CLUSTER_GOSSIP_KEY_FILE="+keyFile)
		}
		if len(join) > 0 {
			e = append(e, "SNAPSTORE_CLUSTER_JOIN="+strings.Join(join, ","))
		}
		return e
	}
	// The gossip key is the "secret" every response and log line is
	// checked for.
	start := time.Now()
	n1 := startServer(t, key, nodeEnv(0, true)...)
	// Node 2's config file defines a connection the others' do not.
	n2 := startServerWith(t, key, "connections: [{name: only2, type: sqlite, options: {path: /nonexistent/only2.db}}]\n", nodeEnv(1, true, gossip[0])...)
	n3 := startServer(t, key, nodeEnv(2, true, gossip[0])...)
	nodes := []*proc{n1, n2, n3}
	var ids []string
	for _, p := range nodes {
		ids = append(ids, p.self(t).ID)
	}
	slices.Sort(ids)
	poll(t, 30*time.Second, "three members, active, on every node", func() bool {
		return n1.seesAll(t, ids) && n2.seesAll(t, ids) && n3.seesAll(t, ids)
	})
	t.Logf("3 nodes serving and agreeing %s after the first start", time.Since(start).Round(time.Millisecond))
	for i, p := range nodes {
		ns := p.members(t)
		selfs := 0
		for _, n := range ns {
			if n.Self {
				selfs++
			}
		}
		me := p.self(t)
		if selfs != 1 || me.Tags["api"] != strings.TrimPrefix(p.base, "http://") || me.Address != gossip[i] || me.Tags["zone"] != fmt.Sprintf("z%d", i+1) || me.Tags["w"] != "100" {
			t.Errorf("node %d sees itself as %+v (%d selves), base %s", i+1, me, selfs, p.base)
		}
		for _, q := range nodes {
			n, _ := member(ns, q.self(t).ID)
			if n.Address != q.self(t).Address || n.Tags["inc"] != q.self(t).Tags["inc"] {
				t.Errorf("node %d sees %s as %+v", i+1, n.ID, n)
			}
		}
	}
	if m := n2.mustCall(t, http.StatusOK, "GET", "/metrics", nil); !strings.Contains(string(m.body), `snapstore_cluster_members{state="active"} 3`) {
		t.Errorf("node 2's metrics do not count 3 active members")
	}
	// The node list in HBase holds the three, active (cluster.K11); the
	// connection only node 2 defines is reported by every node
	// (cluster.K12).
	id2 := n2.self(t).ID
	poll(t, 20*time.Second, "the three recorded active, the mismatch reported by all", func() bool {
		for _, p := range nodes {
			self := p.self(t).ID
			for _, n := range p.members(t) {
				if n.Recorded == nil || n.Recorded.State != "active" {
					return false
				}
				want := 0
				if (self == id2) != (n.ID == id2) {
					want = 1
				}
				if len(n.ConfigMismatches) != want {
					return false
				}
				if want == 1 {
					mm := n.ConfigMismatches[0]
					if mm.Kind != "connection" || mm.Name != "only2" || mm.Problem != "missing" || len(mm.Nodes) != 1 || mm.Nodes[0] != id2 {
						return false
					}
				}
			}
		}
		return true
	})
	for i, p := range nodes {
		if got := p.metric(t, "snapstore_cluster_config_mismatches"); got != 1 {
			t.Errorf("node %d counts %v config mismatches, want 1", i+1, got)
		}
	}
	if b, _ := os.ReadFile(n1.logPath); !strings.Contains(string(b), `msg="config file mismatch with another node`) {
		t.Error("node 1 did not log the config mismatch")
	}
	out, err := exec.Command(binPath, "cluster", "nodes", "--server", n2.base).CombinedOutput()
	if err != nil {
		t.Fatalf("snapstore cluster nodes: %v\n%s", err, out)
	}
	for _, id := range ids {
		if !strings.Contains(string(out), id) {
			t.Errorf("snapstore cluster nodes does not list %s:\n%s", id, out)
		}
	}
	t.Logf("snapstore cluster nodes:\n%s", out)

	// Without the key: the join fails, the node stays alone.
	x := startServer(t, key, nodeEnv(3, false, gossip[0])...)
	xid := x.self(t).ID
	poll(t, 30*time.Second, "the keyless node retried its join", func() bool {
		b, _ := os.ReadFile(x.logPath)
		return strings.Count(string(b), "cluster join: no join address answered") >= 2
	})
	// It knows the others from the node list in HBase (cluster.K11), but
	// hears from none of them.
	for _, n := range x.members(t) {
		if !n.Self && n.FailingSince == nil && n.State != "failed" && n.State != "left" {
			t.Errorf("the keyless node sees %+v alive", n)
		}
	}
	for i, p := range nodes {
		if _, ok := member(p.members(t), xid); ok {
			t.Errorf("node %d lists the keyless node", i+1)
		}
	}
	x.stop()

	// serve refuses a cluster off loopback without a key, and one on
	// Pebble, before it opens anything.
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{append(slices.Clone(env), "SNAPSTORE_CLUSTER_BIND=0.0.0.0:0"), "config key cluster.gossip_key_file: required when gossip binds or advertises off loopback"},
		{[]string{"SNAPSTORE_CLUSTER_BIND=127.0.0.1:0"}, "(from environment variable SNAPSTORE_CLUSTER_BIND): a cluster needs storage.backend hbase"},
	} {
		cmd := exec.Command(binPath, "serve", "--data", t.TempDir())
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, tc.env...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("serve with %v: %v\n%s", tc.env[len(tc.env)-1], err, out)
		}
		t.Logf("serve refused: %s", strings.TrimSpace(string(out)))
	}

	// SIGKILL node 3: failing at once, failed after the delay.
	id3 := n3.self(t).ID
	inc3 := n3.self(t).Tags["inc"]
	n3.kill()
	killed := time.Now()
	var failing clusterNode
	poll(t, 60*time.Second, "node 2 sees node 3 failing", func() bool {
		failing, _ = member(n2.members(t), id3)
		return failing.FailingSince != nil
	})
	reported := time.Since(killed)
	if failing.State != "active" {
		t.Errorf("node 3 is %s as soon as serf reports it failed; want active until %s passed", failing.State, confirm)
	}
	var dead clusterNode
	poll(t, 60*time.Second, "node 2 sees node 3 failed", func() bool {
		dead, _ = member(n2.members(t), id3)
		return dead.State == "failed"
	})
	if d := dead.Since.Sub(*dead.FailingSince); d < confirm {
		t.Errorf("node 3 failed %s after serf reported it, before the %s delay", d, confirm)
	}
	t.Logf("SIGKILL of node 3: serf reported it failed %s later; failed %s after that (confirm_failure %s)",
		reported.Round(time.Millisecond), dead.Since.Sub(*dead.FailingSince).Round(time.Millisecond), confirm)
	poll(t, 30*time.Second, "node 1 sees node 3 failed", func() bool {
		n, _ := member(n1.members(t), id3)
		return n.State == "failed"
	})
	if m := n2.mustCall(t, http.StatusOK, "GET", "/metrics", nil); !strings.Contains(string(m.body), `snapstore_cluster_members{state="failed"} 1`) {
		t.Errorf("node 2's metrics do not count 1 failed member")
	}

	// Node 3 again, with no join address: its data dir brings it back.
	n3.env = without(n3.env, "SNAPSTORE_CLUSTER_JOIN")
	restarted := time.Now()
	before, _ := os.ReadFile(n3.logPath)
	n3.start()
	poll(t, 60*time.Second, "node 3 back on every node", func() bool {
		return n1.seesAll(t, ids) && n2.seesAll(t, ids) && n3.seesAll(t, ids)
	})
	t.Logf("node 3 rejoined on its own %s after its restart", time.Since(restarted).Round(time.Millisecond))
	if me := n3.self(t); me.ID != id3 || me.Tags["inc"] == inc3 {
		t.Errorf("restarted node 3: id %s incarnation %s (was %s, %s)", me.ID, me.Tags["inc"], id3, inc3)
	}
	if n, _ := member(n1.members(t), id3); n.Tags["inc"] == inc3 {
		t.Errorf("node 1 still sees node 3's old incarnation")
	}
	b, _ := os.ReadFile(n3.logPath)
	if after := string(b[len(before):]); !strings.Contains(after, "rejoining the members last known") || !strings.Contains(after, `msg="cluster joined"`) {
		t.Errorf("node 3's log shows no rejoin from its data dir")
	}
}
