package pebble

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	cpebble "github.com/cockroachdb/pebble/v2"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/storetest"
)

func openBench(b *testing.B) *Store {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkStore runs the shared store benchmarks on Pebble with default
// Options.
func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, func(b *testing.B) store.Store { return openBench(b) })
}

// BenchmarkRawPebble is the baseline of BenchmarkStore, with the same
// sub-benchmark names: the same cells written with plain Pebble batch Sets
// (key row 00 column 00 ^ts, no escaping, no kind byte), read back with
// point Gets of the exact newest keys and a plain iterator. The ratio of the
// two is the cost of the store's encoding and filtering.
func BenchmarkRawPebble(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("write/batch=%d", n), func(b *testing.B) { rawWrite(b, n) })
	}
	for _, tc := range []struct{ rows, versions int }{{1000, 1}, {100, 100}} {
		name := fmt.Sprintf("get/rows=%d/versions=%d", tc.rows, tc.versions)
		b.Run(name, func(b *testing.B) { rawGet(b, tc.rows, tc.versions, int64(tc.versions)) })
		if tc.versions > 1 {
			b.Run(name+"/at=middle", func(b *testing.B) { rawGet(b, tc.rows, tc.versions, int64(tc.versions/2)) })
		}
	}
	for _, tc := range []struct{ rows, versions int }{{1000, 1}, {1000, 10}} {
		b.Run(fmt.Sprintf("scan/rows=%d/versions=%d", tc.rows, tc.versions), func(b *testing.B) { rawScan(b, tc.rows, tc.versions) })
	}
}

func rawKey(dst, row, col []byte, ts int64) []byte {
	dst = append(dst, row...)
	dst = append(dst, 0)
	dst = append(dst, col...)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint64(dst, ^uint64(ts))
}

func rawOpen(b *testing.B) *cpebble.DB {
	s := openBench(b)
	b.Cleanup(func() { s.Close() })
	return s.DB()
}

func rawLoad(b *testing.B, db *cpebble.DB, rows, versions int) {
	cols := make([][]byte, storetest.BenchColumns)
	for j := range cols {
		cols[j] = storetest.BenchColumn(j)
	}
	batch := db.NewBatch()
	var key, row, val []byte
	for ts := int64(1); ts <= int64(versions); ts++ {
		for i := range rows {
			row = storetest.BenchRow(row[:0], i)
			for j, c := range cols {
				key = rawKey(key[:0], row, c, ts)
				val = storetest.BenchValue(val[:0], i, j, ts)
				batch.Set(key, val, nil)
			}
			if batch.Count() >= 1000 {
				if err := batch.Commit(cpebble.NoSync); err != nil {
					b.Fatal(err)
				}
				batch.Close()
				batch = db.NewBatch()
			}
		}
	}
	if err := batch.Commit(cpebble.Sync); err != nil {
		b.Fatal(err)
	}
	batch.Close()
}

func rawWrite(b *testing.B, n int) {
	db := rawOpen(b)
	cols := make([][]byte, storetest.BenchColumns)
	for j := range cols {
		cols[j] = storetest.BenchColumn(j)
	}
	vals := make([][]byte, n)
	for k := range vals {
		vals[k] = storetest.BenchValue(nil, k/storetest.BenchColumns, k%storetest.BenchColumns, 1)
	}
	var key, row []byte
	b.ReportAllocs()
	cells, next := 0, 0
	for b.Loop() {
		batch := db.NewBatch()
		for k := range n {
			if k%storetest.BenchColumns == 0 {
				row = storetest.BenchRow(row[:0], next)
				next++
			}
			key = rawKey(key[:0], row, cols[k%storetest.BenchColumns], 1)
			batch.Set(key, vals[k], nil)
		}
		if err := batch.Commit(cpebble.NoSync); err != nil {
			b.Fatal(err)
		}
		batch.Close()
		cells += n
	}
	b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), "cells/s")
}

func rawGet(b *testing.B, rows, versions int, at int64) {
	db := rawOpen(b)
	rawLoad(b, db, rows, versions)
	cols := make([][]byte, storetest.BenchColumns)
	for j := range cols {
		cols[j] = storetest.BenchColumn(j)
	}
	keys := make([][]byte, rows)
	for i := range keys {
		keys[i] = storetest.BenchRow(nil, i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var key []byte
	b.ReportAllocs()
	cells := 0
	for b.Loop() {
		row := keys[rng.IntN(rows)]
		for _, c := range cols {
			key = rawKey(key[:0], row, c, at)
			v, closer, err := db.Get(key)
			if err != nil {
				b.Fatal(err)
			}
			if len(v) != storetest.BenchValueLen {
				b.Fatalf("value of %d bytes", len(v))
			}
			closer.Close()
			cells++
		}
	}
	b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), "cells/s")
}

func rawScan(b *testing.B, rows, versions int) {
	db := rawOpen(b)
	rawLoad(b, db, rows, versions)
	b.ReportAllocs()
	cells := 0
	var last []byte
	for b.Loop() {
		it, err := db.NewIter(&cpebble.IterOptions{LowerBound: []byte("row"), UpperBound: []byte("rox")})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for valid := it.First(); valid; valid = it.Next() {
			k := it.Key()
			col := k[:len(k)-8]
			if bytes.Equal(col, last) {
				continue // an older version of the same column
			}
			last = append(last[:0], col...)
			if _, err := it.ValueAndErr(); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
		if n != rows*storetest.BenchColumns {
			b.Fatalf("scan returned %d cells, want %d", n, rows*storetest.BenchColumns)
		}
		last = last[:0]
		cells += n
	}
	b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), "cells/s")
}
