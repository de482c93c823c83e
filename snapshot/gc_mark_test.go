package snapshot

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestGCMarkSkipsOnlyWhatItProved (G10): two DBs on two stores go through
// the same runs, aborts, readers, tags, rollback and retention changes;
// one GC skips reading the rows when the previous GC's mark allows it, the
// other (gcReadsAll) always reads every version. After every GC both
// reports and both stores' cells must be the same, so a skip that kept a
// cell the full GC deletes (a version expired, a reader closed, a failed
// run) or deleted one it keeps (a pinned or min-versions version, a
// tag) fails; and the skip must have happened where the test says.
func TestGCMarkSkipsOnlyWhatItProved(t *testing.T) {
	ctx := context.Background()
	var clock atomic.Int64
	clock.Store(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	var skipped atomic.Int64
	hook := func(point string, _ int64) {
		if point == "gc:skipped" {
			skipped.Add(1)
		}
	}
	db := openTestDB(t, newTestStore(t), Options{now: now, pruneGrace: -1, batchSize: 1, hook: hook})
	ref := openTestDB(t, newTestStore(t), Options{now: now, pruneGrace: -1, batchSize: 1, gcReadsAll: true})
	dbs := []*DB{db, ref}

	cfg := DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 1}, Retention: Retention{TTL: time.Hour, MinVersions: 1}}
	setRetention := func(ret Retention) {
		t.Helper()
		cfg.Retention = ret
		for _, d := range dbs {
			if err := d.SetConfig(ctx, cfg); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows := func(names ...string) [][]Value {
		var out [][]Value
		for i, n := range names {
			if n != "" {
				out = append(out, []Value{iv(int64(i + 1)), sv(n)})
			}
		}
		return out
	}
	// run commits (or with abort, aborts) the same run on both and
	// returns its id, the same on both.
	run := func(abort bool, names ...string) int64 {
		t.Helper()
		var ids []int64
		for _, d := range dbs {
			r, err := d.BeginRun(ctx, cfg, RunOptions{Schema: testSchema})
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range rows(names...) {
				if err := r.Put(ctx, row); err != nil {
					t.Fatal(err)
				}
			}
			if abort {
				if err := r.Abort(ctx, "test"); err != nil {
					t.Fatal(err)
				}
			} else if _, err := r.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.TxnID())
		}
		if ids[0] != ids[1] {
			t.Fatalf("the two stores gave ids %v", ids)
		}
		return ids[0]
	}
	// gc collects both, dry then for real, checks that the reports and
	// the cells agree and whether the first skipped, and returns ref's
	// real report.
	gc := func(step string, wantSkip bool) GCReport {
		t.Helper()
		var last GCReport
		for _, dry := range []bool{true, false} {
			skipped.Store(0)
			var reps []GCReport
			for _, d := range dbs {
				rep, err := d.GC(ctx, "t", dry)
				if err != nil {
					t.Fatalf("%s: gc (dry %v): %v", step, dry, err)
				}
				reps = append(reps, rep)
			}
			if got, want := fmt.Sprintf("%+v", reps[0]), fmt.Sprintf("%+v", reps[1]); got != want {
				t.Fatalf("%s: gc (dry %v) reported\n%s\nreading every version:\n%s", step, dry, got, want)
			}
			if got := skipped.Load() > 0; got != wantSkip {
				t.Fatalf("%s: gc (dry %v) skipped the rows: %v, want %v", step, dry, got, wantSkip)
			}
			last = reps[1]
		}
		a, err := logicalCells(db, "t")
		if err != nil {
			t.Fatal(err)
		}
		b, err := logicalCells(ref, "t")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(a), fmt.Sprint(b); got != want {
			t.Fatalf("%s: cells after gc\n%s\nreading every version:\n%s", step, got, want)
		}
		return last
	}

	v1 := run(false, "a", "b", "c")
	advance(10 * time.Minute)
	run(false, "A", "b", "c")
	gc("no mark yet", false)
	gc("nothing changed", true)

	failed := run(true, "A", "x", "c", "d")
	if rep := gc("a failed run", true); rep.CellsOfInvalidTxns == 0 || rep.CellsDeleted != rep.CellsOfInvalidTxns || rep.InvalidTxnsPruned != 1 {
		t.Fatalf("gc after failed run %d: %+v, want its cells deleted and it pruned", failed, rep)
	}
	run(false, "A", "b") // row 3 deleted
	gc("a new version", true)

	// A Reader at v1 keeps its cells through a GC that expires v1; once
	// it is closed, the next GC must read the rows again to delete them.
	var readers []*Reader
	for _, d := range dbs {
		r, err := d.Reader(ctx, "t", At{Version: v1})
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, r)
	}
	advance(2 * time.Hour)
	if rep := gc("expiry under a reader", false); len(rep.VersionsExpired) == 0 {
		t.Fatalf("nothing expired: %+v", rep)
	}
	for _, r := range readers {
		r.Close()
	}
	if rep := gc("the reader closed", false); rep.CellsDeleted == 0 {
		t.Fatalf("nothing deleted after the reader closed: %+v", rep)
	}
	gc("nothing changed again", true)

	// Versions that min_versions keeps, then a tag, then a rollback.
	setRetention(Retention{TTL: time.Hour, MinVersions: 3})
	v4 := run(false, "B", "b", "e")
	advance(2 * time.Hour)
	run(false, "C", "b")
	gc("kept by min_versions", true)
	for _, d := range dbs {
		if err := d.Tag(ctx, "t", "keep", v4); err != nil {
			t.Fatal(err)
		}
	}
	setRetention(Retention{TTL: time.Hour, MinVersions: 1})
	advance(2 * time.Hour)
	if rep := gc("expiry beside a tag", false); len(rep.VersionsExpired) == 0 || slices.Contains(rep.VersionsExpired, v4) {
		t.Fatalf("expired %v, want some but not tagged %d", rep.VersionsExpired, v4)
	}
	setRetention(Retention{TTL: time.Hour, MinVersions: 3})
	var ids []int64
	for _, d := range dbs {
		vi, err := d.Rollback(ctx, "t", v4)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, vi.Version)
	}
	if ids[0] != ids[1] {
		t.Fatalf("the two stores gave ids %v", ids)
	}
	gc("a rollback", true)
	for _, d := range dbs {
		if err := d.Untag(ctx, "t", "keep"); err != nil {
			t.Fatal(err)
		}
	}
	setRetention(Retention{TTL: time.Hour, MinVersions: 1})
	advance(2 * time.Hour)
	if rep := gc("the tag gone", false); rep.CellsDeleted == 0 {
		t.Fatalf("nothing deleted once the tag was gone: %+v", rep)
	}
	gc("at rest", true)
}
