package snapshot

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestSharedReadOnly checks W1 and W2: a read-only DB on the writer's
// store sees the writer's commits after a refresh, never the cells of its
// aborted runs, refuses writes, and does not disturb the writer's run in
// progress; a second writer is refused the lease.
func TestSharedReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	w := openTestDB(t, st, Options{WriterLease: 30 * time.Second})
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

	// A rollback and a drop by the writer show up too.
	if _, err := w.Rollback(ctx, "t", v2.Version); err != nil {
		t.Fatal(err)
	}
	if err := r.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, v := readName(t, r, 2); v != v2.Version {
		t.Fatalf("after rollback the reader reads %d, want %d", v, v2.Version)
	}
	if _, err := r.Reader(ctx, "t", At{Version: v4}); !errors.Is(err, ErrVersionNotKept) {
		t.Fatalf("rolled-back version: %v", err)
	}

	// A second writer is refused while the first holds the lease.
	if _, err := Open(ctx, st2, Options{WriterLease: 30 * time.Second}); !errors.Is(err, ErrWriterLeaseHeld) {
		t.Fatalf("second writer: %v, want ErrWriterLeaseHeld", err)
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
	// Closing the writer releases the lease: another writer opens at once.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w2, err := Open(ctx, st2, Options{WriterLease: 30 * time.Second})
	if err != nil {
		t.Fatalf("writer after the first closed: %v", err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSharedRefreshInterval checks that reads of a read-only DB refresh a
// view older than RefreshInterval by themselves (W2).
func TestSharedRefreshInterval(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	w := openTestDB(t, st, Options{WriterLease: 30 * time.Second})
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

// TestWriterLeaseLost checks W3: a writer whose lease another process took
// (after it expired) refuses to commit.
func TestWriterLeaseLost(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	now := time.Now()
	clock := func() time.Time { return now }
	w := openTestDB(t, st, Options{WriterLease: time.Hour, now: clock})
	run, err := w.BeginRun(ctx, DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Put(ctx, []Value{iv(1), sv("a")}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour) // no renewal: the lease expired
	if _, err := run.Commit(ctx); !errors.Is(err, ErrWriterLeaseLost) {
		t.Fatalf("commit after the lease expired: %v, want ErrWriterLeaseLost", err)
	}
	if _, err := w.Dataset(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if di, _ := w.Dataset(ctx, "t"); di.Current != 0 {
		t.Fatalf("current = %d after a refused commit", di.Current)
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
			w := openTestDB(t, st, Options{WriterLease: 30 * time.Second})
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
