package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/snapstore/snapstore/store"
)

// Option configures RunSuite.
type Option func(*suiteConfig)

type suiteConfig struct {
	reopen func(t *testing.T, closed store.Store) store.Store
	seed   uint64
}

// WithReopen enables the durability subtests. reopen is called with a store
// the suite has just closed and must open the same data again (same
// directory, same HBase namespace); the suite closes the result. Without it,
// those subtests are skipped.
func WithReopen(reopen func(t *testing.T, closed store.Store) store.Store) Option {
	return func(c *suiteConfig) { c.reopen = reopen }
}

// WithSeed fixes the seed of the randomized subtest (default 1), e.g. from a
// flag, to replay a failure it printed.
func WithSeed(seed uint64) Option {
	return func(c *suiteConfig) { c.seed = seed }
}

// RunSuite runs the conformance suite of the store.Store contract (package
// store, invariants store.S1..store.S9) as subtests of t, in the manner of Thanos's
// testStoreAPIsAcceptance. open is called once per subtest and must return
// an empty store of its own; the suite closes it (a second Close returning
// store.ErrClosed is fine). Each subtest writes at most a few hundred cells,
// so a backend with a millisecond round trip (HBase through Thrift2) runs the
// whole suite in seconds. Subtests that need concurrency are safe to run
// with -race.
func RunSuite(t *testing.T, open func(t *testing.T) store.Store, opts ...Option) {
	cfg := suiteConfig{seed: 1}
	for _, o := range opts {
		o(&cfg)
	}
	h := func(f func(t *testing.T, s store.Store)) func(t *testing.T) {
		return func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
					t.Errorf("closing store: %v", err)
				}
			})
			f(t, s)
		}
	}
	t.Run("PutGet", h(testPutGet))
	t.Run("GetMissing", h(testGetMissing))
	t.Run("OrderS5", h(testOrder))
	t.Run("TimeRange", h(testTimeRange))
	t.Run("MaxTimestamp", h(testMaxTimestamp))
	t.Run("MaxVersions", h(testMaxVersions))
	t.Run("Columns", h(testColumns))
	t.Run("MarkersRaw", h(testMarkersRaw))
	t.Run("EmptyValueVsMarker", h(testEmptyValue))
	t.Run("RewriteS4", h(testRewrite))
	t.Run("DeleteVersion", h(testDeleteVersion))
	t.Run("DeleteRange", h(testDeleteRange))
	t.Run("BinaryRowKeys", h(testBinaryRows))
	t.Run("BinaryColumns", h(testBinaryColumns))
	t.Run("TablesIsolated", h(testTablesIsolated))
	t.Run("ScanRange", h(testScanRange))
	t.Run("SeekRow", h(testSeekRow))
	t.Run("ScanConsistentS3", h(testScanConsistent))
	t.Run("ReadsSeeAppliedS3", h(testReadYourWrites))
	t.Run("BatchAtomicS1", h(testBatchAtomic))
	t.Run("BatchReuse", h(testBatchReuse))
	t.Run("CallerOwnsSlices", h(testOwnership))
	t.Run("InvalidArgument", h(testInvalid))
	t.Run("ContextCanceled", h(testContextCanceled))
	t.Run("Closed", h(testClosed))
	t.Run("ClosedWithOpenIterator", h(testClosedIterator))
	t.Run("Concurrent", h(testConcurrent))
	t.Run("MutateRowS6", h(testMutateRow))
	t.Run("CheckAndMutateS7", h(testCheckAndMutate))
	t.Run("CheckAndMutateConcurrentS7", h(testCheckAndMutateConcurrent))
	t.Run("IncrementS8", h(testIncrement))
	t.Run("IncrementConcurrentS8", h(testIncrementConcurrent))
	t.Run("RowOpsClosed", h(testRowOpsClosed))
	t.Run("RowOpsContextCanceled", h(testRowOpsContextCanceled))
	t.Run("Randomized", h(func(t *testing.T, s store.Store) { testRandomized(t, s, cfg.seed) }))
	t.Run("Load", h(testLoad))
	t.Run("TimeBoundScan", func(t *testing.T) { testTimeBoundScan(t, open(t), cfg.reopen) })
	t.Run("DurableSyncBatchS2", func(t *testing.T) {
		if cfg.reopen == nil {
			t.Skip("no reopen hook (WithReopen)")
		}
		testDurable(t, open(t), cfg.reopen)
	})
}

// --- helpers ---

func put(row, col string, ts int64, val string) store.Mutation {
	return store.Mutation{Op: store.OpPut, Cell: store.Cell{Row: []byte(row), Column: []byte(col), Timestamp: ts, Kind: store.KindPut, Value: []byte(val)}}
}

func delCol(row, col string, ts int64) store.Mutation {
	return store.Mutation{Op: store.OpPut, Cell: store.Cell{Row: []byte(row), Column: []byte(col), Timestamp: ts, Kind: store.KindDeleteColumn}}
}

func delRow(row string, ts int64) store.Mutation {
	return store.Mutation{Op: store.OpPut, Cell: store.Cell{Row: []byte(row), Timestamp: ts, Kind: store.KindDeleteRow}}
}

func delVersion(row, col string, ts int64) store.Mutation {
	return store.Mutation{Op: store.OpDeleteVersion, Cell: store.Cell{Row: []byte(row), Column: []byte(col), Timestamp: ts}}
}

// cellOf returns the cell a put mutation writes, as a read returns it.
func cellOf(m store.Mutation) store.Cell {
	c := m.Cell
	if c.Kind != store.KindPut {
		c.Value = nil
	}
	return c
}

func cellsOf(ms ...store.Mutation) []store.Cell {
	out := make([]store.Cell, len(ms))
	for i, m := range ms {
		out[i] = cellOf(m)
	}
	return out
}

func mustApply(t *testing.T, s store.Store, table string, ms ...store.Mutation) {
	t.Helper()
	b := &store.Batch{Table: table, Mutations: ms}
	if err := s.Apply(t.Context(), b); err != nil {
		t.Fatalf("applying %d mutations to %q: %v", len(ms), table, err)
	}
}

func mustGet(t *testing.T, s store.Store, table, row string, opts store.ReadOptions) []store.Cell {
	t.Helper()
	cells, err := s.Get(t.Context(), table, []byte(row), opts)
	if err != nil {
		t.Fatalf("get %q/%q: %v", table, row, err)
	}
	return cells
}

// testLoad checks a store.Loader, for backends that have one: loaded
// cells are invisible until Flush, then read as applied ones (markers
// raw, S4 replacing what was there); cells out of order fail the load;
// Close drops what was not flushed; sealed loads of several tables are
// flushed together by FlushLoads.
func testLoad(t *testing.T, s store.Store) {
	ld, ok := s.(store.Loader)
	if !ok {
		t.Skip("the backend has no Loader")
	}
	ctx := t.Context()
	mustApply(t, s, "t", put("b", "c", 5, "applied"), put("z", "c", 1, "applied z"))
	l, err := ld.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := cellsOf(
		put("a", "", 7, "row version"), delRow("a", 3),
		put("a\x00", "c", 2, ""),
		put("b", "c", 5, "loaded"), delCol("b", "c", 4), put("b", "d", 5, "d"),
	)
	for _, c := range want {
		if err := l.Add(c); err != nil {
			t.Fatalf("add %+v: %v", c, err)
		}
	}
	if got := mustGet(t, s, "t", "a", store.ReadOptions{}); len(got) != 0 {
		t.Fatalf("loaded cells visible before Flush: %v", got)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	expectCells(t, "scan after flush", scanAll(t, s, "t", store.ScanOptions{End: []byte("c")}), want)
	expectCells(t, "row z untouched", mustGet(t, s, "t", "z", store.ReadOptions{}), cellsOf(put("z", "c", 1, "applied z")))
	// After a Flush the next cells may start anywhere; out of order within
	// a file fails the load.
	if err := l.Add(cellOf(put("m", "c", 1, "x"))); err != nil {
		t.Fatal(err)
	}
	expectErr(t, "add out of order", l.Add(cellOf(put("l", "c", 1, "x"))), store.ErrInvalidArgument)
	expectErr(t, "flush after a failed add", l.Flush(ctx), store.ErrInvalidArgument)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "t", "m", store.ReadOptions{}); len(got) != 0 {
		t.Fatalf("cells of a closed load visible: %v", got)
	}
	// A second load, closed without Flush, leaves nothing.
	l2, err := ld.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Add(cellOf(put("n", "c", 1, "x"))); err != nil {
		t.Fatal(err)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "t", "n", store.ReadOptions{}); len(got) != 0 {
		t.Fatalf("cells of an unflushed load visible: %v", got)
	}
	// Sealed loads of two tables, invisible until FlushLoads makes both
	// visible at once; no Add follows a Seal.
	var loads []store.Load
	for _, table := range []string{"u1", "u2"} {
		l, err := ld.Load(ctx, table)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := l.Add(cellOf(put("r", "c", 1, table))); err != nil {
			t.Fatal(err)
		}
		if err := l.Seal(); err != nil {
			t.Fatal(err)
		}
		expectErr(t, "add after a seal", l.Add(cellOf(put("s", "c", 1, "x"))), store.ErrClosed)
		loads = append(loads, l)
	}
	if got := mustGet(t, s, "u1", "r", store.ReadOptions{}); len(got) != 0 {
		t.Fatalf("cells of a sealed load visible: %v", got)
	}
	if err := ld.FlushLoads(ctx, loads); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"u1", "u2"} {
		expectCells(t, "a sealed load flushed", mustGet(t, s, table, "r", store.ReadOptions{}), cellsOf(put("r", "c", 1, table)))
	}
}

// mustVisit reads a row with VisitRow, copying the cells, and stops after
// stop cells (never when stop < 0).
func mustVisit(t *testing.T, s store.Store, table, row string, opts store.ReadOptions, stop int) []store.Cell {
	t.Helper()
	var cells []store.Cell
	err := s.VisitRow(t.Context(), table, []byte(row), opts, func(c store.Cell) bool {
		cells = append(cells, cloneCell(c))
		return stop < 0 || len(cells) < stop
	})
	if err != nil {
		t.Fatalf("visit %q/%q: %v", table, row, err)
	}
	return cells
}

// scanAll drains a scan, copying every cell.
func scanAll(t *testing.T, s store.Store, table string, opts store.ScanOptions) []store.Cell {
	t.Helper()
	it, err := s.Scan(t.Context(), table, opts)
	if err != nil {
		t.Fatalf("scan %q: %v", table, err)
	}
	var out []store.Cell
	for it.Next() {
		out = append(out, cloneCell(it.Cell()))
	}
	if err := it.Close(); err != nil {
		t.Fatalf("scan %q: %v", table, err)
	}
	return out
}

func expectCells(t *testing.T, what string, got, want []store.Cell) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = sameCell(got[i], want[i])
	}
	if !ok {
		t.Errorf("%s:\ngot:%s\nwant:%s", what, formatCells(got), formatCells(want))
	}
}

func expectErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

func rowsOf(cells []store.Cell) []string {
	var rows []string
	for _, c := range cells {
		if len(rows) == 0 || rows[len(rows)-1] != string(c.Row) {
			rows = append(rows, string(c.Row))
		}
	}
	return rows
}

// --- subtests ---

func testPutGet(t *testing.T, s store.Store) {
	ms := []store.Mutation{
		put("r1", "a", 1, "a1"), put("r1", "a", 3, "a3"), put("r1", "b", 2, "b2"),
		put("r2", "a", 1, "other row"),
	}
	mustApply(t, s, "t", ms...)
	got := mustGet(t, s, "t", "r1", store.ReadOptions{})
	expectCells(t, "get r1", got, cellsOf(ms[1], ms[0], ms[2]))
	got = mustGet(t, s, "t", "r2", store.ReadOptions{})
	expectCells(t, "get r2", got, cellsOf(ms[3]))
	// The zero ReadOptions equal AllTime with every version.
	got = mustGet(t, s, "t", "r1", store.ReadOptions{TimeRange: store.AllTime})
	expectCells(t, "get r1 AllTime", got, cellsOf(ms[1], ms[0], ms[2]))
	all := scanAll(t, s, "t", store.ScanOptions{})
	expectCells(t, "scan", all, cellsOf(ms[1], ms[0], ms[2], ms[3]))
}

func testGetMissing(t *testing.T, s store.Store) {
	if got := mustGet(t, s, "t", "nothing", store.ReadOptions{}); got != nil {
		t.Errorf("get in empty store: got %s, want nil", formatCells(got))
	}
	mustApply(t, s, "t", put("r1", "a", 1, "x"))
	for _, row := range []string{"r", "r0", "r10", "r1\x00", "s"} {
		if got := mustGet(t, s, "t", row, store.ReadOptions{}); got != nil {
			t.Errorf("get missing row %q: got %s, want nil", row, formatCells(got))
		}
	}
	// A time range selecting nothing of an existing row is a missing row too.
	if got := mustGet(t, s, "t", "r1", store.ReadOptions{TimeRange: store.TimeRange{Min: 2, Max: 10}}); len(got) != 0 {
		t.Errorf("get outside time range: got %s", formatCells(got))
	}
	if got := scanAll(t, s, "other", store.ScanOptions{}); len(got) != 0 {
		t.Errorf("scan of an unwritten table: got %s", formatCells(got))
	}
}

func testOrder(t *testing.T, s store.Store) {
	rng := rand.New(rand.NewPCG(7, 7))
	rows := []string{"a", "b", "ba", "c", "z"}
	cols := []string{"c1", "c10", "c2", "x"}
	var ms []store.Mutation
	for _, r := range rows {
		for _, c := range cols {
			for _, ts := range []int64{0, 5, 9, 100} {
				ms = append(ms, put(r, c, ts, fmt.Sprintf("%s.%s.%d", r, c, ts)))
			}
		}
	}
	want := cellsOf(ms...)
	slices.SortFunc(want, compareS5)
	rng.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	// Several batches, in shuffled order.
	for i := 0; i < len(ms); i += 17 {
		mustApply(t, s, "t", ms[i:min(i+17, len(ms))]...)
	}
	expectCells(t, "scan order", scanAll(t, s, "t", store.ScanOptions{}), want)
	var wantRow []store.Cell
	for _, c := range want {
		if string(c.Row) == "ba" {
			wantRow = append(wantRow, c)
		}
	}
	expectCells(t, "get order", mustGet(t, s, "t", "ba", store.ReadOptions{}), wantRow)
}

func tenVersions() []store.Mutation {
	var ms []store.Mutation
	for ts := int64(1); ts <= 10; ts++ {
		ms = append(ms, put("r", "c", ts, fmt.Sprint("v", ts)))
	}
	return ms
}

func testTimeRange(t *testing.T, s store.Store) {
	ms := tenVersions()
	mustApply(t, s, "t", ms...)
	mustApply(t, s, "t", put("r2", "c", 4, "other"))
	for _, tc := range []struct {
		min, max int64
		want     []int64
	}{
		{3, 7, []int64{6, 5, 4, 3}},
		{0, 1, nil},
		{1, 2, []int64{1}},
		{10, 11, []int64{10}},
		{11, 20, nil},
		{5, 5, nil},
		{0, store.MaxTimestamp, []int64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}},
	} {
		var want []store.Cell
		for _, ts := range tc.want {
			want = append(want, cellOf(ms[ts-1]))
		}
		opts := store.ReadOptions{TimeRange: store.TimeRange{Min: tc.min, Max: tc.max}}
		what := fmt.Sprintf("[%d, %d)", tc.min, tc.max)
		expectCells(t, "get "+what, mustGet(t, s, "t", "r", opts), want)
		expectCells(t, "scan "+what, scanAll(t, s, "t", store.ScanOptions{ReadOptions: opts, End: []byte("r2")}), want)
	}
}

func testMaxTimestamp(t *testing.T, s store.Store) {
	// TimeRange documents Max == MaxTimestamp as unbounded, as HBase's
	// allTime, so a cell at MaxTimestamp is readable.
	ms := []store.Mutation{put("r", "c", store.MaxTimestamp, "top"), put("r", "c", 0, "bottom")}
	mustApply(t, s, "t", ms...)
	expectCells(t, "get AllTime", mustGet(t, s, "t", "r", store.ReadOptions{}), cellsOf(ms...))
	expectCells(t, "get [0, MaxTimestamp-1)", mustGet(t, s, "t", "r", store.ReadOptions{TimeRange: store.TimeRange{Min: 0, Max: store.MaxTimestamp - 1}}), cellsOf(ms[1]))
	expectCells(t, "get [1, MaxTimestamp)", mustGet(t, s, "t", "r", store.ReadOptions{TimeRange: store.TimeRange{Min: 1, Max: store.MaxTimestamp}}), cellsOf(ms[0]))
}

func testMaxVersions(t *testing.T, s store.Store) {
	ms := tenVersions()
	other := []store.Mutation{put("r", "d", 2, "d2"), put("r", "d", 8, "d8"), delCol("r", "d", 5)}
	markers := []store.Mutation{delRow("r", 3), delRow("r", 7)}
	mustApply(t, s, "t", ms...)
	mustApply(t, s, "t", other...)
	mustApply(t, s, "t", markers...)
	// Newest first per column; row markers are column "" and come first.
	want := cellsOf(markers[1], ms[9], other[1])
	expectCells(t, "max 1", mustGet(t, s, "t", "r", store.ReadOptions{MaxVersions: 1}), want)
	want = cellsOf(markers[1], markers[0], ms[9], ms[8], other[1], other[2])
	expectCells(t, "max 2", mustGet(t, s, "t", "r", store.ReadOptions{MaxVersions: 2}), want)
	// The time range applies first, then MaxVersions.
	opts := store.ReadOptions{MaxVersions: 2, TimeRange: store.TimeRange{Min: 2, Max: 7}}
	want = cellsOf(markers[0], ms[5], ms[4], other[2], other[0])
	expectCells(t, "max 2 in [2, 7)", mustGet(t, s, "t", "r", opts), want)
	expectCells(t, "scan max 2 in [2, 7)", scanAll(t, s, "t", store.ScanOptions{ReadOptions: opts}), want)
	// Many rows: MaxVersions restarts at each row.
	for i := range 5 {
		mustApply(t, s, "u", put(fmt.Sprint("row", i), "c", 1, "old"), put(fmt.Sprint("row", i), "c", 2, "new"))
	}
	got := scanAll(t, s, "u", store.ScanOptions{ReadOptions: store.ReadOptions{MaxVersions: 1}})
	if len(got) != 5 {
		t.Fatalf("scan max 1 over 5 rows: got %s", formatCells(got))
	}
	for _, c := range got {
		if string(c.Value) != "new" {
			t.Errorf("scan max 1: got %s, want the newest version", formatCell(c))
		}
	}
}

func testColumns(t *testing.T, s store.Store) {
	ms := []store.Mutation{
		delRow("r", 4),
		put("r", "a", 1, "a1"), put("r", "b", 2, "b2"), put("r", "b", 1, "b1"),
		delCol("r", "c", 3), put("r", "c", 1, "c1"), put("r", "d", 1, "d1"),
	}
	mustApply(t, s, "t", ms...)
	mustApply(t, s, "t", put("s", "a", 1, "sa"), put("s", "d", 1, "sd"))
	opts := store.ReadOptions{Columns: [][]byte{[]byte("c"), []byte("b"), []byte("zz"), []byte("b")}}
	// Row markers are always returned; unlisted and absent columns are not.
	want := cellsOf(ms[0], ms[2], ms[3], ms[4], ms[5])
	expectCells(t, "get columns b,c", mustGet(t, s, "t", "r", opts), want)
	opts.MaxVersions = 1
	want = cellsOf(ms[0], ms[2], ms[4])
	expectCells(t, "get columns b,c max 1", mustGet(t, s, "t", "r", opts), want)
	sopts := store.ScanOptions{ReadOptions: store.ReadOptions{Columns: [][]byte{[]byte("d")}}}
	want = []store.Cell{cellOf(ms[0]), cellOf(ms[6]), cellOf(put("s", "d", 1, "sd"))}
	expectCells(t, "scan column d", scanAll(t, s, "t", sopts), want)
	sopts.Columns = [][]byte{[]byte("nope")}
	expectCells(t, "scan absent column", scanAll(t, s, "t", sopts), cellsOf(ms[0]))
}

func testMarkersRaw(t *testing.T, s store.Store) {
	// Nothing is masked: versions under a marker are still returned.
	ms := []store.Mutation{
		delRow("r", 5), delRow("r", 2),
		put("r", "a", 6, "a6"), put("r", "a", 4, "a4"), put("r", "a", 1, "a1"),
		delCol("r", "b", 3), put("r", "b", 3-1, "b2"),
	}
	mustApply(t, s, "t", ms...)
	expectCells(t, "get raw", mustGet(t, s, "t", "r", store.ReadOptions{}), cellsOf(ms...))
	expectCells(t, "scan raw", scanAll(t, s, "t", store.ScanOptions{}), cellsOf(ms...))
	// A row made only of a marker is still a row.
	mustApply(t, s, "t", delRow("gone", 9))
	expectCells(t, "get marker-only row", mustGet(t, s, "t", "gone", store.ReadOptions{}), cellsOf(delRow("gone", 9)))
}

func testEmptyValue(t *testing.T, s store.Store) {
	mustApply(t, s, "t", put("r", "empty", 1, ""), delCol("r", "marker", 1))
	got := mustGet(t, s, "t", "r", store.ReadOptions{})
	if len(got) != 2 {
		t.Fatalf("get: got %s", formatCells(got))
	}
	if got[0].Kind != store.KindPut || len(got[0].Value) != 0 || string(got[0].Column) != "empty" {
		t.Errorf("empty value: got %s, want a put with an empty value", formatCell(got[0]))
	}
	if got[1].Kind != store.KindDeleteColumn || got[1].Value != nil {
		t.Errorf("marker: got %s (value %v), want a delete-column with a nil value", formatCell(got[1]), got[1].Value)
	}
	// A marker written with a value carries none back.
	m := delCol("r", "m2", 2)
	m.Cell.Value = []byte("ignored")
	mustApply(t, s, "t", m)
	got = mustGet(t, s, "t", "r", store.ReadOptions{Columns: [][]byte{[]byte("m2")}})
	if len(got) != 1 || got[0].Value != nil {
		t.Errorf("marker written with a value: got %s", formatCells(got))
	}
}

func testRewrite(t *testing.T, s store.Store) {
	mustApply(t, s, "t", put("r", "c", 5, "first"))
	mustApply(t, s, "t", put("r", "c", 5, "second"))
	expectCells(t, "put over put", mustGet(t, s, "t", "r", store.ReadOptions{}), cellsOf(put("r", "c", 5, "second")))
	mustApply(t, s, "t", delCol("r", "c", 5))
	expectCells(t, "marker over put", mustGet(t, s, "t", "r", store.ReadOptions{}), cellsOf(delCol("r", "c", 5)))
	mustApply(t, s, "t", put("r", "c", 5, "third"))
	expectCells(t, "put over marker", mustGet(t, s, "t", "r", store.ReadOptions{}), cellsOf(put("r", "c", 5, "third")))
	// Within one batch, the last mutation of a coordinate wins.
	mustApply(t, s, "t", put("q", "c", 1, "x"), put("q", "c", 1, "y"), delCol("q", "c", 1), put("q", "c", 1, "z"))
	expectCells(t, "rewrite in one batch", mustGet(t, s, "t", "q", store.ReadOptions{}), cellsOf(put("q", "c", 1, "z")))
	mustApply(t, s, "t", delRow("p", 3), delRow("p", 3))
	expectCells(t, "row marker twice", mustGet(t, s, "t", "p", store.ReadOptions{}), cellsOf(delRow("p", 3)))
}

func testDeleteVersion(t *testing.T, s store.Store) {
	ms := []store.Mutation{put("r", "c", 3, "v3"), put("r", "c", 2, "v2"), put("r", "c", 1, "v1"), delCol("r", "d", 2), delRow("r", 4)}
	mustApply(t, s, "t", ms...)
	mustApply(t, s, "t", delVersion("r", "c", 2))
	expectCells(t, "after deleting c@2", mustGet(t, s, "t", "r", store.ReadOptions{}), cellsOf(ms[4], ms[0], ms[2], ms[3]))
	// Absent versions: no error, nothing changes.
	mustApply(t, s, "t", delVersion("r", "c", 2), delVersion("r", "c", 7), delVersion("r", "zz", 1), delVersion("nope", "c", 3))
	expectCells(t, "after deleting absent versions", mustGet(t, s, "t", "r", store.ReadOptions{}), cellsOf(ms[4], ms[0], ms[2], ms[3]))
	// Markers are versions too; a row marker is column "".
	mustApply(t, s, "t", delVersion("r", "d", 2), delVersion("r", "", 4))
	expectCells(t, "after deleting markers", mustGet(t, s, "t", "r", store.ReadOptions{}), cellsOf(ms[0], ms[2]))
	// Delete then put in one batch re-creates; put then delete removes.
	mustApply(t, s, "t", delVersion("r", "c", 3), put("r", "c", 3, "again"), put("r", "c", 1, "v1b"), delVersion("r", "c", 1))
	expectCells(t, "delete/put order in a batch", mustGet(t, s, "t", "r", store.ReadOptions{}), cellsOf(put("r", "c", 3, "again")))
	mustApply(t, s, "t", delVersion("r", "c", 3))
	if got := mustGet(t, s, "t", "r", store.ReadOptions{}); got != nil {
		t.Errorf("row with every version deleted: got %s, want nil", formatCells(got))
	}
}

func testDeleteRange(t *testing.T, s store.Store) {
	fill := func() {
		for _, r := range []string{"a", "b", "b\x00", "c", "d", "e"} {
			mustApply(t, s, "t", put(r, "x", 1, r), put(r, "x", 2, r), delRow(r, 3))
		}
		mustApply(t, s, "tt", put("c", "x", 1, "other table"))
	}
	fill()
	ctx := t.Context()
	if err := s.DeleteRange(ctx, "t", []byte("b"), []byte("d")); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(scanAll(t, s, "t", store.ScanOptions{})); !slices.Equal(got, []string{"a", "d", "e"}) {
		t.Errorf("rows after deleting [b, d): %q", got)
	}
	if got := mustGet(t, s, "t", "c", store.ReadOptions{}); got != nil {
		t.Errorf("get deleted row: %s", formatCells(got))
	}
	if err := s.DeleteRange(ctx, "t", []byte("d"), []byte("d")); err != nil {
		t.Errorf("empty range: %v", err)
	}
	if err := s.DeleteRange(ctx, "t", nil, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(ctx, "t", []byte("e"), nil); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(scanAll(t, s, "t", store.ScanOptions{})); !slices.Equal(got, []string{"d"}) {
		t.Errorf("rows after open-ended deletes: %q", got)
	}
	if err := s.DeleteRange(ctx, "t", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, s, "t", store.ScanOptions{}); len(got) != 0 {
		t.Errorf("table after deleting everything: %s", formatCells(got))
	}
	expectCells(t, "other table untouched", scanAll(t, s, "tt", store.ScanOptions{}), cellsOf(put("c", "x", 1, "other table")))
	// The table can be written again.
	mustApply(t, s, "t", put("a", "x", 1, "back"))
	expectCells(t, "rewrite after delete", mustGet(t, s, "t", "a", store.ReadOptions{}), cellsOf(put("a", "x", 1, "back")))
	expectErr(t, "inverted range", s.DeleteRange(ctx, "t", []byte("z"), []byte("a")), store.ErrInvalidArgument)
	expectErr(t, "empty table", s.DeleteRange(ctx, "", nil, nil), store.ErrInvalidArgument)
}

// binaryKeys are distinct byte strings around the bytes an escaping encoding
// treats specially (0x00, 0xFF) and around prefixes.
var binaryKeys = []string{
	"\x00", "\x00\x00", "\x00\x00\x00", "\x00\x01", "\x00\x02", "\x00\xff", "\x00\xff\x00", "\x01", "\x01\x00",
	"\x7f", "\x80", "\xfe", "\xff", "\xff\x00", "\xff\xff", "\xff\xff\xff",
	"a", "a\x00", "a\x00\x00", "a\x00\x01", "a\x00b", "a\x01", "a\xff", "ab", "b",
}

func testBinaryRows(t *testing.T, s store.Store) {
	var ms []store.Mutation
	for i, r := range binaryKeys {
		ms = append(ms, put(r, "c", 1, fmt.Sprint(i)), put(r, "c\x00", 2, fmt.Sprint(i)))
	}
	// Reverse order of writing, one batch.
	slices.Reverse(ms)
	mustApply(t, s, "t", ms...)
	want := slices.Clone(binaryKeys)
	slices.Sort(want) // bytewise
	if got := rowsOf(scanAll(t, s, "t", store.ScanOptions{})); !slices.Equal(got, want) {
		t.Errorf("row order:\ngot  %q\nwant %q", got, want)
	}
	for _, r := range binaryKeys {
		got := mustGet(t, s, "t", r, store.ReadOptions{})
		if len(got) != 2 || string(got[0].Row) != r || string(got[1].Row) != r {
			t.Errorf("get %q: %s", r, formatCells(got))
		}
	}
	// Ranges with binary bounds.
	opts := store.ScanOptions{Start: []byte("\x00\x00"), End: []byte("\x00\xff")}
	if got := rowsOf(scanAll(t, s, "t", opts)); !slices.Equal(got, []string{"\x00\x00", "\x00\x00\x00", "\x00\x01", "\x00\x02"}) {
		t.Errorf("scan [00 00, 00 ff): %q", got)
	}
	opts = store.ScanOptions{Start: []byte("a\x00"), End: []byte("a\x01")}
	if got := rowsOf(scanAll(t, s, "t", opts)); !slices.Equal(got, []string{"a\x00", "a\x00\x00", "a\x00\x01", "a\x00b"}) {
		t.Errorf("scan [a 00, a 01): %q", got)
	}
	opts = store.ScanOptions{Start: []byte("\xff")}
	if got := rowsOf(scanAll(t, s, "t", opts)); !slices.Equal(got, []string{"\xff", "\xff\x00", "\xff\xff", "\xff\xff\xff"}) {
		t.Errorf("scan [ff, end): %q", got)
	}
	if err := s.DeleteRange(t.Context(), "t", []byte("a"), []byte("a\x00\x01")); err != nil {
		t.Fatal(err)
	}
	opts = store.ScanOptions{Start: []byte("a"), End: []byte("b\x00")}
	if got := rowsOf(scanAll(t, s, "t", opts)); !slices.Equal(got, []string{"a\x00\x01", "a\x00b", "a\x01", "ab", "a\xff", "b"}) {
		t.Errorf("rows after deleting [a, a 00 01): %q", got)
	}
}

func testBinaryColumns(t *testing.T, s store.Store) {
	var ms []store.Mutation
	for i, c := range binaryKeys {
		ms = append(ms, put("r", c, 1, fmt.Sprint(i)), put("r\x00", c, 1, fmt.Sprint(i)))
	}
	slices.Reverse(ms)
	mustApply(t, s, "t", ms...)
	want := slices.Clone(binaryKeys)
	slices.Sort(want)
	got := mustGet(t, s, "t", "r", store.ReadOptions{})
	var cols []string
	for _, c := range got {
		if string(c.Row) != "r" {
			t.Errorf("get r returned a cell of row %q", c.Row)
		}
		cols = append(cols, string(c.Column))
	}
	if !slices.Equal(cols, want) {
		t.Errorf("column order:\ngot  %q\nwant %q", cols, want)
	}
	// A filter on binary columns selects exactly them.
	sel := [][]byte{[]byte("a\x00"), []byte("\x00"), []byte("\xff")}
	got = mustGet(t, s, "t", "r\x00", store.ReadOptions{Columns: sel})
	cols = cols[:0]
	for _, c := range got {
		cols = append(cols, string(c.Column))
	}
	if !slices.Equal(cols, []string{"\x00", "a\x00", "\xff"}) {
		t.Errorf("filtered binary columns: %q", cols)
	}
}

func testTablesIsolated(t *testing.T, s store.Store) {
	tables := []string{"a", "ab", "a/b", "a.b", "b", "d/films/0", "d/films/01", "d/films/1"}
	for _, tb := range tables {
		mustApply(t, s, tb, put("r", "c", 1, tb), put("r\x00", "c", 1, tb))
	}
	for _, tb := range tables {
		got := scanAll(t, s, tb, store.ScanOptions{})
		want := cellsOf(put("r", "c", 1, tb), put("r\x00", "c", 1, tb))
		expectCells(t, "scan "+tb, got, want)
		expectCells(t, "get "+tb, mustGet(t, s, tb, "r", store.ReadOptions{}), want[:1])
	}
	if err := s.DeleteRange(t.Context(), "a", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, s, "a", store.ScanOptions{}); len(got) != 0 {
		t.Errorf("table a after DeleteRange: %s", formatCells(got))
	}
	for _, tb := range tables[1:] {
		if got := scanAll(t, s, tb, store.ScanOptions{}); len(got) != 2 {
			t.Errorf("table %q after deleting table a: %s", tb, formatCells(got))
		}
	}
}

func testScanRange(t *testing.T, s store.Store) {
	rows := []string{"a", "b", "c", "d", "e"}
	for _, r := range rows {
		mustApply(t, s, "t", put(r, "x", 1, r), put(r, "y", 1, r))
	}
	for _, tc := range []struct {
		start, end []byte
		want       []string
	}{
		{nil, nil, rows},
		{[]byte("b"), []byte("d"), []string{"b", "c"}},
		{[]byte("b\x00"), []byte("d\x00"), []string{"c", "d"}},
		{[]byte("0"), []byte("b"), []string{"a"}},
		{[]byte("c"), nil, []string{"c", "d", "e"}},
		{nil, []byte("c"), []string{"a", "b"}},
		{[]byte("c"), []byte("c"), nil},
		{[]byte("f"), nil, nil},
		{[]byte(""), []byte("b"), []string{"a"}},
	} {
		got := rowsOf(scanAll(t, s, "t", store.ScanOptions{Start: tc.start, End: tc.end}))
		if !slices.Equal(got, tc.want) {
			t.Errorf("scan [%q, %q): got %q, want %q", tc.start, tc.end, got, tc.want)
		}
	}
	_, err := s.Scan(t.Context(), "t", store.ScanOptions{Start: []byte("d"), End: []byte("b")})
	expectErr(t, "inverted row range", err, store.ErrInvalidArgument)
}

func testSeekRow(t *testing.T, s store.Store) {
	for i := range 20 {
		r := fmt.Sprintf("r%02d", i)
		mustApply(t, s, "t", put(r, "a", 1, r), put(r, "b", 1, r))
	}
	it, err := s.Scan(t.Context(), "t", store.ScanOptions{Start: []byte("r03"), End: []byte("r15")})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	next := func(what string) string {
		t.Helper()
		if !it.Next() {
			t.Fatalf("%s: iteration ended early (err %v)", what, it.Err())
		}
		c := it.Cell()
		return string(c.Row) + "/" + string(c.Column)
	}
	if got := next("first"); got != "r03/a" {
		t.Errorf("first cell %s, want r03/a", got)
	}
	it.SeekRow([]byte("r07"))
	if got := next("seek r07"); got != "r07/a" {
		t.Errorf("after SeekRow(r07): %s, want r07/a", got)
	}
	if got := next("after seek"); got != "r07/b" {
		t.Errorf("after r07/a: %s, want r07/b", got)
	}
	it.SeekRow([]byte("r09x")) // absent: lands on the next row
	if got := next("seek r09x"); got != "r10/a" {
		t.Errorf("after SeekRow(r09x): %s, want r10/a", got)
	}
	it.SeekRow([]byte("r05")) // backwards: the first row >= r05
	if got := next("seek r05"); got != "r05/a" {
		t.Errorf("after SeekRow(r05): %s, want r05/a", got)
	}
	it.SeekRow([]byte("a")) // before the scan's start: clamps to it
	if got := next("seek a"); got != "r03/a" {
		t.Errorf("after SeekRow(a): %s, want r03/a", got)
	}
	it.SeekRow([]byte("r14"))
	if got := next("seek r14"); got != "r14/a" {
		t.Errorf("after SeekRow(r14): %s, want r14/a", got)
	}
	it.SeekRow([]byte("r15")) // the scan's end is excluded
	if it.Next() {
		t.Errorf("after SeekRow(end): got %s, want the end", formatCell(it.Cell()))
	}
	if err := it.Err(); err != nil {
		t.Errorf("Err at end: %v", err)
	}
	// SeekRow before the first Next.
	it2, err := s.Scan(t.Context(), "t", store.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it2.Close()
	it2.SeekRow([]byte("r18"))
	var got []string
	for it2.Next() {
		got = append(got, string(it2.Cell().Row))
	}
	if !slices.Equal(got, []string{"r18", "r18", "r19", "r19"}) {
		t.Errorf("SeekRow before Next: rows %q", got)
	}
}

func testScanConsistent(t *testing.T, s store.Store) {
	var before []store.Mutation
	for i := range 10 {
		r := fmt.Sprintf("r%02d", i)
		before = append(before, put(r, "a", 5, "old"), put(r, "b", 5, "old"))
	}
	mustApply(t, s, "t", before...)
	it, err := s.Scan(t.Context(), "t", store.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []store.Cell
	if !it.Next() {
		t.Fatalf("empty scan: %v", it.Err())
	}
	got = append(got, cloneCell(it.Cell()))
	// Writes after the scan began: new rows before and after the cursor,
	// newer versions, rewrites of a coordinate, deletions.
	mustApply(t, s, "t", put("r00x", "a", 6, "new"), put("r05", "a", 6, "new"), put("r09", "c", 1, "new"),
		put("r07", "a", 5, "rewritten"), delVersion("r08", "b", 5), delRow("r06", 9), put("r99", "a", 1, "new"))
	if err := s.DeleteRange(t.Context(), "t", []byte("r03"), []byte("r05")); err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		got = append(got, cloneCell(it.Cell()))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	expectCells(t, "scan begun before the writes", got, cellsOf(before...))
}

func testReadYourWrites(t *testing.T, s store.Store) {
	for i := range 30 {
		r := fmt.Sprintf("r%02d", i)
		mustApply(t, s, "t", put(r, "c", int64(i), r))
		got := mustGet(t, s, "t", r, store.ReadOptions{})
		expectCells(t, "get after apply", got, cellsOf(put(r, "c", int64(i), r)))
		if n := len(scanAll(t, s, "t", store.ScanOptions{})); n != i+1 {
			t.Fatalf("scan after %d applies: %d cells", i+1, n)
		}
	}
}

func testBatchAtomic(t *testing.T, s store.Store) {
	mustApply(t, s, "t", put("r", "c", 1, "kept"))
	// One bad mutation anywhere: nothing of the batch is applied.
	bad := []store.Mutation{put("r", "c", 1, "overwritten"), put("r2", "c", 1, "new")}
	for _, m := range []store.Mutation{
		put("", "c", 1, "empty row"),
		put("x", "c", -1, "negative"),
		{Op: store.OpPut, Cell: store.Cell{Row: []byte("x"), Column: []byte("c"), Kind: 99}},
		{Op: 99, Cell: store.Cell{Row: []byte("x")}},
		{Op: store.OpPut, Cell: store.Cell{Row: []byte("x"), Column: []byte("c"), Kind: store.KindDeleteRow}},
	} {
		b := &store.Batch{Table: "t", Mutations: append(slices.Clone(bad), m, put("r3", "c", 1, "after"))}
		expectErr(t, fmt.Sprintf("batch with bad mutation %s", formatCell(m.Cell)), s.Apply(t.Context(), b), store.ErrInvalidArgument)
	}
	expectCells(t, "after rejected batches", scanAll(t, s, "t", store.ScanOptions{}), cellsOf(put("r", "c", 1, "kept")))
	// A large batch is applied whole.
	b := &store.Batch{Table: "t"}
	for i := range 500 {
		b.Put([]byte(fmt.Sprintf("big%03d", i)), []byte("c"), 1, []byte("v"))
	}
	if err := s.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if n := len(scanAll(t, s, "t", store.ScanOptions{Start: []byte("big"), End: []byte("bih")})); n != 500 {
		t.Errorf("large batch: %d cells, want 500", n)
	}
	// An empty batch is a no-op.
	if err := s.Apply(t.Context(), &store.Batch{Table: "t"}); err != nil {
		t.Errorf("empty batch: %v", err)
	}
}

func testBatchReuse(t *testing.T, s store.Store) {
	b := &store.Batch{Table: "t"}
	b.Put([]byte("r1"), []byte("c"), 1, []byte("v1"))
	b.DeleteColumn([]byte("r1"), []byte("d"), 1)
	b.Sync = true
	if err := s.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if b.Len() != 0 || b.Sync || b.Table != "t" {
		t.Fatalf("Reset: len %d sync %v table %q", b.Len(), b.Sync, b.Table)
	}
	b.DeleteRow([]byte("r2"), 3)
	b.DeleteVersion([]byte("r1"), []byte("d"), 1)
	if err := s.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	want := cellsOf(put("r1", "c", 1, "v1"), delRow("r2", 3))
	expectCells(t, "after reuse", scanAll(t, s, "t", store.ScanOptions{}), want)
}

func testOwnership(t *testing.T, s store.Store) {
	row, col, val := []byte("row"), []byte("col"), []byte("value")
	b := &store.Batch{Table: "t"}
	b.Put(row, col, 1, val)
	if err := s.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	// The store keeps no reference to the batch's slices after Apply.
	copy(row, "XXX")
	copy(col, "YYY")
	copy(val, "ZZZZZ")
	got := mustGet(t, s, "t", "row", store.ReadOptions{})
	expectCells(t, "after caller reused its buffers", got, cellsOf(put("row", "col", 1, "value")))
	// Slices returned by Get belong to the caller.
	for i := range got {
		copy(got[i].Row, "!!!")
		copy(got[i].Column, "!!!")
		copy(got[i].Value, "!!!!!")
	}
	expectCells(t, "after caller changed returned cells", mustGet(t, s, "t", "row", store.ReadOptions{}), cellsOf(put("row", "col", 1, "value")))
}

func testInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustApply(t, s, "t", put("r", "c", 1, "v"))
	expectErr(t, "apply to empty table", s.Apply(ctx, &store.Batch{Mutations: []store.Mutation{put("r", "c", 1, "v")}}), store.ErrInvalidArgument)
	expectErr(t, "apply empty row", s.Apply(ctx, &store.Batch{Table: "t", Mutations: []store.Mutation{put("", "c", 1, "v")}}), store.ErrInvalidArgument)
	expectErr(t, "apply negative timestamp", s.Apply(ctx, &store.Batch{Table: "t", Mutations: []store.Mutation{put("r", "c", -5, "v")}}), store.ErrInvalidArgument)
	expectErr(t, "delete version with empty row", s.Apply(ctx, &store.Batch{Table: "t", Mutations: []store.Mutation{delVersion("", "c", 1)}}), store.ErrInvalidArgument)
	_, err := s.Get(ctx, "", []byte("r"), store.ReadOptions{})
	expectErr(t, "get from empty table", err, store.ErrInvalidArgument)
	_, err = s.Get(ctx, "t", nil, store.ReadOptions{})
	expectErr(t, "get empty row", err, store.ErrInvalidArgument)
	for _, tr := range []store.TimeRange{{Min: 5, Max: 3}, {Min: -1, Max: 3}, {Min: 1, Max: 0}} {
		_, err = s.Get(ctx, "t", []byte("r"), store.ReadOptions{TimeRange: tr})
		expectErr(t, fmt.Sprintf("get with time range %+v", tr), err, store.ErrInvalidArgument)
		_, err = s.Scan(ctx, "t", store.ScanOptions{ReadOptions: store.ReadOptions{TimeRange: tr}})
		expectErr(t, fmt.Sprintf("scan with time range %+v", tr), err, store.ErrInvalidArgument)
	}
	_, err = s.Scan(ctx, "", store.ScanOptions{})
	expectErr(t, "scan empty table", err, store.ErrInvalidArgument)
	expectCells(t, "nothing changed", scanAll(t, s, "t", store.ScanOptions{}), cellsOf(put("r", "c", 1, "v")))
}

func testContextCanceled(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.Apply(ctx, &store.Batch{Table: "t", Mutations: []store.Mutation{put("r", "c", 1, "v")}})
	expectErr(t, "apply with canceled context", err, context.Canceled)
	_, err = s.Get(ctx, "t", []byte("r"), store.ReadOptions{})
	expectErr(t, "get with canceled context", err, context.Canceled)
	if it, err := s.Scan(ctx, "t", store.ScanOptions{}); err == nil {
		// A backend may check the context lazily; then iteration must fail.
		for it.Next() {
		}
		expectErr(t, "scan with canceled context", it.Close(), context.Canceled)
	} else {
		expectErr(t, "scan with canceled context", err, context.Canceled)
	}
	if got := mustGet(t, s, "t", "r", store.ReadOptions{}); got != nil {
		t.Errorf("batch applied under a canceled context: %s", formatCells(got))
	}
}

func testClosed(t *testing.T, s store.Store) {
	mustApply(t, s, "t", put("r", "c", 1, "v"))
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	ctx := t.Context()
	expectErr(t, "apply after close", s.Apply(ctx, &store.Batch{Table: "t", Mutations: []store.Mutation{put("r", "c", 2, "v")}}), store.ErrClosed)
	_, err := s.Get(ctx, "t", []byte("r"), store.ReadOptions{})
	expectErr(t, "get after close", err, store.ErrClosed)
	_, err = s.Scan(ctx, "t", store.ScanOptions{})
	expectErr(t, "scan after close", err, store.ErrClosed)
	expectErr(t, "delete range after close", s.DeleteRange(ctx, "t", nil, nil), store.ErrClosed)
	expectErr(t, "sync after close", s.Sync(ctx), store.ErrClosed)
	expectErr(t, "second close", s.Close(), store.ErrClosed)
}

func testClosedIterator(t *testing.T, s store.Store) {
	for i := range 50 {
		mustApply(t, s, "t", put(fmt.Sprintf("r%02d", i), "c", 1, "v"))
	}
	it, err := s.Scan(t.Context(), "t", store.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !it.Next() {
		t.Fatalf("empty scan: %v", it.Err())
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close with an open iterator: %v", err)
	}
	// A backend may hand out cells it had already fetched, but the
	// iteration must end, with ErrClosed.
	n := 0
	for it.Next() {
		if n++; n > 50 {
			t.Fatal("iterator runs on after Close")
		}
	}
	expectErr(t, "iterator Err after store Close", it.Err(), store.ErrClosed)
	expectErr(t, "iterator Close after store Close", it.Close(), store.ErrClosed)
	it.SeekRow([]byte("r01"))
	if it.Next() {
		t.Error("Next after SeekRow on a closed iterator returned a cell")
	}
}

func testConcurrent(t *testing.T, s store.Store) {
	const writers, batches, cols = 4, 25, 5
	ctx := t.Context()
	var wg sync.WaitGroup
	errc := make(chan error, writers+2)
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := &store.Batch{Table: "t"}
			for i := range batches {
				b.Reset()
				row := []byte(fmt.Sprintf("w%d/%03d", w, i))
				for c := range cols {
					b.Put(row, []byte(fmt.Sprint("c", c)), int64(i), []byte(fmt.Sprint(w, i, c)))
				}
				if err := s.Apply(ctx, b); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	// Readers check store.S1: every row they see has all its columns.
	var rwg sync.WaitGroup
	for range 2 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				it, err := s.Scan(ctx, "t", store.ScanOptions{})
				if err != nil {
					errc <- err
					return
				}
				counts := map[string]int{}
				for it.Next() {
					counts[string(it.Cell().Row)]++
				}
				if err := it.Close(); err != nil {
					errc <- err
					return
				}
				for row, n := range counts {
					if n != cols {
						errc <- fmt.Errorf("row %q seen with %d of %d columns: a batch was seen in part", row, n, cols)
						return
					}
				}
				if _, err := s.Get(ctx, "t", []byte("w0/000"), store.ReadOptions{MaxVersions: 1}); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	rwg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if n := len(scanAll(t, s, "t", store.ScanOptions{})); n != writers*batches*cols {
		t.Errorf("after concurrent writes: %d cells, want %d", n, writers*batches*cols)
	}
}

// testRandomized applies random batches (puts, markers, rewrites, version
// deletions, range deletions; with Apply, MutateRow or CheckAndMutate, the
// model deciding whether the check holds) and compares random Get and Scan calls with an
// in-memory model after each step.
func testRandomized(t *testing.T, s store.Store, seed uint64) {
	t.Logf("seed %d (replay with storetest.WithSeed)", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	rows := []string{"\x00", "\x00\x00", "\x00\xff", "a", "a\x00", "ab", "b", "\xff", "\xff\x00"}
	cols := []string{"\x00", "c", "c\x00", "d", "\xff"}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	m := newModel()
	ctx := t.Context()
	for step := range 40 {
		b := &store.Batch{Table: "t", Sync: rng.IntN(4) == 0}
		for range 1 + rng.IntN(12) {
			r, c, ts := pick(rows), pick(cols), int64(rng.IntN(8))
			switch rng.IntN(10) {
			case 0, 1, 2, 3, 4:
				b.Put([]byte(r), []byte(c), ts, []byte(fmt.Sprintf("%d/%q/%q/%d", step, r, c, ts)[:rng.IntN(9)]))
			case 5:
				b.DeleteColumn([]byte(r), []byte(c), ts)
			case 6:
				b.DeleteRow([]byte(r), ts)
			case 7, 8:
				// An existing version, picked deterministically.
				if ks := m.sortedCoords(); len(ks) > 0 {
					k := ks[rng.IntN(len(ks))]
					r, c, ts = k.row, k.col, k.ts
				}
				b.DeleteVersion([]byte(r), []byte(c), ts)
			case 9:
				b.DeleteVersion([]byte(r), []byte(c), ts)
			}
		}
		switch rng.IntN(4) {
		case 0: // the same mutations, one row's, with MutateRow
			b.Mutations = rowOnly(b.Mutations)
			if err := s.MutateRow(ctx, b); err != nil {
				t.Fatalf("step %d: mutate row: %v", step, err)
			}
			m.apply(b)
		case 1: // or with CheckAndMutate, on a random check
			b.Mutations = rowOnly(b.Mutations)
			check := store.Check{Column: []byte(pick(cols))}
			if rng.IntN(2) == 0 {
				if c, ok := m.newest(string(b.Mutations[0].Cell.Row), string(check.Column)); ok && c.Kind == store.KindPut && rng.IntN(4) > 0 {
					check.Value = c.Value
				} else {
					check.Value = []byte(pick(cols))
				}
			}
			applied, err := s.CheckAndMutate(ctx, b, check)
			if err != nil {
				t.Fatalf("step %d: check and mutate: %v", step, err)
			}
			if want := m.check(string(b.Mutations[0].Cell.Row), check); applied != want {
				t.Fatalf("step %d (seed %d): check %q=%q applied %v, want %v", step, seed, check.Column, check.Value, applied, want)
			}
			if applied {
				m.apply(b)
			}
		default:
			if err := s.Apply(ctx, b); err != nil {
				t.Fatalf("step %d: apply: %v", step, err)
			}
			m.apply(b)
		}
		if step%10 == 9 {
			lo, hi := pick(rows), pick(rows)
			if lo > hi {
				lo, hi = hi, lo
			}
			if err := s.DeleteRange(ctx, "t", []byte(lo), []byte(hi)); err != nil {
				t.Fatalf("step %d: delete range: %v", step, err)
			}
			m.deleteRange([]byte(lo), []byte(hi))
		}
		for q := range 3 {
			var opts store.ReadOptions
			if rng.IntN(2) == 0 {
				lo := int64(rng.IntN(8))
				opts.TimeRange = store.TimeRange{Min: lo, Max: lo + int64(rng.IntN(8))}
			}
			if rng.IntN(2) == 0 {
				opts.MaxVersions = rng.IntN(4)
			}
			if rng.IntN(3) == 0 {
				for range 1 + rng.IntN(3) {
					opts.Columns = append(opts.Columns, []byte(pick(cols)))
				}
			}
			norm, _ := opts.Normalize()
			what := fmt.Sprintf("step %d query %d (seed %d) opts %+v", step, q, seed, describe(norm))
			row := pick(rows)
			want := nilIfEmpty(m.read([]byte(row), []byte(row+"\x00"), norm))
			expectCells(t, what+" get "+fmt.Sprintf("%q", row), mustGet(t, s, "t", row, opts), want)
			expectCells(t, what+" visit "+fmt.Sprintf("%q", row), mustVisit(t, s, "t", row, opts, -1), want)
			if n := len(want); n > 0 {
				k := 1 + rng.IntN(n)
				expectCells(t, what+fmt.Sprintf(" visit %q stopping at %d", row, k), mustVisit(t, s, "t", row, opts, k), want[:k])
			}
			var start, end []byte
			if rng.IntN(2) == 0 {
				start = []byte(pick(rows))
			}
			if rng.IntN(2) == 0 {
				end = []byte(pick(rows))
				if start != nil && bytes.Compare(start, end) > 0 {
					start, end = end, start
				}
			}
			got := scanAll(t, s, "t", store.ScanOptions{ReadOptions: opts, Start: start, End: end})
			expectCells(t, what+fmt.Sprintf(" scan [%q, %q)", start, end), got, m.read(start, end, norm))
			if t.Failed() {
				t.FailNow()
			}
		}
	}
}

// rowOnly keeps the mutations of the first one's row.
func rowOnly(ms []store.Mutation) []store.Mutation {
	var out []store.Mutation
	for _, m := range ms {
		if bytes.Equal(m.Cell.Row, ms[0].Cell.Row) {
			out = append(out, m)
		}
	}
	return out
}

func nilIfEmpty(c []store.Cell) []store.Cell {
	if len(c) == 0 {
		return nil
	}
	return c
}

func describe(o store.ReadOptions) string {
	cols := make([]string, len(o.Columns))
	for i, c := range o.Columns {
		cols[i] = fmt.Sprintf("%q", c)
	}
	return fmt.Sprintf("{time [%d, %d) max %d columns [%s]}", o.TimeRange.Min, o.TimeRange.Max, o.MaxVersions, strings.Join(cols, " "))
}

func testDurable(t *testing.T, s store.Store, reopen func(t *testing.T, closed store.Store) store.Store) {
	ctx := t.Context()
	b := &store.Batch{Table: "t", Sync: true}
	b.Put([]byte("synced"), []byte("c"), 1, []byte("v"))
	b.DeleteRow([]byte("synced"), 2)
	if err := s.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, "t", put("later", "c", 3, "v"))
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, "t", put("dropped", "c", 4, "v"))
	if err := s.DeleteRange(ctx, "t", []byte("dropped"), []byte("dropped\x00")); err != nil {
		t.Fatal(err)
	}
	durableRowOps(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := reopen(t, s)
	defer func() {
		if err := s2.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Error(err)
		}
	}()
	want := cellsOf(put("later", "c", 3, "v"), put("row", "c", 1, "checked"), put("row", "m", 1, "mutated"), delRow("synced", 2), put("synced", "c", 1, "v"))
	expectCells(t, "after reopen", scanAll(t, s2, "t", store.ScanOptions{}), want)
	checkDurableRowOps(t, s2)
	mustApply(t, s2, "t", put("again", "c", 5, "v"))
	expectCells(t, "write after reopen", mustGet(t, s2, "t", "again", store.ReadOptions{}), cellsOf(put("again", "c", 5, "v")))
}
