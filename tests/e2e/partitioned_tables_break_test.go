package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPartitionedTablesSourceChanges runs a partition-by-key adapter of
// two tables on a cluster of two nodes while the source changes under it
// (docs/cluster.md, partitioned runs of several tables):
//
//   - a column added to one table and filled in: the next version holds
//     it in that table, with the rows one node's adapter reads;
//   - the table dropped at the source: the run fails and every table
//     stays at the version before; the table created again: the next run
//     succeeds;
//   - the coordinator killed mid-run: nothing of its run is visible, and
//     once it is back a run commits every table whole.
func TestPartitionedTablesSourceChanges(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	const rows = 30000
	src := shopTables(t, rows)
	cfg := fmt.Sprintf(`connections: [{name: src, type: sqlite, options: {path: %q}}]
adapters:
  - {name: spread, connection: src, resources: [ledger, lines], dataset: shop, strategy: partition-by-key, transfer_compression: metadata, guard: {max_shrink: 1}}
  - {name: single, connection: src, resources: [ledger, lines], dataset: local, guard: {max_shrink: 1}}
`, src)
	// A short writer slot lease: the run after the coordinator's death
	// waits for its slot to expire.
	c := startPartitionedCluster(t, 2, cfg, "8s", "SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_LEASE=6s", "SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_RENEW=2s")
	n1, n2 := c.nodes[0], c.nodes[1]
	n1.mustRun(t, "spread")
	n1.mustRun(t, "single")

	// A column added to one table.
	cli(t, "sqlite", src, `ALTER TABLE lines ADD COLUMN note TEXT;
UPDATE lines SET note = 'n-' || order_id WHERE order_id % 3 = 0;
UPDATE ledger SET name = 'renamed' WHERE id % 11 = 0;`)
	rec := n1.mustRun(t, "spread")
	single := n1.mustRun(t, "single")
	if rec.Stats != single.Stats || rec.Stats.Updated == 0 {
		t.Errorf("run after a column was added: stats %+v, one node's %+v", rec.Stats, single.Stats)
	}
	sameTables(t, "after a column was added", n2, "shop", rec.Version, n1, "local", "ledger", "lines")
	if a, b := checksumOf(t, n1, "shop", rec.Version), checksumOf(t, n1, "local", single.Version); a != b || a == "" {
		t.Errorf("checksum %q partitioned, %q by one node", a, b)
	}

	// The table dropped at the source, then created again.
	cli(t, "sqlite", src, "ALTER TABLE lines RENAME TO lines_saved; UPDATE ledger SET name = 'gone' WHERE id % 13 = 0;")
	failed, err := n1.runWait("spread")
	if err != nil {
		t.Fatal(err)
	}
	if failed.Status != "failed" {
		t.Fatalf("a run of a dropped table: %s %s", failed.Status, failed.Error)
	}
	for _, table := range []string{"ledger", "lines"} {
		got, v := tableRows(t, n2, "shop", table)
		if v != rec.Version {
			t.Fatalf("after the run of a dropped table node 2 reads version %d, want %d", v, rec.Version)
		}
		if slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, `"gone"`) }) {
			t.Fatalf("table %s shows a row of the failed run", table)
		}
	}
	cli(t, "sqlite", src, "ALTER TABLE lines_saved RENAME TO lines;")
	rec = n1.mustRun(t, "spread")
	single = n1.mustRun(t, "single")
	sameTables(t, "after the table came back", n2, "shop", rec.Version, n1, "local", "ledger", "lines")

	// The coordinator killed mid-run.
	cli(t, "sqlite", src, "UPDATE ledger SET amount = amount + 1 WHERE id % 7 = 0; UPDATE lines SET sku = 'late' WHERE line = 2;")
	n1.startRun(t, "spread", 2000)
	n1.kill()
	for _, table := range []string{"ledger", "lines"} {
		got, v := tableRows(t, n2, "shop", table)
		if v != rec.Version {
			t.Fatalf("after the coordinator died node 2 reads version %d, want %d", v, rec.Version)
		}
		if slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, `"late"`) }) {
			t.Fatalf("table %s shows a row of the dead run", table)
		}
	}
	n1.start()
	var next runRecord
	poll(t, 120*time.Second, "a run on node 2 once the dead run's slot expired", func() bool {
		next, err = n2.runWait("spread")
		if err != nil {
			if strings.Contains(err.Error(), "run_in_progress") {
				time.Sleep(time.Second)
				return false
			}
			t.Fatal(err)
		}
		if next.Status != "succeeded" {
			if next.Code != "run_in_progress" && next.Code != "node_unreachable" {
				t.Fatalf("a run after the coordinator died: %s %s %s", next.Status, next.Code, next.Error)
			}
			time.Sleep(time.Second)
			return false
		}
		return true
	})
	single = n2.mustRun(t, "single")
	sameTables(t, "after the coordinator died", n1, "shop", next.Version, n2, "local", "ledger", "lines")
	if a, b := checksumOf(t, n2, "shop", next.Version), checksumOf(t, n2, "local", single.Version); a != b || a == "" {
		t.Errorf("checksum %q partitioned, %q by one node", a, b)
	}
}
