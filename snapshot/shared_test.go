package snapshot

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestSharedReadOnly checks W2: a read-only DB on the writer's store sees
// the writer's commits after a refresh, never the cells of its aborted
// runs, refuses writes, and does not disturb the writer's run in progress;
// a second writer opens beside the first.
func TestSharedReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	w := openTestDB(t, st, Options{})
	v1 := runRows(t, w, [][]Value{{iv(1), sv("a")}, {iv(2), sv("b")}}).Version

	// A run in progress while the reader opens: the reader must leave it.
	run, err := w.BeginRun(ctx, DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Put(ctx, []Value{iv(1), sv("a")}); err != nil {
		t.Fatal(err)
	}
	if err := run.Put(ctx, []Value{iv(2), sv("running")}); err != nil {
		t.Fatal(err)
	}
	st2 := openSecondStore(t, dir, st)
	r := openTestDB(t, st2, Options{ReadOnly: true, RefreshInterval: -1})
	if name, v := readName(t, r, 2); name != "b" || v != v1 {
		t.Fatalf("reader at open: %q at %d, want b at %d", name, v, v1)
	}
	v2, err := run.Commit(ctx)
	if err != nil {
		t.Fatalf("writer's commit after a reader opened: %v", err)
	}
	if name, v := readName(t, r, 2); name != "b" || v != v1 {
		t.Fatalf("reader before Refresh: %q at %d", name, v)
	}
	if err := r.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if name, v := readName(t, r, 2); name != "running" || v != v2.Version {
		t.Fatalf("reader after Refresh: %q at %d, want running at %d", name, v, v2.Version)
	}

	// An aborted run then a commit that does not touch row 2: the reader
	// must exclude the aborted cells at the newer version.
	aborted := abortRows(t, w, [][]Value{{iv(1), sv("a")}, {iv(2), sv("ABORTED")}})
	v4 := runRows(t, w, [][]Value{{iv(1), sv("A")}, {iv(2), sv("running")}}).Version
	if v4 <= aborted {
		t.Fatalf("ids %d then %d", aborted, v4)
	}
	if err := r.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if name, v := readName(t, r, 2); name != "running" || v != v4 {
		t.Fatalf("reader after an aborted run: %q at %d, want running at %d", name, v, v4)
	}
	if name, _ := readName(t, r, 1); name != "A" {
		t.Fatalf("row 1 = %q", name)
	}

	// Writes are refused.
	if !r.ReadOnly() || w.ReadOnly() {
		t.Errorf("ReadOnly(): reader %v, writer %v", r.ReadOnly(), w.ReadOnly())
	}
	if _, err := r.BeginRun(ctx, DatasetConfig{Name: "t"}, RunOptions{Schema: testSchema}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("BeginRun on read-only: %v", err)
	}
	if _, err := r.GC(ctx, "t", false); !errors.Is(err, ErrReadOnly) {
		t.Errorf("GC on read-only: %v", err)
	}
	if _, err := r.Rollback(ctx, "t", v1); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Rollback on read-only: %v", err)
	}
	if err := r.Tag(ctx, "t", "x", v1); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Tag on read-only: %v", err)
	}
	if err := r.PutRecord(ctx, "k", "n", nil); !errors.Is(err, ErrReadOnly) {
		t.Errorf("PutRecord on read-only: %v", err)
	}

	// A rollback and a drop by the writer show up too; the versions after
	// the one restored stay readable.
	rb, err := w.Rollback(ctx, "t", v2.Version)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if name, v := readName(t, r, 2); v != rb.Version || name != "running" {
		t.Fatalf("after rollback the reader reads %q at %d, want running at %d", name, v, rb.Version)
	}
	if vi, err := r.VersionInfo(ctx, "t", rb.Version); err != nil || vi.RestoredFrom != v2.Version {
		t.Fatalf("the rollback's version: %+v %v", vi, err)
	}
	if rd, err := r.Reader(ctx, "t", At{Version: v4}); err != nil {
		t.Fatalf("a version after the one restored: %v", err)
	} else {
		rd.Close()
	}

	// A second writer opens beside the first (W1).
	w2, err := Open(ctx, st2, Options{})
	if err != nil {
		t.Fatalf("second writer: %v", err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.DropDataset(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if err := r.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Dataset(ctx, "t"); !errors.Is(err, ErrDatasetNotFound) {
		t.Fatalf("dropped dataset: %v", err)
	}
}

// TestSharedRefreshInterval checks that reads of a read-only DB refresh a
// view older than RefreshInterval by themselves (W2).
func TestSharedRefreshInterval(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	w := openTestDB(t, st, Options{})
	r := openTestDB(t, openSecondStore(t, dir, st), Options{ReadOnly: true, RefreshInterval: time.Millisecond})
	if _, err := r.Dataset(ctx, "t"); !errors.Is(err, ErrDatasetNotFound) {
		t.Fatalf("before any run: %v", err)
	}
	v1 := runRows(t, w, [][]Value{{iv(1), sv("a")}}).Version
	time.Sleep(2 * time.Millisecond) // past the interval, not an assertion
	di, err := r.Dataset(ctx, "t")
	if err != nil || di.Current != v1 {
		t.Fatalf("dataset seen by the reader: %+v, %v; want current %d", di, err, v1)
	}
}

// TestSlotExpiredNoCommit checks W3: a run whose writer slot expired
// without renewal (the keeper could not reach the store, or the process
// was paused) writes no more and does not commit.
func TestSlotExpiredNoCommit(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	now := time.Now()
	clock := func() time.Time { return now }
	w := openTestDB(t, st, Options{SlotLease: time.Hour, now: clock})
	w.stopKeeper() // no renewal
	run, err := w.BeginRun(ctx, DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Put(ctx, []Value{iv(1), sv("a")}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := run.Commit(ctx); !errors.Is(err, ErrSlotLost) {
		t.Fatalf("commit after the slot expired: %v, want ErrSlotLost", err)
	}
	if di, err := w.Dataset(ctx, "t"); err != nil || di.Current != 0 {
		t.Fatalf("after a refused commit: %+v, %v", di, err)
	}
}

// TestReadOnlyReadsRefresh checks W2 for every read entry point of a
// read-only DB: after the writer commits a version, each read that names
// it succeeds once the view is older than RefreshInterval, without an
// explicit Refresh.
func TestReadOnlyReadsRefresh(t *testing.T) {
	ctx := context.Background()
	reads := map[string]func(r *DB, v1, v2 int64) error{
		"Datasets": func(r *DB, v1, v2 int64) error {
			ds, err := r.Datasets(ctx)
			if err == nil && (len(ds) != 1 || ds[0].Current != v2) {
				err = fmt.Errorf("datasets %+v, want t at %d", ds, v2)
			}
			return err
		},
		"Dataset": func(r *DB, v1, v2 int64) error {
			di, err := r.Dataset(ctx, "t")
			if err == nil && di.Current != v2 {
				err = fmt.Errorf("current %d, want %d", di.Current, v2)
			}
			return err
		},
		"Versions": func(r *DB, v1, v2 int64) error {
			vs, err := r.Versions(ctx, "t")
			if err == nil && (len(vs) != 2 || vs[0].Version != v2) {
				err = fmt.Errorf("versions %+v, want %d first", vs, v2)
			}
			return err
		},
		"VersionInfo": func(r *DB, v1, v2 int64) error {
			_, err := r.VersionInfo(ctx, "t", v2)
			return err
		},
		"Reader": func(r *DB, v1, v2 int64) error {
			rd, err := r.Reader(ctx, "t", At{Version: v2})
			if err == nil {
				rd.Close()
			}
			return err
		},
		"Diff": func(r *DB, v1, v2 int64) error {
			d, err := r.Diff(ctx, "t", v1, v2)
			if err != nil {
				return err
			}
			n := 0
			for d.Next() {
				n++
			}
			if err := d.Close(); err != nil {
				return err
			}
			if n != 1 {
				return fmt.Errorf("%d changes, want 1", n)
			}
			return nil
		},
		"DiffCounts": func(r *DB, v1, v2 int64) error {
			st, err := r.DiffCounts(ctx, "t", v1, v2)
			if err == nil && st.Updated != 1 {
				err = fmt.Errorf("counts %+v, want 1 update", st)
			}
			return err
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			st := openTestStore(t, dir)
			w := openTestDB(t, st, Options{})
			v1 := runRows(t, w, [][]Value{{iv(1), sv("a")}}).Version
			now := time.Now()
			clock := func() time.Time { return now }
			r := openTestDB(t, openSecondStore(t, dir, st), Options{ReadOnly: true, RefreshInterval: time.Minute, now: clock})
			v2 := runRows(t, w, [][]Value{{iv(1), sv("b")}}).Version
			now = now.Add(2 * time.Minute)
			if err := read(r, v1, v2); err != nil {
				t.Fatalf("%s of version %d committed after the last refresh: %v", name, v2, err)
			}
		})
	}
}
