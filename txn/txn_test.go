package txn

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/pebble"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openTestStore is the one place these tests create a store.
func openTestStore(t *testing.T, dir string) store.Store {
	t.Helper()
	st, err := pebble.Open(dir, pebble.Options{MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func open(t *testing.T, st store.Store, block int64) *Manager {
	t.Helper()
	m, err := Open(context.Background(), st, Options{BlockSize: block})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestIDsSurviveRestart checks I1: ids increase strictly and are never
// reused across restarts, even when the last block was barely used.
func TestIDsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var last int64
	for restart := 0; restart < 4; restart++ {
		st := openTestStore(t, dir)
		m := open(t, st, 3)
		for i := 0; i < 5; i++ {
			id, err := m.Begin(ctx, "ds")
			if err != nil {
				t.Fatal(err)
			}
			if id <= last {
				t.Fatalf("restart %d: id %d after %d", restart, id, last)
			}
			last = id
			if err := m.Commit(ctx, id, nil); err != nil {
				t.Fatal(err)
			}
		}
		if restart%2 == 1 { // allocate without using, then restart
			if _, err := m.allocate(ctx); err != nil {
				t.Fatal(err)
			}
			last++
		}
		st.Close()
	}
}

// TestOpenInvalidatesInProgress checks I2 and I5, and V2 for the result.
func TestOpenInvalidatesInProgress(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	m := open(t, st, 0)
	a, _ := m.Begin(ctx, "a")
	b, _ := m.Begin(ctx, "b")
	c, _ := m.Begin(ctx, "a")
	if err := m.Commit(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	if v := m.Visibility("a", c); v.IsVisible(a) || !v.IsVisible(c) {
		t.Fatalf("in-progress %d visible or committed %d not: %v", a, c, v.Excluded())
	}
	st.Close() // crash: a and b never ended

	st = openTestStore(t, dir)
	defer st.Close()
	m = open(t, st, 0)
	if got := m.Invalid("a"); !slices.Equal(got, []int64{a}) {
		t.Fatalf("invalid(a) = %v, want [%d]", got, a)
	}
	if got := m.Invalid("b"); !slices.Equal(got, []int64{b}) {
		t.Fatalf("invalid(b) = %v, want [%d]", got, b)
	}
	if len(m.InProgress("a"))+len(m.InProgress("b")) != 0 {
		t.Fatal("in-progress left after Open")
	}
	v := m.Visibility("a", 100)
	if v.IsVisible(a) || !v.IsVisible(c) || v.IsVisible(101) {
		t.Fatalf("visibility wrong: %v", v.Excluded())
	}
	if err := m.Commit(ctx, a, nil); !errors.Is(err, ErrUnknownTxn) {
		t.Fatalf("commit of invalid: %v", err)
	}
	// I6: prune shrinks the set durably.
	if err := m.Prune(ctx, []int64{a}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st = openTestStore(t, dir)
	defer st.Close()
	m = open(t, st, 0)
	if got := m.Invalid("a"); len(got) != 0 {
		t.Fatalf("pruned id back: %v", got)
	}
}

// TestCommitBatchAtomic checks I3: the caller's metadata lands with the
// commit, and a batch for another table is refused.
func TestCommitBatchAtomic(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	m := open(t, st, 0)
	id, _ := m.Begin(ctx, "d")
	if err := m.Commit(ctx, id, &store.Batch{Table: "other"}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("foreign batch: %v", err)
	}
	b := &store.Batch{Table: m.Table()}
	b.Put([]byte("s\x00x"), []byte("v"), 0, []byte("hello"))
	if err := m.Commit(ctx, id, b); err != nil {
		t.Fatal(err)
	}
	cells, err := st.Get(ctx, m.Table(), []byte("s\x00x"), store.ReadOptions{})
	if err != nil || len(cells) != 1 || string(cells[0].Value) != "hello" {
		t.Fatalf("metadata not written: %v %v", cells, err)
	}
	if len(m.InProgress("d")) != 0 {
		t.Fatal("still in progress")
	}
}

// TestAbortAndInvalidate checks I4 and V2/V4.
func TestAbortAndInvalidate(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	m := open(t, st, 0)
	x, _ := m.Begin(ctx, "d")
	before := m.Visibility("d", x)
	if err := m.Abort(ctx, x, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Abort(ctx, x, nil); !errors.Is(err, ErrUnknownTxn) {
		t.Fatalf("double abort: %v", err)
	}
	y, _ := m.Begin(ctx, "d")
	m.Commit(ctx, y, nil)
	if err := m.Invalidate(ctx, "d", []int64{y}, nil); err != nil {
		t.Fatal(err)
	}
	after := m.Visibility("d", y)
	if after.IsVisible(x) || after.IsVisible(y) {
		t.Fatal("invalid ids visible")
	}
	if before.IsVisible(x) { // x was in progress then: excluded too (V1)
		t.Fatal("in-progress id visible")
	}
	if n := after.ExcludedAtOrBelow(y); n != 2 {
		t.Fatalf("ExcludedAtOrBelow = %d", n)
	}
	if m.Visibility("other", y).IsExcluded(x) {
		t.Fatal("another owner's ids excluded")
	}
	if _, err := m.Begin(ctx, ""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("empty owner: %v", err)
	}
}

func TestVisibilityRule(t *testing.T) {
	v := NewVisibility(10, []int64{7, 3, 12, 3})
	for ts, want := range map[int64]bool{1: true, 3: false, 7: false, 10: true, 11: false, 12: false} {
		if got := v.IsVisible(ts); got != want {
			t.Errorf("IsVisible(%d) = %v", ts, got)
		}
	}
	if v.ExcludedAtOrBelow(10) != 2 || v.ExcludedAtOrBelow(2) != 0 || v.ExcludedAtOrBelow(12) != 3 {
		t.Error("ExcludedAtOrBelow")
	}
}

// TestConcurrentBegin checks I1 under concurrency: ids are unique and the
// high-water mark covers them all after a restart.
func TestConcurrentBegin(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	m := open(t, st, 7)
	ids := make(chan int64, 200)
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 50; i++ {
				id, err := m.Begin(ctx, "d")
				if err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					err = m.Commit(ctx, id, nil)
				} else {
					err = m.Abort(ctx, id, nil)
				}
				if err != nil {
					t.Error(err)
				}
				ids <- id
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	close(ids)
	seen := map[int64]bool{}
	var maxID int64
	for id := range ids {
		if seen[id] {
			t.Fatalf("id %d handed out twice", id)
		}
		seen[id] = true
		maxID = max(maxID, id)
	}
	if got := len(m.Invalid("d")); got != 100 {
		t.Fatalf("%d invalid, want 100", got)
	}
	st.Close()
	st = openTestStore(t, dir)
	defer st.Close()
	m = open(t, st, 7)
	id, err := m.Begin(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if id <= maxID {
		t.Fatalf("after restart id %d <= %d", id, maxID)
	}
}

// TestReadOnlyRefresh checks I7: a read-only Manager on the writer's store
// leaves the writer's transactions in progress, writes nothing, and after
// Refresh excludes what the writer aborted since.
func TestReadOnlyRefresh(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	w := open(t, st, 10)
	running, err := w.Begin(ctx, "ds")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, st, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.ReadOnly() {
		t.Fatal("ReadOnly() = false")
	}
	if got := r.InProgress("ds"); !slices.Equal(got, []int64{running}) {
		t.Fatalf("reader's in-progress = %v, want [%d]", got, running)
	}
	if got := r.Invalid("ds"); len(got) != 0 {
		t.Fatalf("reader invalidated %v", got)
	}
	// The writer's commit still works: the reader did not touch its record.
	if err := w.Commit(ctx, running, nil); err != nil {
		t.Fatalf("writer commit after reader open: %v", err)
	}
	aborted, err := w.Begin(ctx, "ds")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(ctx, aborted, nil); err != nil {
		t.Fatal(err)
	}
	if r.Visibility("ds", aborted).IsExcluded(aborted) {
		t.Fatal("excluded before Refresh: the test proves nothing")
	}
	pinned := r.Visibility("ds", running)
	if err := r.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if v := r.Visibility("ds", aborted); !v.IsExcluded(aborted) || v.IsExcluded(running) {
		t.Fatalf("after Refresh excluded = %v, want [%d]", v.Excluded(), aborted)
	}
	if pinned.IsExcluded(aborted) || !pinned.IsExcluded(running) {
		t.Fatalf("a Visibility taken before Refresh changed: %v (V4)", pinned.Excluded())
	}
	for name, err := range map[string]error{
		"Begin":      func() error { _, err := r.Begin(ctx, "ds"); return err }(),
		"Commit":     r.Commit(ctx, aborted, nil),
		"Abort":      r.Abort(ctx, aborted, nil),
		"Invalidate": r.Invalidate(ctx, "ds", []int64{1}, nil),
		"Prune":      r.Prune(ctx, []int64{aborted}),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only manager: %v, want ErrReadOnly", name, err)
		}
	}
	if err := w.Refresh(ctx); err != nil || !slices.Equal(w.Invalid("ds"), []int64{aborted}) {
		t.Fatalf("writer Refresh: %v, invalid %v", err, w.Invalid("ds"))
	}
}
