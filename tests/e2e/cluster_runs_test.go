package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runsAdapters is how many scheduled adapters TestClusterRuns spreads
// over its three nodes.
const runsAdapters = 9

// runsBigRows is the size of the table whose run TestClusterRuns kills
// mid-run: a run of it on the test HBase lasts seconds, long enough to be
// caught while it writes.
const runsBigRows = 150_000

// TestClusterRuns runs three writer nodes on 127.0.0.1-3 over one HBase
// table and checks the runs themselves (docs/cluster.md, adapters.L1,
// L2, snapshot.W1):
//
//   - nine adapters scheduled every 3 s, the same config on every node:
//     each tick fires exactly once in the cluster, on the adapter's owner;
//     the runs of different datasets go on at once on different nodes, and
//     every node reads every dataset at the version its owner committed;
//   - a round-robin adapter of a 150,000-row table: its run that changes
//     every row is killed
//     with SIGKILL mid-run on the node it went to; the run is invisible
//     (the current version stays the previous one, on every survivor), a
//     run asked meanwhile is refused while the dead process's writer slot
//     lasts, and once it expired the next run succeeds on a survivor,
//     with no committed version lost.
func TestClusterRuns(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	env := hbaseEnv(t)
	key, keyFile := gossipKeyFile(t)
	src := filepath.Join(t.TempDir(), "src.db")
	cli(t, "sqlite", src, fmt.Sprintf(`CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO items VALUES (1, 'one'), (2, 'two'), (3, 'three');
CREATE TABLE big(id INTEGER PRIMARY KEY, name TEXT, note TEXT, n INTEGER);
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < %d)
INSERT INTO big SELECT i, 'name-' || i, hex(randomblob(24)), i * 7 FROM s;`, runsBigRows))
	var names []string
	cfg := fmt.Sprintf("connections: [{name: src, type: sqlite, options: {path: %q}}]\nadapters:\n", src)
	for i := range runsAdapters {
		name := fmt.Sprintf("s%d", i)
		names = append(names, name)
		cfg += fmt.Sprintf("  - {name: %s, connection: src, resource: items, schedule: \"@every 3s\"}\n", name)
	}
	cfg += "  - {name: big, connection: src, resource: big, strategy: round-robin}\n"
	gossip := []string{gossipAddr(t, "127.0.0.1"), gossipAddr(t, "127.0.0.2"), gossipAddr(t, "127.0.0.3")}
	nodeEnv := func(i int) []string {
		e := append(slices.Clone(env),
			fmt.Sprintf("SNAPSTORE_LISTEN=127.0.0.%d:0", i+1),
			"SNAPSTORE_CLUSTER_BIND="+gossip[i],
			"SNAPSTORE_CLUSTER_PRESET=loopback",
			"SNAPSTORE_CLUSTER_CONFIRM_FAILURE=3s",
			"SNAPSTORE_CLUSTER_HEARTBEAT=1s",
			"SNAPSTORE_CLUSTER_GOSSIP_KEY_FILE="+keyFile,
		)
		if i > 0 {
			e = append(e, "SNAPSTORE_CLUSTER_JOIN="+gossip[0])
		}
		return e
	}
	var nodes []*proc
	for i := range 3 {
		nodes = append(nodes, startServerWith(t, key, cfg, nodeEnv(i)...))
	}
	ids := make([]string, 3)
	for i, p := range nodes {
		ids[i] = p.self(t).ID
	}
	sorted := slices.Sorted(slices.Values(ids))
	poll(t, 30*time.Second, "three members, active, on every node", func() bool {
		return nodes[0].seesAll(t, sorted) && nodes[1].seesAll(t, sorted) && nodes[2].seesAll(t, sorted)
	})
	owners := expectedOwners(append(slices.Clone(names), "big"), sorted)
	sameOwners(t, 30*time.Second, "three nodes agree on the owners", owners, nodes...)

	// Scheduled ticks: once each, on the owner.
	watchFrom := time.Now()
	time.Sleep(13 * time.Second)
	perNode := map[string]int{}
	overlapping := 0
	type span struct{ from, to time.Time }
	var spans []span
	for _, name := range names {
		var out struct {
			Runs []runRecord `json:"runs"`
		}
		nodes[0].jsonCall(t, http.StatusOK, "GET", "/v1/runs?adapter="+name+"&limit=1000", nil, &out)
		var starts []time.Time
		for _, r := range out.Runs {
			if r.Trigger != "schedule" {
				t.Errorf("adapter %s: run %s triggered by %q", name, r.ID, r.Trigger)
				continue
			}
			if r.Node != owners[name] {
				t.Errorf("adapter %s: scheduled run %s on node %s, want its owner %s", name, r.ID, r.Node, owners[name])
			}
			if r.Status != "succeeded" && r.Status != "running" {
				t.Errorf("adapter %s: scheduled run %s: %s %s %s", name, r.ID, r.Status, r.Code, r.Error)
			}
			started, err := time.Parse(time.RFC3339Nano, r.StartedAt)
			if err != nil {
				t.Fatalf("run %s started_at %q: %v", r.ID, r.StartedAt, err)
			}
			starts = append(starts, started)
			if ended, err := time.Parse(time.RFC3339Nano, r.EndedAt); err == nil && started.After(watchFrom) {
				spans = append(spans, span{started, ended})
			}
			perNode[r.Node]++
		}
		slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(starts); i++ {
			if gap := starts[i].Sub(starts[i-1]); gap < 1500*time.Millisecond {
				t.Errorf("adapter %s: two scheduled runs %s apart (%s, %s): a tick fired twice", name, gap, starts[i-1].Format(time.RFC3339Nano), starts[i].Format(time.RFC3339Nano))
			}
		}
		// 13 s at 3 s plus the start: 4 to 6 ticks.
		if len(starts) < 4 || len(starts) > 7 {
			t.Errorf("adapter %s: %d scheduled runs in about 13 s at @every 3s", name, len(starts))
		}
	}
	for i := range spans {
		for j := i + 1; j < len(spans); j++ {
			if spans[i].from.Before(spans[j].to) && spans[j].from.Before(spans[i].to) {
				overlapping++
			}
		}
	}
	if len(perNode) < 2 {
		t.Errorf("scheduled runs ran on %v: want the owners' share on several nodes", perNode)
	}
	t.Logf("scheduled runs of %d adapters by node: %v; %d pairs of them overlapped in time", len(names), perNode, overlapping)
	for _, name := range names {
		want := nodes[0].dataset(t, name).CurrentVersion
		poll(t, 5*time.Second, "every node reads "+name+" at one version", func() bool {
			for _, p := range nodes[1:] {
				if v := p.dataset(t, name).CurrentVersion; v < want {
					return false
				}
			}
			return true
		})
	}

	// Round-robin, killed mid-run.
	first := nodes[0].mustRun(t, "big")
	if first.Stats.Rows != runsBigRows {
		t.Fatalf("first run of big: %+v", first)
	}
	// Every row changed, so that the run writes every row.
	cli(t, "sqlite", src, "UPDATE big SET n = n + 1")
	var rec runRecord
	nodes[1].jsonCall(t, http.StatusAccepted, "POST", "/v1/adapters/big/runs", nil, &rec)
	victim := slices.Index(ids, rec.Node)
	if victim < 0 {
		t.Fatalf("round-robin run %s placed on unknown node %q", rec.ID, rec.Node)
	}
	caught := int64(0)
	poll(t, 2*time.Minute, "the run of big writing", func() bool {
		r := nodes[victim].getRun(t, rec.ID) // live progress is the running node's
		if r.Status != "running" {
			t.Fatalf("run %s ended before it could be killed: %+v (grow runsBigRows)", rec.ID, r)
		}
		caught = r.RowsRead
		return r.RowsRead > runsBigRows/10
	})
	nodes[victim].kill()
	t.Logf("killed node %d (%s) with run %s at %d of %d rows read (txn %d)", victim+1, ids[victim], rec.ID, caught, runsBigRows, rec.TxnID)
	survivors := []*proc{}
	for i, p := range nodes {
		if i != victim {
			survivors = append(survivors, p)
		}
	}
	for _, p := range survivors {
		// A node's view of the datasets may be its refresh interval
		// (snapshot.DefaultRefreshInterval, 1 s) behind the last commit.
		var d datasetInfo
		poll(t, 5*time.Second, "the survivor's view of the first version", func() bool {
			d = p.dataset(t, "big")
			return d.CurrentVersion != 0
		})
		if d.CurrentVersion != first.Version {
			t.Errorf("after the kill: current version of big %d, want %d", d.CurrentVersion, first.Version)
		}
		if got := len(p.versions(t, "big")); got != 1 {
			t.Errorf("after the kill: %d versions of big listed, want 1", got)
		}
	}
	// The dead process's writer slot holds the dataset until it expires
	// (30 s): runs are refused meanwhile (409 run_in_progress, no run
	// record), then one succeeds on a survivor.
	killed := time.Now()
	var next runRecord
	refused := 0
	poll(t, 90*time.Second, "a run of big after the kill", func() bool {
		resp, err := survivors[0].call("POST", "/v1/adapters/big/runs?wait=true", nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.status == http.StatusConflict {
			if pr := wantProblem(t, "a run of big while the dead node's slot holds it", resp, http.StatusConflict, "run_in_progress"); pr.Code == "run_in_progress" {
				refused++
			}
			time.Sleep(2 * time.Second)
			return false
		}
		var r runRecord
		if resp.status != http.StatusOK || json.Unmarshal(resp.body, &r) != nil {
			t.Fatalf("run of big after the kill: %d %s", resp.status, resp.body)
		}
		if r.Status == "succeeded" {
			next = r
			return true
		}
		if r.Code != "node_unreachable" {
			t.Fatalf("run of big after the kill: %+v", r)
		}
		refused++
		time.Sleep(2 * time.Second)
		return false
	})
	if next.Node == ids[victim] || next.Version <= first.Version || next.Stats.Rows != runsBigRows || next.Stats.Updated != runsBigRows {
		t.Errorf("run of big after the kill: %+v", next)
	}
	for _, r := range survivors[0].runs(t, "big", 100) {
		if r.Code == "run_in_progress" {
			t.Errorf("a refused run left a record: %+v", r)
		}
	}
	t.Logf("after the kill, %d runs refused, then run %s succeeded on %s %s later: version %d", refused, next.ID, next.Node, time.Since(killed).Round(time.Second), next.Version)
	for _, p := range survivors {
		// The same refresh interval: the run's node answered first.
		var vs []int64
		poll(t, 5*time.Second, "the survivor's view of the new version", func() bool {
			vs = versionIDs(p.versions(t, "big"))
			return len(vs) > 1
		})
		if !slices.Equal(vs, []int64{first.Version, next.Version}) && !slices.Equal(vs, []int64{next.Version, first.Version}) {
			t.Errorf("versions of big after the failover: %v, want %d and %d (the killed run's txn %d never listed)", vs, first.Version, next.Version, rec.TxnID)
		}
		r := p.mustCall(t, http.StatusOK, "GET", "/v1/datasets/big/rows", nil, "Accept", "application/x-ndjson")
		rows := bytes.Count(r.body, []byte("\n"))
		if ver := r.header.Get("Snapstore-Version"); ver != strconv.FormatInt(next.Version, 10) || rows != runsBigRows {
			t.Errorf("scan of big on a survivor: %d rows at version %s, want %d at %d", rows, ver, runsBigRows, next.Version)
		}
		if strings.Contains(p.logTail(400), "panic") {
			t.Error("a survivor logged a panic")
		}
	}
}
