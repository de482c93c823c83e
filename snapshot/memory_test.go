package snapshot

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestRunMemoryBounded checks D5's bound: a run's Go heap does not grow
// with the table, whether the source comes sorted (phase A) or shuffled
// (phase B, scratch table). It compares the live heap after a quarter of
// the rows with the live heap at the end of the Puts of a second run.
func TestRunMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 4 runs of 30k to 60k rows")
	}
	for _, order := range []string{"sorted", "shuffled"} {
		rows := 60_000
		if order == "shuffled" {
			rows = 30_000 // point Gets: slower
		}
		t.Run(order, func(t *testing.T) {
			ctx := context.Background()
			db := openTestDB(t, newTestStore(t), Options{})
			keys := make([]int64, rows)
			for i := range keys {
				keys[i] = int64(i)
			}
			var growth [2]int64
			for gen := 0; gen < 2; gen++ {
				if order == "shuffled" {
					rng := rand.New(rand.NewPCG(uint64(gen), 1))
					rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
				}
				run, err := db.BeginRun(ctx, DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: benchSchema})
				if err != nil {
					t.Fatal(err)
				}
				var vals []Value
				var buf []byte
				var at int64
				for i, k := range keys {
					if i == rows/4 {
						at = liveHeap()
					}
					vals, buf = benchRow(vals, buf, int(k), gen)
					if err := run.Put(ctx, vals); err != nil {
						t.Fatal(err)
					}
				}
				growth[gen] = liveHeap() - at
				if _, err := run.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("live heap growth over 3/4 of the rows: first run %d KiB, second run %d KiB", growth[0]>>10, growth[1]>>10)
			// Keys kept in a Go map or slice would add 20 to 60 bytes per
			// row; batches and buffers are bounded by batchSize. The first
			// run's measure is noisier (Pebble flushing its memtables
			// allocates on the Go heap), hence its looser bound.
			for gen, g := range growth {
				if limit := int64(1<<20) << (1 - gen); g > limit {
					t.Errorf("run %d: live heap grew by %d KiB over %d rows", gen+1, g>>10, rows*3/4)
				}
			}
		})
	}
}

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
