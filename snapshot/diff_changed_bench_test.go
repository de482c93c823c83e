package snapshot

import (
	"context"
	"testing"
	"time"
)

// BenchmarkDiff: the diff of a version that changed 1% of the rows
// against the version before, every change built (what a copy of the
// dataset pulls), through the time-bound path against the full walk of
// every row, for rows changed at random (every hundredth) and in four key
// ranges. The store is as the runs left it, no compaction forced: the
// first run loaded into the bottom level, the churn run's cells flushed
// above it. cells/op counts the store cells read.
func BenchmarkDiff(b *testing.B) {
	rows := *benchRows
	for _, churn := range []struct {
		name string
		row  func(vals []Value, buf []byte, i int) ([]Value, []byte)
	}{
		{"random", func(vals []Value, buf []byte, i int) ([]Value, []byte) { return benchRow(vals, buf, i, 1) }},
		{"ranges", func(vals []Value, buf []byte, i int) ([]Value, []byte) {
			vals, buf = benchRow(vals, buf, i, 0)
			span := max(rows/400, 1)
			for k := range 4 {
				if lo := k*(rows/4) + rows/8; i >= lo && i < lo+span {
					vals[3].Int++
				}
			}
			return vals, buf
		}},
	} {
		b.Run("churn="+churn.name, func(b *testing.B) {
			st, db := openBenchDB(b)
			defer st.Close()
			v1 := benchRun(b, db, rows, 0).Version
			vi := benchRunOf(b, db, rows, churn.row)
			v2 := vi.Version
			want := vi.Stats.Updated + vi.Stats.Inserted + vi.Stats.Deleted
			db.Close()
			cs := &countingStore{Store: st}
			db, err := Open(context.Background(), cs, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			for _, walk := range []string{"full", "timebound"} {
				b.Run("walk="+walk, func(b *testing.B) {
					cs.cells.Store(0)
					start := time.Now()
					for b.Loop() {
						d, err := db.newDiff(context.Background(), "bench", "", false, v1, v2, false)
						if err != nil {
							b.Fatal(err)
						}
						if walk == "full" && d.cand != nil {
							d.cand.close()
							d.cand = nil
						} else if walk == "timebound" && d.cand == nil {
							b.Fatal("the diff cannot use the time-bound path")
						}
						var n int64
						for d.Next() {
							if d.Change().After == nil {
								b.Fatal("a change without its row")
							}
							n++
						}
						if err := d.Close(); err != nil {
							b.Fatal(err)
						}
						if n != want {
							b.Fatalf("%d changes, the run wrote %d", n, want)
						}
					}
					el := time.Since(start)
					b.ReportMetric(float64(cs.cells.Load())/float64(b.N), "cells/op")
					reportVsBaseline(b, "diff-"+churn.name, float64(el)/float64(b.N), walk == "full")
				})
			}
		})
	}
}
