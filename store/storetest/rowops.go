package storetest

// Subtests of the single-row operations: MutateRow (store.S6),
// CheckAndMutate (store.S7) and Increment (store.S8).

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/snapstore/snapstore/store"
)

func rowBatch(table string, ms ...store.Mutation) *store.Batch {
	return &store.Batch{Table: table, Mutations: ms}
}

func mustCheckAndMutate(t *testing.T, s store.Store, b *store.Batch, check store.Check) bool {
	t.Helper()
	ok, err := s.CheckAndMutate(t.Context(), b, check)
	if err != nil {
		t.Fatalf("check and mutate: %v", err)
	}
	return ok
}

func testMutateRow(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustApply(t, s, "t", put("r", "a", 1, "a1"), put("r", "b", 1, "b1"), put("other", "a", 1, "o"))
	// Puts, markers and version deletions of one row, in one call.
	b := rowBatch("t", put("r", "a", 2, "a2"), delCol("r", "c", 2), delRow("r", 2), delVersion("r", "b", 1), put("r", "d", 0, ""))
	if err := s.MutateRow(ctx, b); err != nil {
		t.Fatal(err)
	}
	want := cellsOf(delRow("r", 2), put("r", "a", 2, "a2"), put("r", "a", 1, "a1"), delCol("r", "c", 2), put("r", "d", 0, ""))
	expectCells(t, "after MutateRow", mustGet(t, s, "t", "r", store.ReadOptions{}), want)
	// A put and a version deletion of one coordinate: the last one wins,
	// as in Apply (store.S4).
	if err := s.MutateRow(ctx, rowBatch("t", put("r", "e", 5, "x"), delVersion("r", "e", 5))); err != nil {
		t.Fatal(err)
	}
	if err := s.MutateRow(ctx, rowBatch("t", delVersion("r", "f", 5), put("r", "f", 5, "y"))); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, "t", "r", store.ReadOptions{Columns: [][]byte{[]byte("e"), []byte("f")}})
	expectCells(t, "put and delete of one coordinate", got, cellsOf(delRow("r", 2), put("r", "f", 5, "y")))
	// Two rows, or a bad mutation: refused whole.
	for _, bad := range []*store.Batch{
		rowBatch("t", put("r", "a", 9, "x"), put("other", "a", 9, "x")),
		rowBatch("t", put("r", "a", 9, "x"), put("r", "a", -1, "x")),
		rowBatch("", put("r", "a", 9, "x")),
	} {
		expectErr(t, "MutateRow of a bad batch", s.MutateRow(ctx, bad), store.ErrInvalidArgument)
	}
	if got := mustGet(t, s, "t", "r", store.ReadOptions{TimeRange: store.TimeRange{Min: 9, Max: 10}}); got != nil {
		t.Errorf("a refused MutateRow wrote %s", formatCells(got))
	}
	if err := s.MutateRow(ctx, &store.Batch{Table: "t"}); err != nil {
		t.Errorf("empty MutateRow: %v", err)
	}
	expectCells(t, "other row", mustGet(t, s, "t", "other", store.ReadOptions{}), cellsOf(put("other", "a", 1, "o")))
}

func testCheckAndMutate(t *testing.T, s store.Store) {
	ctx := t.Context()
	v := func(s string) []byte { return []byte(s) }
	absent := func(col string) store.Check { return store.Check{Column: v(col)} }
	equal := func(col, val string) store.Check { return store.Check{Column: v(col), Value: v(val)} }
	// Absent: applies on a new row, then no longer.
	if !mustCheckAndMutate(t, s, rowBatch("t", put("r", "lock", 0, "me"), put("r", "x", 3, "x3")), absent("lock")) {
		t.Fatal("absent check on a new row did not apply")
	}
	if mustCheckAndMutate(t, s, rowBatch("t", put("r", "lock", 0, "you")), absent("lock")) {
		t.Fatal("absent check applied on a present column")
	}
	// Equal: the newest version must hold exactly the value.
	if mustCheckAndMutate(t, s, rowBatch("t", put("r", "lock", 0, "you")), equal("lock", "m")) {
		t.Fatal("check of a prefix of the value applied")
	}
	if !mustCheckAndMutate(t, s, rowBatch("t", put("r", "lock", 0, "you"), delVersion("r", "x", 3)), equal("lock", "me")) {
		t.Fatal("equal check did not apply")
	}
	expectCells(t, "after a check that applied", mustGet(t, s, "t", "r", store.ReadOptions{}), cellsOf(put("r", "lock", 0, "you")))
	// Only the newest version counts, whatever the timestamps.
	mustApply(t, s, "t", put("r", "ver", 1, "old"), put("r", "ver", 7, "new"))
	if mustCheckAndMutate(t, s, rowBatch("t", put("r", "y", 1, "y")), equal("ver", "old")) {
		t.Error("an older version matched")
	}
	if !mustCheckAndMutate(t, s, rowBatch("t", put("r", "y", 1, "y")), equal("ver", "new")) {
		t.Error("the newest version did not match")
	}
	// A delete marker as the newest version is neither absent nor a value.
	mustApply(t, s, "t", put("r", "m", 1, "v"), delCol("r", "m", 2))
	if mustCheckAndMutate(t, s, rowBatch("t", put("r", "z", 1, "z")), absent("m")) {
		t.Error("a column whose newest version is a marker checked absent")
	}
	if mustCheckAndMutate(t, s, rowBatch("t", put("r", "z", 1, "z")), equal("m", "v")) {
		t.Error("a column whose newest version is a marker matched its older value")
	}
	// An empty value is a value, not absence.
	mustApply(t, s, "t", put("r", "empty", 1, ""))
	if mustCheckAndMutate(t, s, rowBatch("t", put("r", "z", 1, "z")), absent("empty")) {
		t.Error("an empty value checked absent")
	}
	if !mustCheckAndMutate(t, s, rowBatch("t", put("r", "z", 1, "z")), store.Check{Column: v("empty"), Value: []byte{}}) {
		t.Error("an empty value did not match an empty expected value")
	}
	// The check reads the batch's own row, not another one, and not a
	// version GC removed.
	mustApply(t, s, "t", put("q", "lock", 0, "me"))
	if !mustCheckAndMutate(t, s, rowBatch("t", put("p", "lock", 0, "p")), absent("lock")) {
		t.Error("another row's column counted")
	}
	mustApply(t, s, "t", delVersion("q", "lock", 0))
	if !mustCheckAndMutate(t, s, rowBatch("t", put("q", "lock", 0, "again")), absent("lock")) {
		t.Error("a removed version counted")
	}
	// The row delete marker column.
	mustApply(t, s, "t", delRow("q", 4))
	if mustCheckAndMutate(t, s, rowBatch("t", put("q", "z", 1, "z")), absent("")) {
		t.Error("a row delete marker checked absent")
	}
	// Bad batches are refused whole, and nothing is applied.
	for _, bad := range []*store.Batch{
		rowBatch("t", put("q", "a", 9, "x"), put("p", "a", 9, "x")),
		rowBatch("t"),
		rowBatch("t", put("", "a", 9, "x")),
	} {
		_, err := s.CheckAndMutate(ctx, bad, absent("nothing"))
		expectErr(t, "CheckAndMutate of a bad batch", err, store.ErrInvalidArgument)
	}
	if got := scanAll(t, s, "t", store.ScanOptions{ReadOptions: store.ReadOptions{TimeRange: store.TimeRange{Min: 9, Max: 10}}}); got != nil {
		t.Errorf("a refused CheckAndMutate wrote %s", formatCells(got))
	}
}

// testCheckAndMutateConcurrent: writers that each read a counter cell and
// set it one higher with CheckAndMutate lose no update (store.S7), while
// plain writes go to other columns of the same row.
func testCheckAndMutateConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	const writers, each = 4, 15
	enc := func(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
	mustApply(t, s, "t", store.Mutation{Op: store.OpPut, Cell: store.Cell{Row: []byte("r"), Column: []byte("n"), Kind: store.KindPut, Value: enc(0)}})
	var wg sync.WaitGroup
	errc := make(chan error, writers+1)
	var mu sync.Mutex
	var won []uint64
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				cells, err := s.Get(ctx, "t", []byte("r"), store.ReadOptions{Columns: [][]byte{[]byte("n")}, MaxVersions: 1})
				if err != nil {
					errc <- err
					return
				}
				var cur []byte
				for _, c := range cells {
					if string(c.Column) == "n" {
						cur = c.Value
					}
				}
				n := binary.BigEndian.Uint64(cur)
				b := rowBatch("t", store.Mutation{Op: store.OpPut, Cell: store.Cell{Row: []byte("r"), Column: []byte("n"), Kind: store.KindPut, Value: enc(n + 1)}},
					put("r", fmt.Sprint("w", w), int64(n+1), "won"))
				ok, err := s.CheckAndMutate(ctx, b, store.Check{Column: []byte("n"), Value: cur})
				if err != nil {
					errc <- err
					return
				}
				if ok {
					mu.Lock()
					won = append(won, n+1)
					mu.Unlock()
					done++
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // plain writes of the same row, other columns
		defer wg.Done()
		for i := range 30 {
			if err := s.Apply(ctx, rowBatch("t", put("r", "plain", int64(i), "p"))); err != nil {
				errc <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	slices.Sort(won)
	for i, n := range won {
		if n != uint64(i+1) {
			t.Fatalf("values won %v: an update was lost or applied twice", won)
		}
	}
	cells := mustGet(t, s, "t", "r", store.ReadOptions{Columns: [][]byte{[]byte("n")}, MaxVersions: 1})
	if got := binary.BigEndian.Uint64(cells[len(cells)-1].Value); got != writers*each {
		t.Errorf("counter cell %d, want %d", got, writers*each)
	}
}

func testIncrement(t *testing.T, s store.Store) {
	ctx := t.Context()
	inc := func(row, col string, d int64) int64 {
		t.Helper()
		n, err := s.Increment(ctx, "t", []byte(row), []byte(col), d)
		if err != nil {
			t.Fatalf("increment %s/%s by %d: %v", row, col, d, err)
		}
		return n
	}
	if n := inc("r", "c", 0); n != 0 {
		t.Errorf("an absent counter reads %d", n)
	}
	for _, step := range []struct{ d, want int64 }{{5, 5}, {0, 5}, {1000, 1005}, {-5, 1000}, {0, 1000}} {
		if n := inc("r", "c", step.d); n != step.want {
			t.Errorf("increment by %d: %d, want %d", step.d, n, step.want)
		}
	}
	if n := inc("r", "other", 1); n != 1 {
		t.Errorf("a second counter of the row starts at %d", n)
	}
	if n := inc("r2", "c", 3); n != 3 {
		t.Errorf("the counter of another row starts at %d", n)
	}
	if n, err := s.Increment(ctx, "t2", []byte("r"), []byte("c"), 0); err != nil || n != 0 {
		t.Errorf("the counter of another table reads %d, %v", n, err)
	}
	// Counters are not cells: reads and checks do not see them, and a cell
	// of the same column is another thing.
	if got := mustGet(t, s, "t", "r", store.ReadOptions{}); got != nil {
		t.Errorf("Get returns counters: %s", formatCells(got))
	}
	if got := scanAll(t, s, "t", store.ScanOptions{}); got != nil {
		t.Errorf("Scan returns counters: %s", formatCells(got))
	}
	if !mustCheckAndMutate(t, s, rowBatch("t", put("r", "c", 1, "cell")), store.Check{Column: []byte("c")}) {
		t.Error("a counter made its column present for a check")
	}
	expectCells(t, "a cell beside a counter", mustGet(t, s, "t", "r", store.ReadOptions{}), cellsOf(put("r", "c", 1, "cell")))
	if n := inc("r", "c", 0); n != 1000 {
		t.Errorf("the counter after a cell of its column was written: %d", n)
	}
	// Wrap-around, as HBase's.
	if n := inc("max", "c", 1<<62); n != 1<<62 {
		t.Fatal(n)
	}
	if n := inc("max", "c", 1<<62); n != -1<<63 {
		t.Errorf("overflow: %d, want %d", n, int64(-1<<63))
	}
	// DeleteRange removes the counters of its rows, and only those.
	if err := s.DeleteRange(ctx, "t", []byte("r"), []byte("r\x00")); err != nil {
		t.Fatal(err)
	}
	if n := inc("r", "c", 0); n != 0 {
		t.Errorf("a counter of a deleted row reads %d", n)
	}
	if n := inc("r2", "c", 0); n != 3 {
		t.Errorf("a counter outside the deleted range reads %d", n)
	}
	if n := inc("r", "c", 2); n != 2 {
		t.Errorf("a counter incremented again after its row was deleted: %d, want 2", n)
	}
	for _, bad := range []struct {
		table string
		row   []byte
	}{{"", []byte("r")}, {"t", nil}} {
		_, err := s.Increment(ctx, bad.table, bad.row, []byte("c"), 1)
		expectErr(t, fmt.Sprintf("increment of table %q row %q", bad.table, bad.row), err, store.ErrInvalidArgument)
	}
}

// testIncrementConcurrent: concurrent increments get distinct results and
// none is lost (store.S8).
func testIncrementConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	const workers, each = 4, 20
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				n, err := s.Increment(ctx, "t", []byte("ids"), []byte("next"), 10)
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				got = append(got, n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	slices.Sort(got)
	for i, n := range got {
		if n != int64(10*(i+1)) {
			t.Fatalf("results %v: two increments saw the same value, or one was lost", got)
		}
	}
}

func testRowOpsClosed(t *testing.T, s store.Store) {
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	expectErr(t, "MutateRow after close", s.MutateRow(ctx, rowBatch("t", put("r", "c", 1, "v"))), store.ErrClosed)
	_, err := s.CheckAndMutate(ctx, rowBatch("t", put("r", "c", 1, "v")), store.Check{Column: []byte("c")})
	expectErr(t, "CheckAndMutate after close", err, store.ErrClosed)
	_, err = s.Increment(ctx, "t", []byte("r"), []byte("c"), 1)
	expectErr(t, "Increment after close", err, store.ErrClosed)
}

func testRowOpsContextCanceled(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	expectErr(t, "MutateRow with a canceled context", s.MutateRow(ctx, rowBatch("t", put("r", "c", 1, "v"))), context.Canceled)
	_, err := s.CheckAndMutate(ctx, rowBatch("t", put("r", "c", 1, "v")), store.Check{Column: []byte("c")})
	expectErr(t, "CheckAndMutate with a canceled context", err, context.Canceled)
	_, err = s.Increment(ctx, "t", []byte("r"), []byte("c"), 1)
	expectErr(t, "Increment with a canceled context", err, context.Canceled)
	if got := mustGet(t, s, "t", "r", store.ReadOptions{}); got != nil {
		t.Errorf("written under a canceled context: %s", formatCells(got))
	}
	if n, err := s.Increment(t.Context(), "t", []byte("r"), []byte("c"), 0); err != nil || n != 0 {
		t.Errorf("counter after an increment under a canceled context: %d, %v", n, err)
	}
}

// durableRowOps writes what testDurable checks after a reopen: a
// MutateRow, a CheckAndMutate and a counter (store.S6, store.S7 and store.S8 are durable when
// they return).
func durableRowOps(t *testing.T, s store.Store) {
	ctx := t.Context()
	if err := s.MutateRow(ctx, rowBatch("t", put("row", "m", 1, "mutated"))); err != nil {
		t.Fatal(err)
	}
	if !mustCheckAndMutate(t, s, rowBatch("t", put("row", "c", 1, "checked")), store.Check{Column: []byte("c")}) {
		t.Fatal("check did not apply")
	}
	if _, err := s.Increment(ctx, "t", []byte("row"), []byte("n"), 42); err != nil {
		t.Fatal(err)
	}
}

func checkDurableRowOps(t *testing.T, s store.Store) {
	want := cellsOf(put("row", "c", 1, "checked"), put("row", "m", 1, "mutated"))
	expectCells(t, "row operations after reopen", mustGet(t, s, "t", "row", store.ReadOptions{}), want)
	n, err := s.Increment(t.Context(), "t", []byte("row"), []byte("n"), 0)
	if err != nil || n != 42 {
		t.Errorf("counter after reopen: %d, %v; want 42", n, err)
	}
}
