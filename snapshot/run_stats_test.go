package snapshot

import (
	"context"
	"sync"
	"testing"
)

// TestStatsLive checks that Stats may be read from another goroutine
// while Put runs (run with -race), and is exact once the run ended.
func TestStatsLive(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	run, err := db.BeginRun(ctx, DatasetConfig{Name: "t"}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var last int64
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := run.Stats().Rows; n < last {
				t.Error("live rows went down")
			} else {
				last = n
			}
		}
	}()
	for i := 0; i < 5000; i++ {
		if err := run.Put(ctx, []Value{iv(int64(i)), sv("x")}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	vi, err := run.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Stats(); got != vi.Stats || got.Rows != 5000 {
		t.Fatalf("final stats %+v, commit said %+v", got, vi.Stats)
	}
}
