package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// skipRows is the size of the source table of TestPartitionedRunsSkip:
// 8 key ranges of the source digest (adapters.digestChunkRows).
const skipRows = 40000

// TestPartitionedRunsSkip runs a partition-by-key adapter on a cluster of
// three nodes over one HBase table, and checks that its runs skip what
// did not change as a run of one node does (docs/adapters.md, verified
// runs; docs/cluster.md, partitioned runs):
//
//   - the second run of an unchanged source reads it and records the
//     version verified with the source's key-range checksums;
//   - the third finds every range unchanged on its coordinator: mode
//     verify, verified, no new version, the current version's verified_at
//     set, and no node writes a row or a cell;
//   - a change in one range: the run commits a version equal to the
//     source, and the next run, with nothing changed, verifies again;
//   - a run of another partition key with nothing changed fails with
//     code partition_key, as any run of it does.
func TestPartitionedRunsSkip(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	src := ledgerTable(t, skipRows)
	c := partitionedCluster(t, 3, src, "1m")
	n1 := c.nodes[0]

	want := map[int64]sourceRow{}
	for i := int64(1); i <= skipRows; i++ {
		want[i] = sourceRow{fmt.Sprintf("name-%d", i), float64(i) / 2, i % 97}
	}
	first := n1.mustRun(t, "spread")
	sameLedger(t, "first version", readCommitted(t, n1, "spread", first.Version), want)
	second := n1.mustRun(t, "spread")
	if !second.Verified || second.Version != first.Version {
		t.Fatalf("second run of an unchanged source: verified %v version %d, want verified %d", second.Verified, second.Version, first.Version)
	}

	// Nothing changed: verified on the coordinator, nothing written.
	written := func() (out []float64) {
		for _, p := range c.nodes {
			out = append(out, p.metric(t, "snapstore_cluster_partition_rows_applied_total"), p.metric(t, "snapstore_snapshot_cells_written_total"))
		}
		return out
	}
	before := written()
	for _, v := range before {
		if v < 0 {
			t.Fatalf("a node does not serve the metrics of rows applied and cells written: %v", before)
		}
	}
	third := n1.mustRun(t, "spread")
	if mode := n1.runMode(t, third.ID); mode != "verify" || !third.Verified || third.Version != first.Version {
		t.Errorf("run with nothing changed: mode %q verified %v version %d, want verify, verified, version %d", mode, third.Verified, third.Version, first.Version)
	}
	if third.Stats.Rows != skipRows || third.Stats.Unchanged != skipRows || third.Stats.Inserted+third.Stats.Updated+third.Stats.Deleted != 0 {
		t.Errorf("run with nothing changed: stats %+v", third.Stats)
	}
	if after := written(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("rows applied and cells written by nodes 1-3 were %v before the run with nothing changed, %v after", before, after)
	}
	vs := n1.versions(t, "spread")
	ended, err := time.Parse(time.RFC3339Nano, third.EndedAt)
	if len(vs) != 1 || vs[0].Version != first.Version || !vs[0].Current || err != nil || vs[0].VerifiedAt == nil || vs[0].VerifiedAt.After(ended) ||
		!vs[0].VerifiedAt.After(vs[0].CommittedAt) {
		t.Errorf("versions after the run with nothing changed: %+v (run ended %s), want version %d current and verified", vs, third.EndedAt, first.Version)
	}
	t.Logf("runs of %d rows over 3 nodes, nothing changed: %s read in full, %s verified on the coordinator",
		skipRows, runTime(t, second), runTime(t, third))

	// A change in one range.
	cli(t, "sqlite", src, "UPDATE ledger SET name = 'changed' WHERE id = 12345;")
	want[12345] = sourceRow{"changed", 12345.0 / 2, 12345 % 97}
	changed := n1.mustRun(t, "spread")
	if changed.Verified || changed.Version == first.Version || changed.Stats.Updated != 1 || changed.Stats.Rows != skipRows {
		t.Errorf("run after a change in one range: verified %v version %d stats %+v", changed.Verified, changed.Version, changed.Stats)
	}
	sameLedger(t, "version after a change in one range", readCommitted(t, c.nodes[1], "spread", changed.Version), want)
	again := n1.mustRun(t, "spread")
	if mode := n1.runMode(t, again.ID); mode != "verify" || again.Version != changed.Version {
		t.Errorf("run with nothing changed after the change: mode %q version %d, want verify of %d", mode, again.Version, changed.Version)
	}

	// Another partition key, nothing changed: the run begins and is
	// refused, rather than verifying rows the dataset stores otherwise.
	keyed := map[string]any{"connection": "src", "resource": "ledger", "strategy": "partition-by-key"}
	n1.jsonCall(t, http.StatusCreated, "PUT", "/v1/adapters/keyed", keyed, nil)
	n1.mustRun(t, "keyed")
	n1.mustRun(t, "keyed")
	if v := n1.mustRun(t, "keyed"); n1.runMode(t, v.ID) != "verify" {
		t.Fatalf("adapter keyed, nothing changed: mode %q, want verify", n1.runMode(t, v.ID))
	}
	keyed["partition_key"] = []string{"grp"}
	n1.jsonCall(t, http.StatusOK, "PUT", "/v1/adapters/keyed", keyed, nil)
	refused, err := n1.runWait("keyed")
	if err != nil {
		t.Fatal(err)
	}
	if refused.Status != "failed" || refused.Code != "partition_key" {
		t.Errorf("a run of another partition key, nothing changed: %s %s %s, want failed partition_key", refused.Status, refused.Code, refused.Error)
	}
	if vs := n1.versions(t, "keyed"); len(vs) != 1 {
		t.Errorf("versions after the refused run: %v, want one", versionIDs(vs))
	}
}

// runTime is how long run r took.
func runTime(t *testing.T, r runRecord) time.Duration {
	t.Helper()
	a, err1 := time.Parse(time.RFC3339Nano, r.StartedAt)
	b, err2 := time.Parse(time.RFC3339Nano, r.EndedAt)
	if err1 != nil || err2 != nil {
		t.Fatalf("run %s: times %q %q", r.ID, r.StartedAt, r.EndedAt)
	}
	return b.Sub(a).Round(time.Millisecond)
}
