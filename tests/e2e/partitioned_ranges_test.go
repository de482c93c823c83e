package e2e

import (
	"fmt"
	"net/http"
	"testing"
)

// rangesRows is the size of the source table of TestPartitionedRunsSkipRanges:
// 12 key ranges of the source digest (adapters.digestChunkRows).
const rangesRows = 60000

// TestPartitionedRunsSkipRanges runs a partition-by-key adapter on a
// cluster of three nodes over one HBase table, changes rows in four key
// ranges of the source (updates, deletes, a row deleted and inserted
// again with other values, inserts past the last key), and checks that the next run reads and sends only those
// ranges, the owners carrying the other eight over (docs/cluster.md,
// partitioned runs): mode chunks, eight of twelve chunks skipped, the
// rows read and applied those of the four ranges; the committed version
// equals the source row by row, and has the counts and checksum that a
// run of one node of the same source commits; so does that of an adapter
// placing rows by another column, whose rows move between partitions
// when that column changes (its rows and checksum). A second round on the
// version that run committed does the same, and a run with nothing
// changed after it verifies.
func TestPartitionedRunsSkipRanges(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	src := ledgerTable(t, rangesRows)
	c := partitionedCluster(t, 3, src, "1m")
	n1 := c.nodes[0]

	want := map[int64]sourceRow{}
	for i := int64(1); i <= rangesRows; i++ {
		want[i] = sourceRow{fmt.Sprintf("name-%d", i), float64(i) / 2, i % 97}
	}
	// An adapter placing rows by grp, which moves a row between partitions
	// when its grp changes.
	n1.jsonCall(t, http.StatusCreated, "PUT", "/v1/adapters/keyed",
		map[string]any{"connection": "src", "resource": "ledger", "strategy": "partition-by-key", "partition_key": []string{"grp"}, "guard": map[string]any{"max_shrink": 1}}, nil)
	// Two runs of each: the second records the ranges' source checksums.
	for _, a := range []string{"spread", "keyed", "single"} {
		n1.mustRun(t, a)
		n1.mustRun(t, a)
	}

	applied := func() (sum float64) {
		for _, p := range c.nodes {
			sum += p.metric(t, "snapstore_cluster_partition_rows_applied_total")
		}
		return sum
	}
	type chunked struct {
		Mode          string `json:"mode"`
		RowsRead      int64  `json:"rows_read"`
		Chunks        int    `json:"chunks"`
		ChunksSkipped int    `json:"chunks_skipped"`
	}
	round := func(what, sql string, rowsRead int64) runRecord {
		t.Helper()
		cli(t, "sqlite", src, sql)
		before := applied()
		run := n1.mustRun(t, "spread")
		var rec chunked
		n1.jsonCall(t, http.StatusOK, "GET", "/v1/runs/"+run.ID, nil, &rec)
		if rec.Mode != "chunks" || rec.Chunks != 12 || rec.ChunksSkipped != 8 || rec.RowsRead != rowsRead {
			t.Errorf("%s: mode %q, %d of %d chunks skipped, %d rows read; want chunks, 8 of 12, %d", what, rec.Mode, rec.ChunksSkipped, rec.Chunks, rec.RowsRead, rowsRead)
		}
		if got := applied() - before; got != float64(rowsRead) {
			t.Errorf("%s: the nodes applied %v rows, want the %d of the changed ranges", what, got, rowsRead)
		}
		sameLedger(t, what, readCommitted(t, c.nodes[1], "spread", run.Version), want)
		keyed := n1.mustRun(t, "keyed")
		if mode := n1.runMode(t, keyed.ID); mode != "chunks" {
			t.Errorf("%s, placed by grp: mode %q, want chunks", what, mode)
		}
		sameLedger(t, what+", placed by grp", readCommitted(t, c.nodes[2], "keyed", keyed.Version), want)
		one := n1.mustRun(t, "single")
		// A row that moved partitions counts as deleted and inserted
		// (snapshot.D6); the rows and the checksum are those of any
		// placement.
		if run.Stats != one.Stats || keyed.Stats.Rows != one.Stats.Rows {
			t.Errorf("%s: stats %+v, placed by grp %+v, a run of one node: %+v", what, run.Stats, keyed.Stats, one.Stats)
		}
		for _, r := range []runRecord{run, keyed} {
			if a, b := checksumOf(t, n1, r.Dataset, r.Version), checksumOf(t, n1, "single", one.Version); a != b || a == "" {
				t.Errorf("%s: checksum of %s %q, a run of one node's %q", what, r.Adapter, a, b)
			}
		}
		return run
	}

	// Ranges 2, 5, 8 and the last (ids 10001-15000, 25001-30000,
	// 40001-45000, 55001-): updates, deletes, a row deleted and inserted
	// again, rows past the last key.
	for i := int64(12000); i <= 12009; i++ {
		want[i] = sourceRow{"changed", want[i].Amount, want[i].Grp}
	}
	for i := int64(27000); i <= 27019; i++ {
		delete(want, i)
	}
	delete(want, 42000)
	want[42002] = sourceRow{"gap", 1, 2}
	want[42001] = sourceRow{want[42001].Name, -1, want[42001].Grp}
	for i := int64(60001); i <= 60100; i++ {
		want[i] = sourceRow{"new", 0, 0}
	}
	first := round("a change in four ranges", `UPDATE ledger SET name = 'changed' WHERE id BETWEEN 12000 AND 12009;
DELETE FROM ledger WHERE id BETWEEN 27000 AND 27019;
DELETE FROM ledger WHERE id IN (42000, 42002);
INSERT INTO ledger VALUES (42002, 'gap', 1, 2);
UPDATE ledger SET amount = -1 WHERE id = 42001;
INSERT INTO ledger SELECT id + 60000, 'new', 0, 0 FROM ledger WHERE id <= 100;`,
		5000+4980+4999+5100)
	if s := first.Stats; s.Updated != 12 || s.Deleted != 21 || s.Inserted != 100 || s.Rows != int64(len(want)) {
		t.Errorf("a change in four ranges: stats %+v, want 12 updated, 21 deleted, 100 inserted, %d rows", s, len(want))
	}
	// The version the chunk-mode run committed carries ranges over too.
	for _, id := range []int64{3, 17003, 33003, 52003} {
		want[id] = sourceRow{want[id].Name, want[id].Amount, 1000}
	}
	second := round("a change in four ranges of the version that carried", `UPDATE ledger SET grp = 1000 WHERE id IN (3, 17003, 33003, 52003);`, 4*5000)
	if v := n1.mustRun(t, "spread"); n1.runMode(t, v.ID) != "verify" || !v.Verified {
		t.Errorf("a run with nothing changed after: mode %q verified %v, want verify", n1.runMode(t, v.ID), v.Verified)
	}
	sameLedger(t, "after all", readCommitted(t, c.nodes[2], "spread", second.Version), want)
}
