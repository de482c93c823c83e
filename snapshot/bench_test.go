package snapshot

// Benchmarks, each beside its baseline in the same run (docs/benchmarks.md
// has the figures); the ratio is reported by the second sibling as x_baseline.
// Run them once, e.g.:
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./snapshot
//
// -snapbench.rows sets the table size of the run benchmarks (default 1M).

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/pebble"
)

var benchRows = flag.Int("snapbench.rows", 1_000_000, "rows of the run benchmarks")

// benchSchema is 10 mixed columns, like the 2M-row table of
// docs/benchmarks.md.
var benchSchema = Schema{
	Columns: []Column{
		{Name: "id", Kind: KindInt}, {Name: "name", Kind: KindString}, {Name: "email", Kind: KindString},
		{Name: "qty", Kind: KindInt}, {Name: "price", Kind: KindDecimal}, {Name: "score", Kind: KindFloat},
		{Name: "created", Kind: KindDateTime}, {Name: "day", Kind: KindDate}, {Name: "flag", Kind: KindInt},
		{Name: "note", Kind: KindString},
	},
	Key: []string{"id"},
}

// benchRow fills vals with row i of generation gen: a row whose
// i%100 == gen%100 differs from generation 0 (1% changed per generation).
func benchRow(vals []Value, buf []byte, i, gen int) ([]Value, []byte) {
	buf = buf[:0]
	text := func(f func([]byte) []byte) []byte {
		s := len(buf)
		buf = f(buf)
		return buf[s:len(buf):len(buf)]
	}
	changed := gen > 0 && i%100 == gen%100
	qty := int64(i % 1000)
	if changed {
		qty += int64(gen)
	}
	vals = append(vals[:0],
		Value{Kind: KindInt, Int: int64(i)},
		Value{Kind: KindString, Bytes: text(func(b []byte) []byte { return fmt.Appendf(b, "customer %d", i) })},
		Value{Kind: KindString, Bytes: text(func(b []byte) []byte { return fmt.Appendf(b, "c%d@example.com", i) })},
		Value{Kind: KindInt, Int: qty},
		Value{Kind: KindDecimal, Bytes: text(func(b []byte) []byte { return fmt.Appendf(b, "%d.%02d", i%10000, i%100) })},
		Value{Kind: KindFloat, Float: float64(i) / 7},
		Value{Kind: KindDateTime, Bytes: text(func(b []byte) []byte { return append(b, "2024-05-06 07:08:09"...) })},
		Value{Kind: KindDate, Bytes: text(func(b []byte) []byte { return append(b, "2024-05-06"...) })},
		Value{Kind: KindInt, Int: int64(i % 2)},
		Value{Kind: KindString, Bytes: text(func(b []byte) []byte { return append(b, "a short note of text"...) })},
	)
	return vals, buf
}

func openBenchStore(b *testing.B, dir string) *pebble.Store {
	st, err := pebble.Open(dir, pebble.Options{MemTableSize: 4 << 20})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// openBenchDB opens a DB on a new Pebble store in a temporary directory.
// The caller closes the store (the DB holds nothing else to release).
func openBenchDB(b *testing.B) (*pebble.Store, *DB) {
	st := openBenchStore(b, b.TempDir())
	db, err := Open(context.Background(), st, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return st, db
}

// benchRun writes generation gen of the table as one run; rows come in
// key order.
func benchRun(b *testing.B, db *DB, rows, gen int) VersionInfo {
	return benchRunOf(b, db, rows, func(vals []Value, buf []byte, i int) ([]Value, []byte) {
		return benchRow(vals, buf, i, gen)
	})
}

// benchRunOf writes one run of the rows that row makes for i = 0..rows-1,
// in that order.
func benchRunOf(b *testing.B, db *DB, rows int, row func(vals []Value, buf []byte, i int) ([]Value, []byte)) VersionInfo {
	ctx := context.Background()
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "bench"}, RunOptions{Schema: benchSchema})
	if err != nil {
		b.Fatal(err)
	}
	var vals []Value
	var buf []byte
	for i := 0; i < rows; i++ {
		vals, buf = row(vals, buf, i)
		if err := r.Put(ctx, vals); err != nil {
			b.Fatal(err)
		}
	}
	vi, err := r.Commit(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return vi
}

// rawPebbleWrite writes the same cells as the first run straight into
// Pebble: one key per cell (row key, column, timestamp), batches of 4096,
// no sync until the end.
func rawPebbleWrite(b *testing.B, pdb *cpebble.DB, rows int, gen int) int64 {
	var vals []Value
	var buf, key, val []byte
	batch := pdb.NewBatch()
	var bytes int64
	for i := 0; i < rows; i++ {
		vals, buf = benchRow(vals, buf, i, gen)
		rk, _ := appendKeyValue(nil, vals[0])
		for j, c := range benchSchema.Columns {
			key = append(append(append(key[:0], rk...), c.Name...), 0)
			key = binary.BigEndian.AppendUint64(key, ^uint64(gen+1))
			val = appendCellValue(val[:0], vals[j])
			bytes += int64(len(key) + len(val))
			if err := batch.Set(key, val, nil); err != nil {
				b.Fatal(err)
			}
		}
		if batch.Count() >= 4096 {
			if err := batch.Commit(cpebble.NoSync); err != nil {
				b.Fatal(err)
			}
			batch = pdb.NewBatch()
		}
	}
	if err := batch.Commit(cpebble.Sync); err != nil {
		b.Fatal(err)
	}
	return bytes
}

func openRawPebble(b *testing.B) *cpebble.DB {
	cache := cpebble.NewCache(pebble.DefaultCacheSize)
	defer cache.Unref()
	pdb, err := cpebble.Open(b.TempDir(), &cpebble.Options{Cache: cache, MemTableSize: pebble.DefaultMemTableSize, FormatMajorVersion: cpebble.FormatNewest})
	if err != nil {
		b.Fatal(err)
	}
	return pdb
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

var baselineNs = map[string]float64{}

func reportVsBaseline(b *testing.B, family string, ns float64, baseline bool) {
	if baseline {
		baselineNs[family] = ns
		return
	}
	if base, ok := baselineNs[family]; ok && base > 0 {
		b.ReportMetric(ns/base, "x_baseline")
	}
}

// BenchmarkFirstRun: the first run of rows x 10 columns into an empty
// dataset, against raw Pebble batch writes of the same cells.
func BenchmarkFirstRun(b *testing.B) {
	rows := *benchRows
	b.Run("writer=rawpebble", func(b *testing.B) {
		for b.Loop() {
			pdb := openRawPebble(b)
			start := time.Now()
			n := rawPebbleWrite(b, pdb, rows, 0)
			el := time.Since(start)
			b.ReportMetric(float64(rows*10)/el.Seconds(), "cells/s")
			b.ReportMetric(float64(n), "B_written")
			reportVsBaseline(b, "first", float64(el), true)
			pdb.Close()
		}
	})
	b.Run("writer=snapshot", func(b *testing.B) {
		for b.Loop() {
			st, db := openBenchDB(b)
			m0 := mallocs()
			start := time.Now()
			vi := benchRun(b, db, rows, 0)
			el := time.Since(start)
			b.ReportMetric(float64(mallocs()-m0)/float64(rows), "allocs/row")
			b.ReportMetric(float64(rows*10)/el.Seconds(), "cells/s")
			b.ReportMetric(float64(vi.Stats.BytesWritten), "B_written")
			reportVsBaseline(b, "first", float64(el), false)
			db.Close()
			st.Close()
		}
	})
}

// fullRewrite is the CDAP-style writer: every cell of every source row
// rewritten at the run's timestamp, no comparison (deletes would need a
// separate pass; the benchmark has none).
func fullRewrite(b *testing.B, st store.Store, rows, gen int, ts int64) int64 {
	ctx := context.Background()
	var vals []Value
	var buf, arena []byte
	batch := &store.Batch{Table: dataTable("full", 0)}
	var bytes int64
	for i := 0; i < rows; i++ {
		vals, buf = benchRow(vals, buf, i, gen)
		s := len(arena)
		arena, _ = appendKeyValue(arena, vals[0])
		rk := arena[s:len(arena):len(arena)]
		for j, c := range benchSchema.Columns {
			s := len(arena)
			arena = appendCellValue(arena, vals[j])
			v := arena[s:len(arena):len(arena)]
			batch.Put(rk, []byte(c.Name), ts, v)
			bytes += int64(len(rk) + len(c.Name) + len(v) + 8)
		}
		if batch.Len() >= 4096 {
			if err := st.Apply(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
			arena = arena[:0]
		}
	}
	if err := st.Apply(ctx, batch); err != nil {
		b.Fatal(err)
	}
	if err := st.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	return bytes
}

// BenchmarkSecondRun: a run where 1% of the rows changed, after a first
// run, against the full-rewrite writer on the same store backend.
func BenchmarkSecondRun(b *testing.B) {
	rows := *benchRows
	b.Run("writer=full", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			st := openBenchStore(b, b.TempDir())
			fullRewrite(b, st, rows, 0, 1)
			b.StartTimer()
			start := time.Now()
			n := fullRewrite(b, st, rows, 1, 2)
			el := time.Since(start)
			b.ReportMetric(el.Seconds(), "s_run")
			b.ReportMetric(float64(n), "B_written")
			reportVsBaseline(b, "second", float64(el), true)
			st.Close()
		}
	})
	b.Run("writer=delta", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			st, db := openBenchDB(b)
			benchRun(b, db, rows, 0)
			b.StartTimer()
			m0 := mallocs()
			start := time.Now()
			vi := benchRun(b, db, rows, 1)
			el := time.Since(start)
			if vi.Stats.Updated != int64(rows/100) {
				b.Fatalf("updated %d, want %d", vi.Stats.Updated, rows/100)
			}
			b.ReportMetric(float64(mallocs()-m0)/float64(rows), "allocs/row")
			b.ReportMetric(el.Seconds(), "s_run")
			b.ReportMetric(float64(vi.Stats.BytesWritten), "B_written")
			reportVsBaseline(b, "second", float64(el), false)
			db.Close()
			st.Close()
		}
	})
}

// BenchmarkGet: point gets at the current version of a 10k-row table whose
// rows have 1 or 100 versions of history (every run changes every row's
// qty). The baseline (reader=rawpebble-history) is raw Pebble holding the
// same history as a user of plain Pebble would: each version of a row the
// whole row packed in one value under row key, 00, ^version, compacted
// like snapstore's store, the newest read with one bounded iterator seek.
// reader=rawpebble (one packed value per row, in the memtable, no history)
// is the floor, printed for comparison only.
func BenchmarkGet(b *testing.B) {
	const rows = 10_000
	for _, history := range []int{1, 100} {
		b.Run("history="+strconv.Itoa(history)+"/reader=rawpebble-history", func(b *testing.B) {
			pdb := openRawPebble(b)
			defer pdb.Close()
			var vals []Value
			var buf, key, val []byte
			for g := range history {
				batch := pdb.NewBatch()
				for i := range rows {
					vals, buf = benchRow(vals, buf, i, 0)
					vals[3].Int = int64(g)
					key, _ = appendKeyValue(key[:0], vals[0])
					key = binary.BigEndian.AppendUint64(append(key, 0), ^uint64(g+1))
					val = val[:0]
					for _, v := range vals {
						val = appendCellValue(val, v)
					}
					batch.Set(key, val, nil)
				}
				if err := batch.Commit(cpebble.NoSync); err != nil {
					b.Fatal(err)
				}
			}
			if err := pdb.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff}, true); err != nil {
				b.Fatal(err)
			}
			it, err := pdb.NewIter(nil)
			if err != nil {
				b.Fatal(err)
			}
			defer it.Close()
			var lo, hi []byte
			get := func(i int) {
				lo, _ = appendKeyValue(lo[:0], Value{Kind: KindInt, Int: int64(i)})
				lo = append(lo, 0)
				hi = append(append(hi[:0], lo[:len(lo)-1]...), 1)
				it.SetBounds(lo, hi)
				if !it.First() || len(it.Value()) == 0 {
					b.Fatalf("row %d: %v", i, it.Error())
				}
			}
			for i := range rows { // the block cache warm, as for the reader
				get(i)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				get(rng.IntN(rows))
			}
			reportVsBaseline(b, "get"+strconv.Itoa(history), float64(time.Since(start))/float64(b.N), true)
		})
		b.Run("history="+strconv.Itoa(history)+"/reader=rawpebble", func(b *testing.B) {
			pdb := openRawPebble(b)
			defer pdb.Close()
			var vals []Value
			var buf, val []byte
			for i := 0; i < rows; i++ {
				vals, buf = benchRow(vals, buf, i, 0)
				rk, _ := appendKeyValue(nil, vals[0])
				val = val[:0]
				for _, v := range vals {
					val = appendCellValue(val, v)
				}
				pdb.Set(rk, val, cpebble.NoSync)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				rk, _ := appendKeyValue(nil, Value{Kind: KindInt, Int: int64(rng.IntN(rows))})
				v, closer, err := pdb.Get(rk)
				if err != nil || len(v) == 0 {
					b.Fatal(err)
				}
				closer.Close()
			}
			b.ReportMetric(float64(time.Since(start))/float64(b.N), "ns_floor")
		})
		b.Run("history="+strconv.Itoa(history)+"/reader=snapshot", func(b *testing.B) {
			dir := b.TempDir()
			st := openBenchStore(b, dir)
			db, err := Open(context.Background(), st, Options{})
			if err != nil {
				b.Fatal(err)
			}
			for g := 0; g < history; g++ {
				benchRunAllChanged(b, db, rows, g)
			}
			st, db = compactReopen(b, dir, st, db)
			defer st.Close()
			defer db.Close()
			r, err := db.Reader(context.Background(), "bench", At{})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			ctx := context.Background()
			key := []Value{{Kind: KindInt}}
			// Every row read once first: the gets measure the block
			// cache warm, as the baseline's memtable is.
			for i := range rows {
				key[0].Int = int64(i)
				if _, err := r.Get(ctx, key, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				key[0].Int = int64(rng.IntN(rows))
				if _, err := r.Get(ctx, key, nil); err != nil {
					b.Fatal(err)
				}
			}
			reportVsBaseline(b, "get"+strconv.Itoa(history), float64(time.Since(start))/float64(b.N), false)
		})
	}
}

// compactReopen compacts the store of dir and reopens it with db, so that reads
// measure the state background compactions reach rather than the burst of
// runs just written (Store.DB turns off the store's iterator reuse, hence
// the reopen).
func compactReopen(b *testing.B, dir string, st *pebble.Store, db *DB) (*pebble.Store, *DB) {
	if err := st.DB().Compact(context.Background(), []byte{0}, []byte{0xff, 0xff}, true); err != nil {
		b.Fatal(err)
	}
	db.Close()
	st.Close()
	st = openBenchStore(b, dir)
	db, err := Open(context.Background(), st, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return st, db
}

// benchRunAllChanged is a run where every row's qty is gen.
func benchRunAllChanged(b *testing.B, db *DB, rows, gen int) {
	benchRunOf(b, db, rows, func(vals []Value, buf []byte, i int) ([]Value, []byte) {
		vals, buf = benchRow(vals, buf, i, 0)
		vals[3].Int = int64(gen)
		return vals, buf
	})
}

// BenchmarkScan: a full ordered scan at the current version (rows/s),
// each row built (Row), against a raw Pebble iterator over one key per
// cell reading every value.
func BenchmarkScan(b *testing.B) {
	rows := min(*benchRows, 200_000)
	b.Run("reader=rawpebble", func(b *testing.B) {
		pdb := openRawPebble(b)
		defer pdb.Close()
		rawPebbleWrite(b, pdb, rows, 0)
		b.ResetTimer()
		start := time.Now()
		for b.Loop() {
			it, err := pdb.NewIter(nil)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for it.First(); it.Valid(); it.Next() {
				_ = it.Value()
				n++
			}
			it.Close()
			if n != rows*10 {
				b.Fatalf("%d cells", n)
			}
		}
		el := time.Since(start)
		b.ReportMetric(float64(rows*b.N)/el.Seconds(), "rows/s")
		reportVsBaseline(b, "scan", float64(el)/float64(b.N), true)
	})
	b.Run("reader=snapshot", func(b *testing.B) {
		st, db := openBenchDB(b)
		defer st.Close()
		defer db.Close()
		benchRun(b, db, rows, 0)
		r, err := db.Reader(context.Background(), "bench", At{})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		b.ResetTimer()
		start := time.Now()
		for b.Loop() {
			it, err := r.Scan(context.Background(), ScanOptions{})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for it.Next() {
				if len(it.Row().Values) != len(benchSchema.Columns) {
					b.Fatal("short row")
				}
				n++
			}
			if err := it.Close(); err != nil {
				b.Fatal(err)
			}
			if n != rows {
				b.Fatalf("%d rows", n)
			}
		}
		el := time.Since(start)
		b.ReportMetric(float64(rows*b.N)/el.Seconds(), "rows/s")
		reportVsBaseline(b, "scan", float64(el)/float64(b.N), false)
	})
}
