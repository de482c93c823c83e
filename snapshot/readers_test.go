package snapshot

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestReadsDuringRun checks D8 and D2: readers run while a run writes,
// and see only the pinned version; GC keeps what an open Reader needs.
func TestReadsDuringRun(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{batchSize: 16})
	var rows [][]Value
	for i := 0; i < 500; i++ {
		rows = append(rows, []Value{iv(int64(i)), sv("v1")})
	}
	v1 := runRows(t, db, rows)
	r1, err := db.Reader(ctx, "t", At{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := db.BeginRun(ctx, DatasetConfig{Name: "t", Retention: Retention{TTL: time.Nanosecond}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				got := scanJSON(t, r1)
				if len(got) != 500 || got[0] != `{"id":0,"name":"v1"}` {
					errc <- errors.New("reader saw something else than version 1")
					return
				}
			}
		}()
	}
	for i := 0; i < 500; i += 3 { // a third of the rows, changed
		if err := run.Put(ctx, []Value{iv(int64(i)), sv("v2")}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if _, err := run.Commit(ctx); !errors.Is(err, ErrGuardRefused) {
		t.Fatalf("shrink by two thirds: %v", err)
	}
	run, _ = db.BeginRun(ctx, DatasetConfig{Name: "t", Retention: Retention{TTL: time.Nanosecond}, Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
	for i := 0; i < 500; i += 3 {
		run.Put(ctx, []Value{iv(int64(i)), sv("v2")})
	}
	v2, err := run.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Version 1 expires, but r1 pins it: GC must leave its cells.
	rep, err := db.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.VersionsExpired) != 1 || rep.VersionsExpired[0] != v1.Version {
		t.Fatalf("expired %v", rep.VersionsExpired)
	}
	if got := scanJSON(t, r1); len(got) != 500 || got[499] != `{"id":499,"name":"v1"}` {
		t.Fatalf("pinned reader lost version 1 to GC: %d rows", len(got))
	}
	if _, err := db.Reader(ctx, "t", At{Version: v1.Version}); !errors.Is(err, ErrVersionNotKept) {
		t.Fatalf("new reader at expired version: %v", err)
	}
	r1.Close()
	rep, err = db.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.CellsDeleted == 0 {
		t.Fatal("nothing collected once the reader closed")
	}
	r2, _ := db.Reader(ctx, "t", At{})
	defer r2.Close()
	if got := scanJSON(t, r2); len(got) != 167 || r2.Version().Version != v2.Version {
		t.Fatalf("current after GC: %d rows", len(got))
	}
}
