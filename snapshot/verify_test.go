package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
)

// TestCarry: a run that puts some rows and carries ranges of the previous
// version over (Run.Carry) commits what a run putting every row would:
// the same rows and checksum (D6), rows neither put nor carried before a
// carried range deleted, on one partition and on three.
func TestCarry(t *testing.T) {
	for _, parts := range []int{1, 3} {
		t.Run(fmt.Sprint("partitions=", parts), func(t *testing.T) {
			ctx := context.Background()
			db := openTestDB(t, newTestStore(t), Options{Partitions: parts})
			row := func(i int, gen string) []Value { return []Value{iv(int64(i)), sv(fmt.Sprintf("%s %d", gen, i))} }
			// Run 1: rows 0..99, recording the checksum sums of 10..59 and
			// 60..99 as a source's digest would.
			r1, err := db.BeginRun(ctx, DatasetConfig{Name: "t"}, RunOptions{Schema: testSchema})
			if err != nil {
				t.Fatal(err)
			}
			var at10, at60 uint64
			for i := range 100 {
				switch i {
				case 10:
					_, at10 = r1.Progress()
				case 60:
					_, at60 = r1.Progress()
				}
				if err := r1.Put(ctx, row(i, "a")); err != nil {
					t.Fatal(err)
				}
			}
			v1, err := r1.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Run 2: rows 0..4 put, 5..9 gone, 10..59 carried, 60..99 put
			// with 60..69 changed.
			r2, err := db.BeginRun(ctx, DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if err := r2.Put(ctx, row(i, "a")); err != nil {
					t.Fatal(err)
				}
			}
			if err := r2.Carry(ctx, []Value{iv(9)}, []Value{iv(59)}, 50, at60-at10); err != nil {
				t.Fatal(err)
			}
			for i := 60; i < 100; i++ {
				gen := "a"
				if i < 70 {
					gen = "b"
				}
				if err := r2.Put(ctx, row(i, gen)); err != nil {
					t.Fatal(err)
				}
			}
			v2, err := r2.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st := v2.Stats; st.Rows != 95 || st.Unchanged != 85 || st.Updated != 10 || st.Deleted != 5 || st.Inserted != 0 {
				t.Errorf("carry run stats %+v", st)
			}
			// A run putting every row of run 2's content gives the same
			// checksum and finds nothing changed.
			r3, err := db.BeginRun(ctx, DatasetConfig{Name: "t"}, RunOptions{Schema: testSchema})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 100 {
				if i >= 5 && i < 10 {
					continue
				}
				gen := "a"
				if i >= 60 && i < 70 {
					gen = "b"
				}
				if err := r3.Put(ctx, row(i, gen)); err != nil {
					t.Fatal(err)
				}
			}
			v3, err := r3.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if v3.Stats.Checksum != v2.Stats.Checksum || v3.Stats.Unchanged != 95 {
				t.Errorf("full run after the carry run: %+v; carry run's checksum %s", v3.Stats, v2.Stats.Checksum)
			}
			if got := readRows(t, db, v2.Version); len(got) != 95 || got[9] != `{"id":14,"name":"a 14"}` || got[60] != `{"id":65,"name":"b 65"}` {
				t.Errorf("rows at the carry run's version: %d, %v", len(got), got[:min(12, len(got))])
			}
			if got := readRows(t, db, v1.Version); len(got) != 100 {
				t.Errorf("%d rows at version 1", len(got))
			}
		})
	}
}

// TestCarryRefused: Carry after the source order broke, or to a key not
// after the last one, is ErrInvalidArgument and changes nothing.
func TestCarryRefused(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	runRows(t, db, [][]Value{{iv(1), sv("a")}, {iv(2), sv("b")}, {iv(3), sv("c")}})
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "t"}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Abort(ctx, "test")
	if err := r.Put(ctx, []Value{iv(2), sv("b")}); err != nil {
		t.Fatal(err)
	}
	if err := r.Carry(ctx, nil, []Value{iv(2)}, 1, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("carry to the last key put: %v", err)
	}
	if err := r.Put(ctx, []Value{iv(1), sv("a")}); err != nil { // phase B
		t.Fatal(err)
	}
	if err := r.Carry(ctx, []Value{iv(2)}, []Value{iv(3)}, 1, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("carry in phase B: %v", err)
	}
}

// TestVerifyUnchanged: with RunOptions.VerifyUnchanged a run that changes
// nothing commits no version: the previous version gets VerifiedAt and the
// run's digest, the run's transaction ends invalid and GC prunes it; a run
// that changes a row commits. DB.Verify refuses a version that is not the
// current one, and a version's digest goes with it.
func TestVerifyUnchanged(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	db := openTestDB(t, newTestStore(t), Options{now: func() time.Time { return clock }})
	rows := [][]Value{{iv(1), sv("a")}, {iv(2), sv("b")}}
	run := func(rows [][]Value, digest string) (*Run, VersionInfo) {
		t.Helper()
		r := beginVerifying(t, db, rows)
		r.SetSourceDigest([]byte(digest))
		vi, err := r.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r, vi
	}
	r1, v1 := run(rows, "d1")
	if r1.Verified() || v1.VerifiedAt != nil {
		t.Fatalf("first run verified: %+v", v1)
	}
	clock = clock.Add(time.Hour)
	r2, v2 := run(rows, "d2")
	if !r2.Verified() || v2.Version != v1.Version || v2.VerifiedAt == nil || !v2.VerifiedAt.Equal(clock) {
		t.Fatalf("unchanged run: verified %v, %+v", r2.Verified(), v2)
	}
	if vs, _ := db.Versions(ctx, "t"); len(vs) != 1 || vs[0].VerifiedAt == nil {
		t.Fatalf("versions after a verified run: %+v", vs)
	}
	if d, err := db.SourceDigest(ctx, "t", v1.Version); err != nil || string(d) != "d2" {
		t.Errorf("digest after the verified run: %q %v", d, err)
	}
	if inv := invalidIDs(db, "t"); !slices.Contains(inv, r2.TxnID()) {
		t.Errorf("the verified run's transaction %d not invalid: %v", r2.TxnID(), inv)
	}
	if _, err := db.GC(ctx, "t", false); err != nil {
		t.Fatal(err)
	}
	// G6: pruned at once on Pebble; on HBase only after the grace.
	if inv := invalidIDs(db, "t"); (len(inv) == 0) != (db.grace == 0) {
		t.Errorf("invalid transactions after GC (grace %s): %v", db.grace, inv)
	}
	// A change commits; the digest goes with its version.
	_, v3 := run([][]Value{{iv(1), sv("a")}, {iv(2), sv("c")}}, "d3")
	if v3.Version == v1.Version || v3.VerifiedAt != nil {
		t.Fatalf("changed run: %+v", v3)
	}
	if d, _ := db.SourceDigest(ctx, "t", v3.Version); string(d) != "d3" {
		t.Errorf("digest of version 3: %q", d)
	}
	if _, err := db.Verify(ctx, "t", v1.Version, clock, nil); !errors.Is(err, ErrNotCurrent) {
		t.Errorf("verify an older version: %v", err)
	}
	// A rollback commits a version with v1's rows: v3 and its digest stay;
	// the new version has none (the source did not describe it).
	v4, err := db.Rollback(ctx, "t", v1.Version)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := db.SourceDigest(ctx, "t", v3.Version); err != nil || string(d) != "d3" {
		t.Errorf("digest of version 3 after a rollback: %q %v", d, err)
	}
	if d, err := db.SourceDigest(ctx, "t", v4.Version); err != nil || d != nil {
		t.Errorf("digest of the rollback's version: %q %v", d, err)
	}
	// GC that expires v1 and v3 deletes their version rows, digest too.
	if err := db.SetConfig(ctx, DatasetConfig{Name: "t", Retention: Retention{TTL: time.Minute, MinVersions: 1}}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour)
	if _, err := db.GC(ctx, "t", false); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{v1.Version, v3.Version} {
		got, err := db.st.Get(ctx, db.meta, versionKey("t", v), store.ReadOptions{})
		if err != nil || len(got) != 0 {
			t.Errorf("metadata of expired version %d left: %v %v", v, got, err)
		}
	}
}

// TestVerifiedAtDurable: the verification time is in the dataset's row, so
// it survives a reopen, and a writer that lost its slot cannot record one
// (W3): its run ends with ErrSlotLost and records nothing.
func TestVerifiedAtDurable(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	st := newTestStore(t)
	opts := Options{now: func() time.Time { return clock }}
	db := openTestDB(t, st, opts)
	rows := [][]Value{{iv(1), sv("a")}, {iv(2), sv("b")}}
	begin := func(db *DB) *Run { t.Helper(); return beginVerifying(t, db, rows) }
	v1, err := begin(db).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour)
	r := begin(db)
	if _, err := r.Commit(ctx); err != nil || !r.Verified() {
		t.Fatalf("unchanged run: %v, verified %v", err, r.Verified())
	}
	verified := clock
	db.Close()
	db = openTestDB(t, st, opts)
	vi, err := db.VersionInfo(ctx, "t", v1.Version)
	if err != nil || vi.VerifiedAt == nil || !vi.VerifiedAt.Equal(verified) {
		t.Fatalf("after reopen: %+v %v, want verified at %s", vi, err, verified)
	}

	// The slot lapses (no keeper renews it past the clock) and another
	// writer takes it: the first writer's verification is refused.
	clock = clock.Add(time.Hour)
	r = begin(db)
	db.stopKeeper()
	clock = clock.Add(2 * DefaultSlotLease)
	other := openTestDB(t, st, opts)
	if _, err := other.GC(ctx, "t", false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(ctx); !errors.Is(err, ErrSlotLost) {
		t.Fatalf("verification by a fenced writer: %v, want ErrSlotLost", err)
	}
	vi, err = other.VersionInfo(ctx, "t", v1.Version)
	if err != nil || !vi.VerifiedAt.Equal(verified) {
		t.Fatalf("after a fenced verification: %+v %v, want verified at %s", vi, err, verified)
	}
}

// readRows returns the rows of dataset t at version as JSON.
func readRows(t *testing.T, db *DB, version int64) []string {
	t.Helper()
	r, err := db.Reader(context.Background(), "t", At{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return scanJSON(t, r)
}

// beginVerifying begins a run of dataset t with RunOptions.VerifyUnchanged
// and puts rows.
func beginVerifying(t *testing.T, db *DB, rows [][]Value) *Run {
	t.Helper()
	ctx := context.Background()
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "t"}, RunOptions{Schema: testSchema, VerifyUnchanged: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rows {
		if err := r.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	return r
}
