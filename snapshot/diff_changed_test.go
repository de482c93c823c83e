package snapshot

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/hbase/hbasetest"
	"github.com/snapstore/snapstore/store/pebble"
	"github.com/snapstore/snapstore/txn"
)

// countingStore counts the cells its store hands out: each cell an
// iterator returns, each cell of Get and VisitRow.
type countingStore struct {
	store.Store
	cells atomic.Int64
}

func (s *countingStore) Scan(ctx context.Context, table string, opts store.ScanOptions) (store.Iterator, error) {
	it, err := s.Store.Scan(ctx, table, opts)
	if err != nil {
		return nil, err
	}
	return &countingIter{Iterator: it, n: &s.cells}, nil
}

func (s *countingStore) Get(ctx context.Context, table string, row []byte, opts store.ReadOptions) ([]store.Cell, error) {
	cells, err := s.Store.Get(ctx, table, row, opts)
	s.cells.Add(int64(len(cells)))
	return cells, err
}

func (s *countingStore) VisitRow(ctx context.Context, table string, row []byte, opts store.ReadOptions, fn func(store.Cell) bool) error {
	return s.Store.VisitRow(ctx, table, row, opts, func(c store.Cell) bool {
		s.cells.Add(1)
		return fn(c)
	})
}

type countingIter struct {
	store.Iterator
	n *atomic.Int64
}

func (it *countingIter) Next() bool {
	ok := it.Iterator.Next()
	if ok {
		it.n.Add(1)
	}
	return ok
}

// diffLines lists the changes of the diff from..to of dataset name, each
// as one line (op, key, both sides, changed columns), through the
// time-bound path or, with full, the walk of every row. bounded reports
// whether the diff could use the time-bound path.
func diffLines(t *testing.T, db *DB, name string, from, to int64, full bool) (lines []string, bounded bool) {
	t.Helper()
	d, err := db.newDiff(context.Background(), name, "", false, from, to, false)
	if err != nil {
		t.Fatal(err)
	}
	bounded = d.cand != nil
	if full && d.cand != nil {
		if err := d.cand.close(); err != nil {
			t.Fatal(err)
		}
		d.cand = nil
	}
	side := func(r *Row) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprint(*r)
	}
	for d.Next() {
		c := d.Change()
		lines = append(lines, fmt.Sprintf("%s %v before=%s after=%s changed=%v", c.Op, c.Key, side(c.Before), side(c.After), c.Changed))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return lines, bounded
}

// TestTimeBoundDiffReadsChangedCells diffs a version that changed 1% of
// the rows against the one before, on Pebble and on HBase: the
// time-bound diff gives the changes the full walk gives, reading a small
// fraction of the cells.
func TestTimeBoundDiffReadsChangedCells(t *testing.T) {
	for _, b := range []struct {
		name string
		open func(t *testing.T) store.Store
		rows int
	}{
		{"pebble", func(t *testing.T) store.Store {
			st, err := pebble.Open(t.TempDir(), pebble.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}, 10000},
		{"hbase", func(t *testing.T) store.Store { return hbasetest.Open(t) }, 3000},
	} {
		t.Run(b.name, func(t *testing.T) {
			cs := &countingStore{Store: b.open(t)}
			db := openTestDB(t, cs, Options{})
			var rows [][]Value
			for i := range b.rows {
				rows = append(rows, []Value{iv(int64(i)), sv(fmt.Sprintf("name %d", i))})
			}
			v1 := singleRun(t, db, "d", 4, rows).Version
			// 1% churn: updates, deletes and inserts spread over the keys.
			churn := b.rows / 100
			var next [][]Value
			for i, row := range rows {
				switch {
				case i%100 == 7:
					next = append(next, []Value{row[0], sv(fmt.Sprintf("renamed %d", i))})
				case i%300 == 50:
					// deleted
				default:
					next = append(next, row)
				}
			}
			for i := range churn / 3 {
				next = append(next, []Value{iv(int64(b.rows + i)), sv("new")})
			}
			v2 := singleRun(t, db, "d", 4, next).Version

			cs.cells.Store(0)
			bounded, used := diffLines(t, db, "d", v1, v2, false)
			nb := cs.cells.Swap(0)
			full, _ := diffLines(t, db, "d", v1, v2, true)
			nf := cs.cells.Load()
			if !used {
				t.Fatal("the diff did not use the time-bound path")
			}
			if !slices.Equal(bounded, full) {
				t.Fatalf("time-bound diff (%d changes) differs from the full walk's (%d)", len(bounded), len(full))
			}
			if len(full) < churn {
				t.Fatalf("%d changes, want at least %d", len(full), churn)
			}
			t.Logf("%d rows, %d changes: time-bound diff read %d cells, full walk %d (%.3fx)", b.rows, len(full), nb, nf, float64(nb)/float64(nf))
			if nb*10 > nf {
				t.Errorf("time-bound diff read %d cells, full walk %d: want under a tenth", nb, nf)
			}
		})
	}
}

// TestTimeBoundDiffEqualsFullWalk compares the time-bound diff with the
// full walk between every two kept versions of random histories: inserts,
// updates and deletes, aborted runs, GC of the versions in between (tags
// keep older ones), and rows that a partition key moves between
// partitions.
func TestTimeBoundDiffEqualsFullWalk(t *testing.T) {
	seeds := 4
	if testing.Short() {
		seeds = 1
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 24))
			dir := t.TempDir()
			st := openTestStore(t, dir)
			db := openTestDB(t, st, Options{})
			ret := Retention{TTL: time.Nanosecond, MinVersions: 2}
			names := []Value{sv("a"), sv("b"), sv("c"), sv("d"), {Kind: KindNull}}
			plain, moved := map[int64]Value{}, map[int64]Value{}
			rowsOf := func(m map[int64]Value) [][]Value {
				var out [][]Value
				for id, n := range m {
					out = append(out, []Value{iv(id), n})
				}
				slices.SortFunc(out, func(a, b []Value) int { return int(a[0].Int - b[0].Int) })
				return out
			}
			churn := func(m map[int64]Value) {
				for range 1 + rng.IntN(25) {
					id := int64(rng.IntN(200))
					if _, ok := m[id]; ok && rng.IntN(3) == 0 {
						delete(m, id)
					} else {
						m[id] = names[rng.IntN(len(names))]
					}
				}
			}
			for round := range 14 {
				churn(plain)
				r, err := db.BeginRun(ctx, DatasetConfig{Name: "plain", Guard: Guard{MaxShrink: 1}, Partitions: 3, Retention: ret}, RunOptions{Schema: testSchema})
				if err != nil {
					t.Fatal(err)
				}
				rows := rowsOf(plain)
				abort := round > 0 && rng.IntN(4) == 0
				if abort {
					// The aborted run writes other rows than the next
					// one: its cells stay (invalid) until GC.
					rows = rowsOf(map[int64]Value{int64(rng.IntN(200)): sv("aborted"), 500: sv("aborted")})
				}
				for _, row := range rows {
					if err := r.Put(ctx, row); err != nil {
						t.Fatal(err)
					}
				}
				if abort {
					if err := r.Abort(ctx, "test"); err != nil {
						t.Fatal(err)
					}
				} else {
					vi, err := r.Commit(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if rng.IntN(3) == 0 {
						if err := db.Tag(ctx, "plain", fmt.Sprint("t", round), vi.Version); err != nil {
							t.Fatal(err)
						}
					}
				}
				if rng.IntN(3) == 0 {
					if _, err := db.GC(ctx, "plain", false); err != nil {
						t.Fatal(err)
					}
				}

				churn(moved)
				if _, err := partitionedRun(t, db, []*DB{db}, "moved", 4, []string{"name"}, rowsOf(moved)); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range []string{"plain", "moved"} {
				vs, err := db.Versions(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				pairs := 0
				for _, a := range vs {
					for _, b := range vs {
						got, used := diffLines(t, db, name, a.Version, b.Version, false)
						want, _ := diffLines(t, db, name, a.Version, b.Version, true)
						if !used {
							t.Errorf("%s %d..%d: the diff did not use the time-bound path", name, a.Version, b.Version)
						}
						if !slices.Equal(got, want) {
							t.Fatalf("%s %d..%d: time-bound diff\n%v\nfull walk\n%v", name, a.Version, b.Version, got, want)
						}
						if len(want) > 0 {
							pairs++
						}
					}
				}
				if pairs == 0 || len(vs) < 3 {
					t.Fatalf("%s: %d kept versions, %d pairs with changes: the history tests nothing", name, len(vs), pairs)
				}
			}
		})
	}
}

// TestTimeBoundDiffFallsBack: views that exclude different transactions
// at or below the older version give no candidate scans (the diff walks
// every row); a difference above it does not matter.
func TestTimeBoundDiffFallsBack(t *testing.T) {
	st := newTestStore(t)
	for _, tc := range []struct {
		from, to txn.Visibility
		bounded  bool
	}{
		{txn.NewVisibility(10, []int64{3}), txn.NewVisibility(20, []int64{3, 15}), true},
		{txn.NewVisibility(20, []int64{3, 15}), txn.NewVisibility(10, []int64{3}), true},
		{txn.NewVisibility(10, []int64{3}), txn.NewVisibility(20, []int64{3, 5}), false},
		{txn.NewVisibility(10, []int64{3, 10}), txn.NewVisibility(20, []int64{3}), false},
	} {
		c, err := openChanged(context.Background(), st, []string{dataTable("d", 0), dataTable("d", 1)}, tc.from, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		if (c != nil) != tc.bounded {
			t.Errorf("%v -> %v: time-bound %v, want %v", tc.from, tc.to, c != nil, tc.bounded)
		}
		if c != nil {
			if err := c.close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
