package snapshot

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestRunMemoryBounded checks D5's bound: a run's Go heap does not grow
// with the table, whether the source comes sorted (phase A) or shuffled
// (phase B, scratch table). It compares the live heap around a quarter of
// the rows with the live heap near the end of the Puts, each the least of
// several samples: what a run holds in flight (the batches queued for its
// writer) comes and goes, what it keeps per row only grows.
func TestRunMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 4 runs of 30k to 60k rows")
	}
	if raceEnabled {
		t.Skip("the race detector changes the live heap this test measures")
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
				early, late := int64(math.MaxInt64), int64(math.MaxInt64)
				const samples, spacing = 5, 500
				for i, k := range keys {
					switch {
					case i >= rows/4 && i < rows/4+samples*spacing && (i-rows/4)%spacing == 0:
						early = min(early, liveHeap())
					case i >= rows-samples*spacing && (rows-i)%spacing == 0:
						late = min(late, liveHeap())
					}
					vals, buf = benchRow(vals, buf, int(k), gen)
					if err := run.Put(ctx, vals); err != nil {
						t.Fatal(err)
					}
				}
				growth[gen] = min(late, liveHeap()) - early
				if _, err := run.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("live heap growth over 3/4 of the rows: first run %d KiB, second run %d KiB", growth[0]>>10, growth[1]>>10)
			// Keys kept in a Go map or slice would add 20 to 60 bytes per
			// row, 450 KiB or more over these rows; batches and buffers
			// are bounded by batchSize. The first run's measure is noisier
			// (Pebble flushing its memtables allocates on the Go heap),
			// hence its looser bound.
			for gen, g := range growth {
				if limit := int64(400<<10) << (1 - gen); g > limit {
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

// TestWideRows writes rows wider than a run's batch (batchBytes), which
// the run hands to its writer alone and without copying them (the batch
// takes the packed row, Run.writeVersion), beside narrow ones; then a
// schema whose column order is not the dictionary's, whose full versions
// are packed cell by cell. Every version reads back what was put.
func TestWideRows(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	wide := func(c byte) string { return strings.Repeat(string(c), batchBytes+1<<20) }
	commit := func(schema Schema, rows [][]Value) VersionInfo {
		t.Helper()
		return singleRunWith(t, db, "t", 1, RunOptions{Schema: schema}, rows)
	}
	check := func(v int64, want map[int64]string) {
		t.Helper()
		r, err := db.Reader(ctx, "t", At{Version: v})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for id, name := range want {
			row, err := r.Get(ctx, []Value{iv(id)}, nil)
			if err != nil {
				t.Fatalf("version %d row %d: %v", v, id, err)
			}
			got := string(row.Values[slices.Index(row.Columns, "name")].Bytes)
			if got != name {
				t.Errorf("version %d row %d: %d bytes %.8q, want %d bytes %.8q", v, id, len(got), got, len(name), name)
			}
		}
	}
	want1 := map[int64]string{1: "one", 2: wide('a'), 3: wide('b'), 4: "four"}
	v1 := commit(testSchema, [][]Value{{iv(1), sv(want1[1])}, {iv(2), sv(want1[2])}, {iv(3), sv(want1[3])}, {iv(4), sv(want1[4])}})
	want2 := map[int64]string{1: "one", 2: wide('c'), 3: wide('b'), 4: "FOUR", 5: wide('d')}
	v2 := commit(testSchema, [][]Value{{iv(1), sv(want2[1])}, {iv(2), sv(want2[2])}, {iv(3), sv(want2[3])}, {iv(4), sv(want2[4])}, {iv(5), sv(want2[5])}})
	if s := v2.Stats; s.Inserted != 1 || s.Updated != 2 || s.Unchanged != 2 {
		t.Errorf("run 2 stats %+v, want 1 inserted, 2 updated, 2 unchanged", s)
	}
	reordered := Schema{Columns: []Column{testSchema.Columns[1], testSchema.Columns[0]}, Key: testSchema.Key}
	want3 := map[int64]string{1: wide('e'), 2: wide('c'), 6: wide('f'), 7: "seven"}
	v3 := commit(reordered, [][]Value{{sv(want3[1]), iv(1)}, {sv(want3[2]), iv(2)}, {sv(want3[6]), iv(6)}, {sv(want3[7]), iv(7)}})
	check(v1.Version, want1)
	check(v2.Version, want2)
	check(v3.Version, want3)
}
