package storetest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/snapstore/snapstore/store"
)

// Shape of the benchmark data, exported so that a backend's raw baseline
// (store/pebble's plain-Pebble benchmarks) writes exactly the same cells.
const (
	// BenchTable is the table the benchmarks write, named like a dataset
	// partition of package snapshot.
	BenchTable = "d/bench/0"
	// BenchColumns is the number of columns of every benchmark row (the
	// design brief's 10-column table).
	BenchColumns = 10
	// BenchValueLen is the length of every benchmark value in bytes (about
	// the mean column width of the brief's table: 276 MB / 2M rows / 10
	// columns).
	BenchValueLen = 14
)

// BenchRow returns the row key of row i: "row" and i as 8 decimal digits,
// appended to dst.
func BenchRow(dst []byte, i int) []byte { return fmt.Appendf(dst, "row%08d", i) }

// BenchColumn returns the name of column j: "col" and j as 2 digits.
func BenchColumn(j int) []byte { return fmt.Appendf(nil, "col%02d", j) }

// BenchValue returns the BenchValueLen-byte value of (row i, column j,
// version ts), appended to dst: deterministic, varied enough not to
// compress to nothing.
func BenchValue(dst []byte, i, j int, ts int64) []byte {
	var x [16]byte
	binary.LittleEndian.PutUint64(x[:], uint64(i)*0x9e3779b97f4a7c15^uint64(j)<<32^uint64(ts))
	binary.LittleEndian.PutUint64(x[8:], uint64(i)*31+uint64(j)*7+uint64(ts)*13)
	return append(dst, x[:BenchValueLen]...)
}

// RunBenchmarks runs the shared store benchmarks as sub-benchmarks of b,
// with their parameters in the name (as Prometheus's head benchmarks):
//
//	write/batch=N               Apply of N cells (rows of BenchColumns cells), NoSync
//	get/rows=R/versions=V       Get of a random row's newest versions (MaxVersions 1)
//	get/rows=R/versions=V/at=middle  Get at a time range ending mid-history
//	scan/rows=R/versions=V      Scan of the whole table, MaxVersions 1
//
// Each reports allocations and a cells/s metric (cells written or
// returned per second). open is called once per sub-benchmark and must
// return an empty store; RunBenchmarks closes it. Data sizes are small
// enough (at most 100 000 cells loaded) for a remote backend.
func RunBenchmarks(b *testing.B, open func(b *testing.B) store.Store) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("write/batch=%d", n), func(b *testing.B) { benchWrite(b, openClosing(b, open), n) })
	}
	for _, tc := range []struct{ rows, versions int }{{1000, 1}, {100, 100}} {
		name := fmt.Sprintf("get/rows=%d/versions=%d", tc.rows, tc.versions)
		b.Run(name, func(b *testing.B) {
			s := openClosing(b, open)
			Load(b, s, tc.rows, tc.versions)
			benchGet(b, s, tc.rows, store.ReadOptions{MaxVersions: 1})
		})
		if tc.versions > 1 {
			b.Run(name+"/at=middle", func(b *testing.B) {
				s := openClosing(b, open)
				Load(b, s, tc.rows, tc.versions)
				tr := store.TimeRange{Min: 0, Max: int64(tc.versions/2) + 1}
				benchGet(b, s, tc.rows, store.ReadOptions{MaxVersions: 1, TimeRange: tr})
			})
		}
	}
	for _, tc := range []struct{ rows, versions int }{{1000, 1}, {1000, 10}} {
		b.Run(fmt.Sprintf("scan/rows=%d/versions=%d", tc.rows, tc.versions), func(b *testing.B) {
			s := openClosing(b, open)
			Load(b, s, tc.rows, tc.versions)
			benchScan(b, s, tc.rows)
		})
	}
}

func openClosing(b *testing.B, open func(b *testing.B) store.Store) store.Store {
	s := open(b)
	b.Cleanup(func() { s.Close() })
	return s
}

// Load writes rows x BenchColumns x versions cells (versions 1..versions)
// into BenchTable, in batches of about 1000 cells, and syncs.
func Load(b testing.TB, s store.Store, rows, versions int) {
	ctx := b.Context()
	batch := &store.Batch{Table: BenchTable}
	cols := benchColumns()
	var arena []byte
	for ts := int64(1); ts <= int64(versions); ts++ {
		for i := range rows {
			start := len(arena)
			arena = BenchRow(arena, i)
			row := arena[start:len(arena):len(arena)]
			for j, c := range cols {
				start := len(arena)
				arena = BenchValue(arena, i, j, ts)
				batch.Put(row, c, ts, arena[start:len(arena):len(arena)])
			}
			if batch.Len() >= 1000 {
				if err := s.Apply(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch.Reset()
				arena = arena[:0:0]
			}
		}
	}
	if err := s.Apply(ctx, batch); err != nil {
		b.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		b.Fatal(err)
	}
}

func benchColumns() [][]byte {
	cols := make([][]byte, BenchColumns)
	for j := range cols {
		cols[j] = BenchColumn(j)
	}
	return cols
}

func benchWrite(b *testing.B, s store.Store, n int) {
	ctx := b.Context()
	cols := benchColumns()
	batch := &store.Batch{Table: BenchTable}
	rows := make([][]byte, (n+BenchColumns-1)/BenchColumns)
	vals := make([][]byte, n)
	for k := range vals {
		vals[k] = BenchValue(nil, k/BenchColumns, k%BenchColumns, 1)
	}
	b.ReportAllocs()
	cells, next := 0, 0
	for b.Loop() {
		batch.Reset()
		for r := range rows {
			rows[r] = BenchRow(rows[r][:0], next)
			next++
		}
		for k := range n {
			batch.Put(rows[k/BenchColumns], cols[k%BenchColumns], 1, vals[k])
		}
		if err := s.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
		cells += n
	}
	b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), "cells/s")
}

func benchGet(b *testing.B, s store.Store, rows int, opts store.ReadOptions) {
	ctx := b.Context()
	keys := make([][]byte, rows)
	for i := range keys {
		keys[i] = BenchRow(nil, i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	cells := 0
	for b.Loop() {
		got, err := s.Get(ctx, BenchTable, keys[rng.IntN(rows)], opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != BenchColumns {
			b.Fatalf("get returned %d cells, want %d", len(got), BenchColumns)
		}
		cells += len(got)
	}
	b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), "cells/s")
}

func benchScan(b *testing.B, s store.Store, rows int) {
	ctx := b.Context()
	b.ReportAllocs()
	cells := 0
	for b.Loop() {
		it, err := s.Scan(ctx, BenchTable, store.ScanOptions{ReadOptions: store.ReadOptions{MaxVersions: 1}})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
		if n != rows*BenchColumns {
			b.Fatalf("scan returned %d cells, want %d", n, rows*BenchColumns)
		}
		cells += n
	}
	b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), "cells/s")
}
