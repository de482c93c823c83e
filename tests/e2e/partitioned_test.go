package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
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

	"github.com/snapstore/snapstore/snapshot"
)

// partitionedRows is the size of the source table of the partitioned
// runs' test.
const partitionedRows = 120000

// pcluster is a cluster of snapstore processes on 127.0.0.1.. over one
// HBase table, each with a transfer listener and certificates from
// snapstore cert, and the same config file: a SQLite source, a
// partition-by-key adapter "spread" and a local adapter "single" of the
// same table.
type pcluster struct {
	t      *testing.T
	env    []string // every node's
	certs  string
	cfg    string
	gossip []string
	nodes  []*proc
	ids    []string
}

// partitionedCluster starts n nodes (extraEnv added to each) and waits
// until the partition table gives every one of them partitions.
// partitionedOwnerWait is cluster.transfer.owner_wait in TestPartitionedRuns:
// longer than a killed owner's restart and rejoin take on a loaded
// machine, so that the run that waits for it finishes.
const partitionedOwnerWait = 40 * time.Second

func partitionedCluster(t *testing.T, n int, src, ownerWait string, extraEnv ...string) *pcluster {
	t.Helper()
	cfg := fmt.Sprintf(`connections: [{name: src, type: sqlite, options: {path: %q}}]
adapters:
  - {name: spread, connection: src, resource: ledger, dataset: spread, strategy: partition-by-key, transfer_compression: all, guard: {max_shrink: 1}}
  - {name: single, connection: src, resource: ledger, dataset: single, guard: {max_shrink: 1}}
`, src)
	return startPartitionedCluster(t, n, cfg, ownerWait, extraEnv...)
}

// startPartitionedCluster starts n nodes with the config file cfg, as
// partitionedCluster does.
func startPartitionedCluster(t *testing.T, n int, cfg, ownerWait string, extraEnv ...string) *pcluster {
	t.Helper()
	c := &pcluster{t: t, certs: t.TempDir(), cfg: cfg}
	c.env = append(hbaseEnv(t),
		"SNAPSTORE_CLUSTER_PRESET=loopback",
		"SNAPSTORE_CLUSTER_CONFIRM_FAILURE=3s",
		"SNAPSTORE_CLUSTER_HEARTBEAT=500ms",
		"SNAPSTORE_CLUSTER_PARTITION_MOVES=32",
		"SNAPSTORE_CLUSTER_PARTITION_MOVE_INTERVAL=500ms",
		"SNAPSTORE_CLUSTER_TRANSFER_OWNER_WAIT="+ownerWait,
		"SNAPSTORE_CLUSTER_TRANSFER_CA_FILE="+filepath.Join(c.certs, "ca.crt"))
	c.env = append(c.env, extraEnv...)
	cli(t, "cert", "ca", c.certs)
	for range n {
		c.add()
	}
	c.waitBalanced()
	return c
}

// add starts one more node, joining the first.
func (c *pcluster) add() *proc {
	t := c.t
	t.Helper()
	i := len(c.nodes)
	host := fmt.Sprintf("127.0.0.%d", i+1)
	data, id := c.newDataDir()
	// The gossip and transfer ports are picked free, then bound by the
	// node a moment later; another process may take one meanwhile (the
	// other packages' tests run beside these): then others are picked.
	for attempt := 1; ; attempt++ {
		gossip := gossipAddr(t, host)
		e := append(slices.Clone(c.env),
			"SNAPSTORE_DATA="+data,
			"SNAPSTORE_LISTEN="+host+":0",
			"SNAPSTORE_CLUSTER_BIND="+gossip,
			"SNAPSTORE_CLUSTER_TRANSFER_LISTEN="+gossipAddr(t, host),
			"SNAPSTORE_CLUSTER_TRANSFER_CERT_FILE="+filepath.Join(c.certs, id+".crt"),
			"SNAPSTORE_CLUSTER_TRANSFER_KEY_FILE="+filepath.Join(c.certs, id+".key"))
		if i > 0 {
			e = append(e, "SNAPSTORE_CLUSTER_JOIN="+c.gossip[0])
		}
		p := newServerWith(t, "no-secret-here", c.cfg, e...)
		if p.startOrConflict() {
			if attempt == 3 {
				t.Fatalf("node %d: its addresses were taken three times:\n%s", i+1, p.logTail(40))
			}
			t.Logf("node %d: an address it was given was taken; picking others", i+1)
			continue
		}
		c.gossip = append(c.gossip, gossip)
		c.nodes, c.ids = append(c.nodes, p), append(c.ids, id)
		return p
	}
}

// newDataDir makes a node's data directory with its node id and a
// certificate of the cluster CA for it.
func (c *pcluster) newDataDir() (data, id string) {
	t := c.t
	t.Helper()
	data = t.TempDir()
	cli(t, "cert", "node", c.certs, "--data", data)
	b, err := os.ReadFile(filepath.Join(data, "node-id"))
	if err != nil {
		t.Fatal(err)
	}
	return data, strings.TrimSpace(string(b))
}

// waitBalanced waits until every node is active everywhere and owns
// partitions.
func (c *pcluster) waitBalanced() {
	t := c.t
	t.Helper()
	sorted := slices.Sorted(slices.Values(c.ids))
	poll(t, 60*time.Second, "every node active and owning partitions", func() bool {
		for _, p := range c.nodes {
			if !p.seesAll(t, sorted) || p.metric(t, "snapstore_cluster_partitions_owned") < 1 {
				return false
			}
		}
		return true
	})
	// The keeper moves partitions in steps, one per move interval (500 ms),
	// and each node rereads the table on its own tick: settled is every node
	// reading one epoch that owns all 32 partitions, and that epoch staying
	// for four move intervals.
	var epoch float64
	var since time.Time
	poll(t, 60*time.Second, "the partition table settled", func() bool {
		e, total := -1.0, 0.0
		for _, p := range c.nodes {
			pe := p.metric(t, "snapstore_cluster_partition_table_epoch")
			if e >= 0 && pe != e {
				since = time.Time{}
				return false
			}
			e = pe
			total += p.metric(t, "snapstore_cluster_partitions_owned")
		}
		if total != 32 {
			since = time.Time{}
			return false
		}
		if e != epoch || since.IsZero() {
			epoch, since = e, time.Now()
		}
		return time.Since(since) >= 2*time.Second
	})
}

// owned returns the partitions each node owns, as it sees the table.
func (c *pcluster) owned() []float64 {
	var out []float64
	for _, p := range c.nodes {
		out = append(out, p.metric(c.t, "snapstore_cluster_partitions_owned"))
	}
	return out
}

// ledgerTable creates the SQLite source of n rows.
func ledgerTable(t *testing.T, n int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src.db")
	cli(t, "sqlite", src, fmt.Sprintf(`CREATE TABLE ledger(id INTEGER PRIMARY KEY, name TEXT NOT NULL, amount REAL NOT NULL, grp INTEGER NOT NULL);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < %d)
INSERT INTO ledger SELECT i, 'name-' || i, i / 2.0, i %% 97 FROM c;`, n))
	return src
}

// sourceRow is a row of the test's SQLite table as the API serves it.
type sourceRow struct {
	Name   string
	Amount float64
	Grp    int64
}

// readDataset reads every row of dataset at its current version through
// the API (NDJSON) and returns them by id, and the version.
func readDataset(t *testing.T, p *proc, dataset string) (map[int64]sourceRow, int64) {
	t.Helper()
	r := p.mustCall(t, http.StatusOK, "GET", "/v1/datasets/"+dataset+"/rows", nil, "Accept", "application/x-ndjson")
	version, _ := strconv.ParseInt(r.header.Get("Snapstore-Version"), 10, 64)
	out := map[int64]sourceRow{}
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		var row struct {
			ID     int64   `json:"id"`
			Name   string  `json:"name"`
			Amount float64 `json:"amount"`
			Grp    int64   `json:"grp"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%s: %q: %v", dataset, sc.Text(), err)
		}
		if _, dup := out[row.ID]; dup {
			t.Fatalf("%s: row %d twice", dataset, row.ID)
		}
		out[row.ID] = sourceRow{row.Name, row.Amount, row.Grp}
	}
	return out, version
}

// readCommitted reads dataset on p once p's view shows version v (a
// node refreshes its view of what others committed within
// snapshot.DefaultRefreshInterval, snapshot.W2).
func readCommitted(t *testing.T, p *proc, dataset string, v int64) map[int64]sourceRow {
	t.Helper()
	var rows map[int64]sourceRow
	poll(t, 10*time.Second, fmt.Sprintf("version %d of %s", v, dataset), func() bool {
		var got int64
		rows, got = readDataset(t, p, dataset)
		return got == v
	})
	return rows
}

// expectedRows is the source table as generated and changed by the test.
func expectedRows(changed bool) map[int64]sourceRow {
	out := map[int64]sourceRow{}
	for i := int64(1); i <= partitionedRows; i++ {
		out[i] = sourceRow{fmt.Sprintf("name-%d", i), float64(i) / 2, i % 97}
	}
	if changed {
		for i := int64(1); i <= partitionedRows; i++ {
			switch {
			case i%100 == 0:
				delete(out, i)
			case i%37 == 0:
				r := out[i]
				r.Name = "changed"
				out[i] = r
			}
		}
		for i := int64(partitionedRows + 1); i <= partitionedRows+500; i++ {
			out[i] = sourceRow{fmt.Sprintf("new-%d", i), 1, 0}
		}
	}
	return out
}

// sameLedger fails the test unless got equals want.
func sameLedger[R comparable](t *testing.T, what string, got, want map[int64]R) {
	t.Helper()
	bad := 0
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			if bad++; bad <= 5 {
				t.Errorf("%s: row %d is %+v (present %v), want %+v", what, id, g, ok, w)
			}
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			if bad++; bad <= 5 {
				t.Errorf("%s: row %d should not be there", what, id)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d rows differ (%d rows, want %d)", what, bad, len(got), len(want))
	}
}

// checksumOf returns the checksum of version v of dataset.
func checksumOf(t *testing.T, p *proc, dataset string, v int64) string {
	t.Helper()
	var vi struct {
		Stats struct {
			Checksum string `json:"checksum"`
		} `json:"stats"`
	}
	p.jsonCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/%s/versions/%d", dataset, v), nil, &vi)
	return vi.Stats.Checksum
}

// TestPartitionedRuns runs a cluster of three nodes over one HBase table
// and a SQLite table of 120,000 rows read by a partition-by-key adapter
// (docs/cluster.md, cluster.K13, K14):
//
//   - the keeper assigns every partition, each node owning some;
//   - a partitioned run coordinated by node 1 commits a version that holds
//     every source row as it is (read back through the API), with the
//     checksum and counts of the same table read by a local adapter into
//     another dataset, and the rows written by every node (each node's
//     snapstore_cluster_partition_rows_applied_total);
//   - a second run after updates, deletes and inserts gives the exact new
//     version and the same counts as the local run;
//   - an owner killed with SIGKILL mid-run: the run waits for it, its rows
//     queued (the backlog for that node is not zero), the current version
//     readable and unchanged; the owner restarted, the run finishes and the
//     backlog drains to zero;
//   - an owner killed and not restarted: the run fails after
//     cluster.transfer.owner_wait with node_unreachable, the current
//     version unchanged; the owner back, the next run succeeds.
func TestPartitionedRuns(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	src := ledgerTable(t, partitionedRows)
	c := partitionedCluster(t, 3, src, partitionedOwnerWait.String())
	nodes, ids := c.nodes, c.ids
	n1, n3 := nodes[0], nodes[2]
	c.refusedWithCount(64)

	// First run.
	start := time.Now()
	rec := n1.mustRun(t, "spread")
	t.Logf("partitioned run of %d rows over 3 nodes: %s", partitionedRows, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	single := n1.mustRun(t, "single")
	t.Logf("the same rows by one node: %s", time.Since(start).Round(time.Millisecond))
	if rec.Stats != single.Stats || rec.Stats.Inserted != partitionedRows {
		t.Errorf("partitioned run's stats %+v, one node's %+v", rec.Stats, single.Stats)
	}
	got := readCommitted(t, nodes[1], "spread", rec.Version)
	sameLedger(t, "first version", got, expectedRows(false))
	if a, b := checksumOf(t, n1, "spread", rec.Version), checksumOf(t, n1, "single", single.Version); a != b || a == "" {
		t.Errorf("checksum %q partitioned, %q by one node", a, b)
	}
	var applied float64
	for i, p := range nodes {
		n := p.metric(t, "snapstore_cluster_partition_rows_applied_total")
		if n <= 0 {
			t.Errorf("node %d wrote no rows of the partitioned run", i+1)
		}
		t.Logf("node %d (%s) wrote %v rows, owns %v partitions", i+1, ids[i], n, p.metric(t, "snapstore_cluster_partitions_owned"))
		applied += n
	}
	if applied != partitionedRows {
		t.Errorf("the nodes wrote %v rows in all, want %d", applied, partitionedRows)
	}

	// Second run: updates, deletes, inserts.
	cli(t, "sqlite", src, fmt.Sprintf(`UPDATE ledger SET name = 'changed' WHERE id %% 37 = 0 AND id %% 100 != 0;
DELETE FROM ledger WHERE id %% 100 = 0;
WITH RECURSIVE c(i) AS (SELECT %d UNION ALL SELECT i+1 FROM c WHERE i < %d)
INSERT INTO ledger SELECT i, 'new-' || i, 1, 0 FROM c;`, partitionedRows+1, partitionedRows+500))
	rec2 := n1.mustRun(t, "spread")
	single2 := n1.mustRun(t, "single")
	want2 := expectedRows(true)
	if rec2.Stats != single2.Stats || rec2.Stats.Deleted != partitionedRows/100 || rec2.Stats.Inserted != 500 || rec2.Stats.Rows != int64(len(want2)) {
		t.Errorf("second partitioned run's stats %+v, one node's %+v", rec2.Stats, single2.Stats)
	}
	got = readCommitted(t, n3, "spread", rec2.Version)
	sameLedger(t, "second version", got, want2)
	if a, b := checksumOf(t, n1, "spread", rec2.Version), checksumOf(t, n1, "single", single2.Version); a != b {
		t.Errorf("second checksum %q partitioned, %q by one node", a, b)
	}

	// An owner killed mid-run: the run waits for it, then finishes.
	cli(t, "sqlite", src, "UPDATE ledger SET grp = grp + 1000 WHERE id % 3 = 0;")
	id3 := ids[2]
	started := n1.startRun(t, "spread", 5000)
	n3.kill()
	t.Logf("node 3 killed after %d rows read", n1.getRun(t, started.ID).RowsRead)
	var waiting float64
	poll(t, 30*time.Second, "rows for node 3 in node 1's backlog", func() bool {
		waiting = backlogRows(t, n1, id3)
		return waiting > 0
	})
	t.Logf("node 1's backlog for node 3 while it is down: %v rows", waiting)
	if got, v := readDataset(t, nodes[1], "spread"); v != rec2.Version || len(got) != len(want2) {
		t.Errorf("while the run waits, node 2 reads version %d with %d rows; want %d with %d", v, len(got), rec2.Version, len(want2))
	}
	n3.start()
	rec3 := n1.awaitRun(t, started.ID)
	if rec3.Status != "succeeded" {
		t.Fatalf("the run that waited for node 3: %s %s %s", rec3.Status, rec3.Code, rec3.Error)
	}
	if rec3.Stats.Updated != int64(len(want2))/3-5 && rec3.Stats.Updated == 0 {
		t.Errorf("the run that waited updated %d rows", rec3.Stats.Updated)
	}
	want3 := map[int64]sourceRow{}
	for id, row := range want2 {
		if id%3 == 0 {
			row.Grp += 1000
		}
		want3[id] = row
	}
	got = readCommitted(t, n1, "spread", rec3.Version)
	sameLedger(t, "the version of the run that waited", got, want3)
	poll(t, 30*time.Second, "node 1's backlog drained", func() bool { return backlogRows(t, n1, "") == 0 })

	// An owner killed and not back: the run fails at the wait limit.
	n3.kill()
	cli(t, "sqlite", src, "UPDATE ledger SET name = 'lost' WHERE id % 5 = 0;")
	begun := time.Now()
	failed, err := n1.runWait("spread")
	if err != nil {
		t.Fatal(err)
	}
	if failed.Status != "failed" || failed.Code != "node_unreachable" || !strings.Contains(failed.Error, id3) {
		t.Fatalf("a run whose owner stays down: %s %s %s", failed.Status, failed.Code, failed.Error)
	}
	if d := time.Since(begun); d < partitionedOwnerWait {
		t.Errorf("the run failed after %s, before owner_wait (%s)", d, partitionedOwnerWait)
	}
	t.Logf("the run failed after %s: %s", time.Since(begun).Round(time.Second), failed.Error)
	got, v := readDataset(t, nodes[1], "spread")
	if v != rec3.Version {
		t.Errorf("after the failed run node 2 reads version %d, want %d", v, rec3.Version)
	}
	sameLedger(t, "the version after the failed run", got, want3)
	n3.start()
	poll(t, 60*time.Second, "node 3 back", func() bool { return n1.seesAll(t, slices.Sorted(slices.Values(ids))) })
	rec4 := n1.mustRun(t, "spread")
	if rec4.Stats.Updated != int64(len(want3))/5 && rec4.Stats.Updated == 0 {
		t.Errorf("the run after node 3 came back: %+v", rec4.Stats)
	}
	for id, row := range want3 {
		if id%5 == 0 {
			row.Name = "lost"
			want3[id] = row
		}
	}
	got = readCommitted(t, n3, "spread", rec4.Version)
	sameLedger(t, "the version after node 3 came back", got, want3)

	// The coordinator killed mid-run: nothing of its run is visible; once
	// it is back and its writer slot expired, a run coordinated by
	// another node succeeds.
	cli(t, "sqlite", src, "UPDATE ledger SET amount = amount + 1 WHERE id % 7 = 0;")
	started = n1.startRun(t, "spread", 5000)
	n1.kill()
	got, v = readDataset(t, nodes[1], "spread")
	if v != rec4.Version {
		t.Errorf("after the coordinator died node 2 reads version %d, want %d", v, rec4.Version)
	}
	sameLedger(t, "the version after the coordinator died", got, want3)
	n1.start()
	var rec5 runRecord
	begun = time.Now()
	poll(t, 120*time.Second, "a run on node 2 once the dead run's slot expired", func() bool {
		rec5, err = nodes[1].runWait("spread")
		if err != nil {
			// While the dead run's slot holds the dataset, a run is
			// refused with 409 run_in_progress and no run record.
			if strings.Contains(err.Error(), "run_in_progress") {
				time.Sleep(time.Second)
				return false
			}
			t.Fatal(err)
		}
		if rec5.Status != "succeeded" {
			if rec5.Code != "run_in_progress" && rec5.Code != "node_unreachable" {
				t.Fatalf("a run after the coordinator died: %s %s %s", rec5.Status, rec5.Code, rec5.Error)
			}
			time.Sleep(time.Second)
			return false
		}
		return true
	})
	t.Logf("node 2's run succeeded %s after the coordinator was killed and restarted", time.Since(begun).Round(time.Second))
	for id, row := range want3 {
		if id%7 == 0 {
			row.Amount++
			want3[id] = row
		}
	}
	got = readCommitted(t, n1, "spread", rec5.Version)
	sameLedger(t, "the version after the coordinator died and another ran", got, want3)
}

// backlogRows returns the rows node p has queued for node (every node
// when node is "").
func backlogRows(t *testing.T, p *proc, node string) float64 {
	t.Helper()
	var bl struct {
		Nodes []struct {
			Node string `json:"node"`
			Rows int64  `json:"rows"`
		} `json:"nodes"`
	}
	p.jsonCall(t, http.StatusOK, "GET", "/v1/cluster/backlog", nil, &bl)
	var n int64
	for _, b := range bl.Nodes {
		if node == "" || b.Node == node {
			n += b.Rows
		}
	}
	return float64(n)
}

// TestPartitionedRunsFiveNodes runs five nodes, then six, over one HBase
// table and a SQLite table of 120,000 rows, each node's transfer queues
// bounded to 1 MiB in memory (cluster.transfer.queue_memory):
//
//   - a partitioned run equals a local run of the same table (counts,
//     checksum) and the source, every node writing rows;
//   - a sixth node joins: it takes at most ceil(32/6) partitions, about
//     1/N (the RFC's bound is 1/N + 5%), every one from the others, none of
//     which gains any; a run over six nodes equals the source;
//   - an owner killed with SIGKILL before a run: the coordinator reads the
//     whole source and queues the owner's rows, of which all but 1 MiB
//     (plus a batch per connection) are on disk only; the owner back, the
//     run commits the source and the backlog drains.
func TestPartitionedRunsFiveNodes(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	src := ledgerTable(t, partitionedRows)
	c := partitionedCluster(t, 5, src, "5m", "SNAPSTORE_CLUSTER_TRANSFER_QUEUE_MEMORY=1048576", "SNAPSTORE_CLUSTER_TRANSFER_QUEUE_BATCHES=4")
	n1 := c.nodes[0]
	rec := n1.mustRun(t, "spread")
	single := n1.mustRun(t, "single")
	if rec.Stats != single.Stats || rec.Stats.Inserted != partitionedRows {
		t.Errorf("partitioned run's stats %+v, one node's %+v", rec.Stats, single.Stats)
	}
	if a, b := checksumOf(t, n1, "spread", rec.Version), checksumOf(t, n1, "single", single.Version); a != b || a == "" {
		t.Errorf("checksum %q partitioned, %q by one node", a, b)
	}
	got := readCommitted(t, c.nodes[4], "spread", rec.Version)
	sameLedger(t, "five nodes", got, expectedRows(false))
	for i, p := range c.nodes {
		if n := p.metric(t, "snapstore_cluster_partition_rows_applied_total"); n <= 0 {
			t.Errorf("node %d wrote no rows", i+1)
		}
	}

	// A sixth node joins.
	before := c.owned()
	c.add()
	c.waitBalanced()
	var after []float64
	poll(t, 30*time.Second, "every node reading one table", func() bool {
		after = c.owned()
		total := 0.0
		for _, n := range after {
			total += n
		}
		return total == 32
	})
	moved := after[5]
	t.Logf("partitions owned by five nodes %v, after the sixth joined %v: %v moved (1/N + 5%% of 32 = %.1f)", before, after, moved, 32*(1.0/6+0.05))
	if moved > 6 || moved < 5 {
		t.Errorf("the sixth node took %v partitions, want 5 or 6 (floor or ceil of 32/6)", moved)
	}
	for i := range 5 {
		if after[i] > before[i] {
			t.Errorf("node %d went from %v partitions to %v when the sixth joined", i+1, before[i], after[i])
		}
	}
	cli(t, "sqlite", src, "UPDATE ledger SET name = 'six' WHERE id % 11 = 0;")
	rec6 := n1.mustRun(t, "spread")
	want := expectedRows(false)
	for id, row := range want {
		if id%11 == 0 {
			row.Name = "six"
			want[id] = row
		}
	}
	if rec6.Stats.Updated != int64(partitionedRows/11) {
		t.Errorf("the run over six nodes updated %d rows, want %d", rec6.Stats.Updated, partitionedRows/11)
	}
	got = readCommitted(t, c.nodes[5], "spread", rec6.Version)
	sameLedger(t, "six nodes", got, want)
	if n := c.nodes[5].metric(t, "snapstore_cluster_partition_rows_applied_total"); n <= 0 {
		t.Errorf("the sixth node wrote no rows")
	}

	// An owner down for the whole read: its rows spill to the
	// coordinator's disk.
	down := c.nodes[2]
	down.kill()
	cli(t, "sqlite", src, "UPDATE ledger SET grp = -1 WHERE id % 13 = 0;")
	started := n1.startRun(t, "spread", partitionedRows)
	var spilled, mem, rows float64
	poll(t, 30*time.Second, "the down owner's rows queued", func() bool {
		spilled = n1.metric(t, "snapstore_cluster_transfer_spilled_bytes_total")
		mem = n1.metric(t, "snapstore_cluster_transfer_memory_bytes")
		rows = backlogRows(t, n1, c.ids[2])
		return rows > 10000
	})
	rss := n1.peakRSS(t)
	t.Logf("with node 3 down: %v rows queued for it, %.1f KiB of batches in memory, %.1f MiB spilled to disk; coordinator peak RSS %d MiB",
		rows, mem/1024, spilled/(1<<20), rss>>20)
	if spilled <= 0 {
		t.Errorf("nothing spilled to disk")
	}
	// 1 MiB of queues plus one batch (256 KiB at most) per connection to
	// each of five destinations.
	if bound := float64(1<<20 + 5*4*(256<<10)); mem > bound {
		t.Errorf("the queues hold %v bytes in memory, over the bound %v", mem, bound)
	}
	if st := n1.getRun(t, started.ID).Status; st != "running" {
		t.Fatalf("the run waiting for node 3 is %s", st)
	}
	down.start()
	done := n1.awaitRun(t, started.ID)
	if done.Status != "succeeded" {
		t.Fatalf("the run that waited: %s %s %s", done.Status, done.Code, done.Error)
	}
	for id, row := range want {
		if id%13 == 0 {
			row.Grp = -1
			want[id] = row
		}
	}
	got = readCommitted(t, down, "spread", done.Version)
	sameLedger(t, "the run that spilled", got, want)
	poll(t, 30*time.Second, "the backlog drained", func() bool { return backlogRows(t, n1, "") == 0 })
}

// startRun starts a run of adapter without waiting for it, and returns
// once it has read rows rows.
func (p *proc) startRun(t *testing.T, adapter string, rows int64) runRecord {
	t.Helper()
	r := p.mustCall(t, http.StatusAccepted, "POST", "/v1/adapters/"+adapter+"/runs", nil)
	var started runRecord
	if err := json.Unmarshal(r.body, &started); err != nil {
		t.Fatal(err)
	}
	poll(t, 120*time.Second, fmt.Sprintf("run %s reading %d rows", started.ID, rows), func() bool { return p.getRun(t, started.ID).RowsRead >= rows })
	return started
}

// awaitRun waits until run id is no longer running and returns its record.
func (p *proc) awaitRun(t *testing.T, id string) runRecord {
	t.Helper()
	var rec runRecord
	poll(t, 120*time.Second, "run "+id+" finished", func() bool {
		rec = p.getRun(t, id)
		return rec.Status != "running"
	})
	return rec
}

// refusedWithCount starts one more node configured with count partitions,
// which the stored table does not have: serve exits with code 2 naming
// both counts.
func (c *pcluster) refusedWithCount(count int) {
	t := c.t
	t.Helper()
	host := fmt.Sprintf("127.0.0.%d", len(c.nodes)+1)
	data, id := c.newDataDir()
	cmd := exec.Command(binPath, "serve")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + data}, c.env...)
	cmd.Env = append(cmd.Env, "SNAPSTORE_DATA="+data, "SNAPSTORE_LISTEN="+host+":0",
		"SNAPSTORE_CLUSTER_BIND="+gossipAddr(t, host), "SNAPSTORE_CLUSTER_JOIN="+c.gossip[0],
		fmt.Sprintf("SNAPSTORE_CLUSTER_PARTITIONS=%d", count),
		"SNAPSTORE_CLUSTER_TRANSFER_LISTEN="+gossipAddr(t, host),
		"SNAPSTORE_CLUSTER_TRANSFER_CERT_FILE="+filepath.Join(c.certs, id+".crt"),
		"SNAPSTORE_CLUSTER_TRANSFER_KEY_FILE="+filepath.Join(c.certs, id+".key"))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	want := fmt.Sprintf("the cluster's table has 32 partitions, this node is configured with %d (cluster.partitions)", count)
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), want) {
		t.Errorf("a node with %d partitions: %v\n%s", count, err, out)
	}
}

// orderRow is a row of the partition key test's SQLite table.
type orderRow struct {
	Region string
	Null   bool // the region is NULL
	Amount int64
}

// order returns the row of region (NULL when null) and amount.
func order(region string, null bool, amount int64) orderRow {
	if null {
		region = ""
	}
	return orderRow{region, null, amount}
}

// readOrders reads every row of dataset at version v on p (NDJSON).
func readOrders(t *testing.T, p *proc, dataset string, v int64) map[int64]orderRow {
	t.Helper()
	var out map[int64]orderRow
	poll(t, 10*time.Second, fmt.Sprintf("version %d of %s", v, dataset), func() bool {
		r, err := p.call("GET", "/v1/datasets/"+dataset+"/rows", nil, "Accept", "application/x-ndjson")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := strconv.ParseInt(r.header.Get("Snapstore-Version"), 10, 64); r.status != http.StatusOK || got != v {
			return false // the node has not read the commit yet
		}
		out = map[int64]orderRow{}
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		for sc.Scan() {
			var row struct {
				ID     int64   `json:"id"`
				Region *string `json:"region"`
				Amount int64   `json:"amount"`
			}
			if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
				t.Fatalf("%s: %q: %v", dataset, sc.Text(), err)
			}
			if _, dup := out[row.ID]; dup {
				t.Fatalf("%s version %d: row %d twice", dataset, v, row.ID)
			}
			o := orderRow{Null: row.Region == nil, Amount: row.Amount}
			if row.Region != nil {
				o.Region = *row.Region
			}
			out[row.ID] = o
		}
		return true
	})
	return out
}

// partitionWritten matches a node's log line for a partition it wrote.
var partitionWritten = regexp.MustCompile(`msg="partition written" (?:\S+ )*?dataset=(\S+) txn=(\d+) partition=(\d+) origin=\S+ rows=(\d+)`)

// partitionWriters returns, per partition of txn of dataset, the nodes
// (indexes) whose log says they wrote it and the rows they reported.
func (c *pcluster) partitionWriters(dataset string, txn int64) (writers map[int][]int, rows map[int]int64) {
	writers, rows = map[int][]int{}, map[int]int64{}
	for i, p := range c.nodes {
		b, err := os.ReadFile(p.logPath)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, m := range partitionWritten.FindAllStringSubmatch(string(b), -1) {
			if m[1] != dataset || m[2] != strconv.FormatInt(txn, 10) {
				continue
			}
			part, _ := strconv.Atoi(m[3])
			n, _ := strconv.ParseInt(m[4], 10, 64)
			writers[part] = append(writers[part], i)
			rows[part] += n
		}
	}
	return writers, rows
}

// expectedPlacement returns the rows of each partition of dataset as the
// partition key rule places want (snapshot.NewRouter over the version's
// schema), and the partition of the rows whose region is NULL.
func expectedPlacement(t *testing.T, p *proc, dataset string, v int64, want map[int64]orderRow) (map[int]int64, int) {
	t.Helper()
	var vi struct {
		Schema snapshot.Schema `json:"schema"`
	}
	p.jsonCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/%s/versions/%d", dataset, v), nil, &vi)
	var ds struct {
		Partitions   int      `json:"partitions"`
		PartitionKey []string `json:"partition_key"`
	}
	p.jsonCall(t, http.StatusOK, "GET", "/v1/datasets/"+dataset, nil, &ds)
	if !slices.Equal(ds.PartitionKey, []string{"region"}) {
		t.Fatalf("dataset %s shows partition key %v", dataset, ds.PartitionKey)
	}
	rt, err := snapshot.NewRouter(vi.Schema, ds.Partitions, ds.PartitionKey)
	if err != nil {
		t.Fatal(err)
	}
	value := func(col string, i int64, s string, null bool) snapshot.Value {
		k := vi.Schema.Columns[slices.IndexFunc(vi.Schema.Columns, func(c snapshot.Column) bool { return c.Name == col })].Kind
		switch {
		case null:
			return snapshot.Value{Kind: snapshot.KindNull}
		case k == snapshot.KindInt:
			return snapshot.Value{Kind: k, Int: i}
		case k == snapshot.KindString:
			return snapshot.Value{Kind: k, Bytes: []byte(s)}
		}
		t.Fatalf("column %s of kind %s", col, k)
		return snapshot.Value{}
	}
	out, nullPart := map[int]int64{}, -1
	vals := make([]snapshot.Value, len(vi.Schema.Columns))
	for id, r := range want {
		for j, c := range vi.Schema.Columns {
			switch c.Name {
			case "id":
				vals[j] = value("id", id, "", false)
			case "region":
				vals[j] = value("region", 0, r.Region, r.Null)
			case "amount":
				vals[j] = value("amount", r.Amount, "", false)
			}
		}
		_, part, err := rt.Route(vals)
		if err != nil {
			t.Fatal(err)
		}
		out[part]++
		if r.Null {
			if nullPart >= 0 && nullPart != part {
				t.Fatalf("NULL regions in partitions %d and %d", nullPart, part)
			}
			nullPart = part
		}
	}
	return out, nullPart
}

// checkPlacement checks that each partition of the run rec of dataset was
// written by one node, with the rows the partition key places in it, and
// returns the node that wrote the rows whose region is NULL.
func (c *pcluster) checkPlacement(dataset string, rec runRecord, want map[int64]orderRow) int {
	t := c.t
	t.Helper()
	wantRows, nullPart := expectedPlacement(t, c.nodes[0], dataset, rec.Version, want)
	v := rec.TxnID
	writers, rows := c.partitionWriters(dataset, v)
	var spread []string
	for part := range c.partitionCount(dataset) {
		if len(writers[part]) != 1 {
			t.Errorf("partition %d of txn %d written by nodes %v", part, v, writers[part])
		}
		if rows[part] != wantRows[part] {
			t.Errorf("partition %d of txn %d: %d rows written, the partition key places %d there", part, v, rows[part], wantRows[part])
		}
		if wantRows[part] > 0 {
			spread = append(spread, fmt.Sprintf("%d:%d", part, wantRows[part]))
		}
	}
	t.Logf("txn %d: rows by partition %v; the NULL regions in partition %d", v, spread, nullPart)
	if nullPart < 0 || len(writers[nullPart]) != 1 {
		t.Fatalf("txn %d: no one writer of the NULL regions' partition %d: %v", v, nullPart, writers[nullPart])
	}
	return writers[nullPart][0]
}

// partitionCount returns the partitions of dataset.
func (c *pcluster) partitionCount(dataset string) int {
	var ds struct {
		Partitions int `json:"partitions"`
	}
	c.nodes[0].jsonCall(c.t, http.StatusOK, "GET", "/v1/datasets/"+dataset, nil, &ds)
	return ds.Partitions
}

// diffKeys lists a diff's lines as "op key".
func diffKeys(lines []diffLine) []string {
	var out []string
	for _, l := range lines {
		k, _ := json.Marshal(l.Key)
		out = append(out, l.Op+" "+string(k))
	}
	return out
}

// TestPartitionedRunsPartitionKey runs three nodes over one HBase table
// and a SQLite table whose partition-by-key adapter places rows by a
// nullable column that is not the key (partition_key: [region]), a tenth
// of it NULL (docs/cluster.md, "A partition key other than the key"):
//
//   - the version equals the source, and a local adapter's version of the
//     same table (rows, checksum, counts);
//   - every partition is written by one node with exactly the rows the
//     partition key places there (each node's "partition written" log
//     lines), so every row whose region is NULL was written by one node;
//   - a second run after regions changed (NULL to a value, a value to
//     NULL, a value to another), updates, deletes and inserts gives the
//     exact new version; each moved row counts as a delete and an insert
//     where the local run counts an update, and the diff between the two
//     versions equals the local dataset's (a moved row is an update); a
//     point read of a moved row finds it at both versions.
func TestPartitionedRunsPartitionKey(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	const rows = 6000
	src := filepath.Join(t.TempDir(), "orders.db")
	cli(t, "sqlite", src, fmt.Sprintf(`CREATE TABLE orders(id INTEGER PRIMARY KEY, region TEXT, amount INTEGER NOT NULL);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < %d)
INSERT INTO orders SELECT i, CASE WHEN i %% 10 = 0 THEN NULL ELSE 'r' || (i %% 13) END, i FROM c;`, rows))
	cfg := fmt.Sprintf(`connections: [{name: src, type: sqlite, options: {path: %q}}]
adapters:
  - {name: byregion, connection: src, resource: orders, strategy: partition-by-key, partition_key: [region], guard: {max_shrink: 1}}
  - {name: local, connection: src, resource: orders, dataset: byregion_local, guard: {max_shrink: 1}}
`, src)
	c := startPartitionedCluster(t, 3, cfg, "1m")
	n1, n2, n3 := c.nodes[0], c.nodes[1], c.nodes[2]
	want := map[int64]orderRow{}
	for i := int64(1); i <= rows; i++ {
		want[i] = order(fmt.Sprintf("r%d", i%13), i%10 == 0, i)
	}

	rec := n1.mustRun(t, "byregion")
	local := n1.mustRun(t, "local")
	if rec.Stats != local.Stats || rec.Stats.Inserted != rows {
		t.Errorf("partitioned run's stats %+v, the local run's %+v", rec.Stats, local.Stats)
	}
	sameLedger(t, "first version", readOrders(t, n2, "byregion", rec.Version), want)
	if a, b := checksumOf(t, n1, "byregion", rec.Version), checksumOf(t, n1, "byregion_local", local.Version); a != b || a == "" {
		t.Errorf("checksum %q partitioned, %q local", a, b)
	}
	w := c.checkPlacement("byregion", rec, want)
	t.Logf("first run: the %d rows whose region is NULL were written by node %d (%s)", rows/10, w+1, c.ids[w])

	// Regions change: rows move between partitions.
	cli(t, "sqlite", src, fmt.Sprintf(`UPDATE orders SET region = CASE WHEN region IS NULL THEN 'from-null' ELSE NULL END WHERE id %% 9 = 0;
UPDATE orders SET region = 'r' || ((id %% 13) + 1) WHERE id %% 11 = 0 AND id %% 9 != 0 AND region IS NOT NULL;
UPDATE orders SET amount = amount + 1 WHERE id %% 17 = 0;
DELETE FROM orders WHERE id %% 50 = 0;
WITH RECURSIVE c(i) AS (SELECT %d UNION ALL SELECT i+1 FROM c WHERE i < %d)
INSERT INTO orders SELECT i, CASE WHEN i %% 2 = 0 THEN NULL ELSE 'new' END, i FROM c;`, rows+1, rows+200))
	for i := int64(1); i <= rows; i++ {
		r := want[i]
		switch {
		case i%9 == 0 && r.Null:
			r = order("from-null", false, r.Amount)
		case i%9 == 0:
			r = order("", true, r.Amount)
		case i%11 == 0 && !r.Null:
			r.Region = fmt.Sprintf("r%d", i%13+1)
		}
		if i%17 == 0 {
			r.Amount++
		}
		want[i] = r
		if i%50 == 0 {
			delete(want, i)
		}
	}
	for i := int64(rows + 1); i <= rows+200; i++ {
		want[i] = order("new", i%2 == 0, i)
	}
	rec2 := n1.mustRun(t, "byregion")
	local2 := n1.mustRun(t, "local")
	sameLedger(t, "second version", readOrders(t, n3, "byregion", rec2.Version), want)
	if a, b := checksumOf(t, n1, "byregion", rec2.Version), checksumOf(t, n1, "byregion_local", local2.Version); a != b {
		t.Errorf("second checksum %q partitioned, %q local", a, b)
	}
	moved := local2.Stats.Updated - rec2.Stats.Updated
	s, l := rec2.Stats, local2.Stats
	if moved <= 0 || s.Rows != l.Rows || s.Unchanged != l.Unchanged || s.Inserted-l.Inserted != moved || s.Deleted-l.Deleted != moved {
		t.Errorf("second run's stats %+v, the local run's %+v: moved rows should count as a delete and an insert", s, l)
	}
	t.Logf("second run: %d rows moved between partitions; partitioned %+v, local %+v", moved, s, l)
	w = c.checkPlacement("byregion", rec2, want)
	t.Logf("second run: the rows whose region is NULL were written by node %d (%s)", w+1, c.ids[w])

	got, wantDiff := diffKeys(n2.readDiff(t, "byregion", rec.Version, rec2.Version)), diffKeys(n2.readDiff(t, "byregion_local", local.Version, local2.Version))
	if !slices.Equal(got, wantDiff) || len(got) == 0 {
		t.Errorf("diff across the moves: %d lines, the local dataset's %d (first %v / %v)", len(got), len(wantDiff), got[:min(3, len(got))], wantDiff[:min(3, len(wantDiff))])
	}
	// Row 18: region r5, then NULL (moved); row 9 from r9 to NULL.
	for _, id := range []int64{9, 18} {
		for _, v := range []int64{rec.Version, rec2.Version} {
			var row struct {
				Row struct {
					Region *string `json:"region"`
				} `json:"row"`
			}
			r := n3.mustCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/byregion/rows/%d?version=%d", id, v), nil)
			if err := json.Unmarshal(r.body, &row); err != nil {
				t.Fatal(err)
			}
			if (row.Row.Region == nil) != (v == rec2.Version) {
				t.Errorf("row %d at version %d: region %v", id, v, row.Row.Region)
			}
		}
	}
}
