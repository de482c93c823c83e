package partitionrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/snapstore/snapstore/store"
)

// flakyStore fails its next fail batch writes with store.ErrUnavailable,
// as HBase does while a region moves.
type flakyStore struct {
	store.Store
	fail atomic.Int64
}

func (f *flakyStore) Apply(ctx context.Context, b *store.Batch) error {
	if f.fail.Add(-1) >= 0 {
		return fmt.Errorf("%w: region moving (test)", store.ErrUnavailable)
	}
	return f.Store.Apply(ctx, b)
}

// ProcessLocal passes on the wrapped store's answer (store.ProcessLocal).
func (f *flakyStore) ProcessLocal() bool {
	pl, ok := f.Store.(store.ProcessLocal)
	return ok && pl.ProcessLocal()
}

// An owner whose store fails a few writes writes the partition again
// from its first batch after a backoff, and the run commits the rows;
// one whose store keeps failing gives up after StoreRetries attempts and
// the run fails naming the error, as store.ErrUnavailable; both counted.
func TestPartitionedRun_OwnerRetriesTransientStoreErrors(t *testing.T) {
	var flaky *flakyStore
	a, b := partitionNodesWith(t, time.Minute, func(st store.Store) store.Store {
		flaky = &flakyStore{Store: st}
		return flaky
	})
	flaky.fail.Store(-1 << 40)
	first, err := writeAll(t, beginSpread(t, a, "spread"), ledgerRows(2000, "first"))
	if err != nil {
		t.Fatal(err)
	}

	flaky.fail.Store(2)
	vi, err := writeAll(t, beginSpread(t, a, "spread"), ledgerRows(2000, "second"))
	if err != nil {
		t.Fatalf("a run whose owner's store failed twice: %v", err)
	}
	if vi.Version <= first.Version || vi.Stats.Rows != 2000 {
		t.Fatalf("the run after the store errors: %+v", vi)
	}
	if got := testutil.ToFloat64(b.runs.storeRetries.WithLabelValues("retried")); got != 2 {
		t.Errorf("retries counted on the owner: %v, want 2", got)
	}
	b.runs.mu.Lock()
	left := len(b.runs.retries)
	b.runs.mu.Unlock()
	if left != 0 {
		t.Errorf("%d streams' retry states outlive the run", left)
	}

	flaky.fail.Store(1 << 40)
	start := time.Now()
	_, err = writeAll(t, beginSpread(t, a, "spread"), ledgerRows(2000, "third"))
	if err == nil || !strings.Contains(err.Error(), "after 6 attempts") || !strings.Contains(err.Error(), "region moving") {
		t.Fatalf("a run whose owner's store keeps failing: %v", err)
	}
	// The run's record says store_unavailable (adapters' run codes), as
	// when the coordinator's own writes fail, not a bare error.
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a run whose owner's store keeps failing is not store.ErrUnavailable: %v", err)
	}
	t.Logf("the run failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if got := testutil.ToFloat64(b.runs.storeRetries.WithLabelValues("gave_up")); got < 1 {
		t.Errorf("give-ups counted on the owner: %v", got)
	}
	flaky.fail.Store(-1 << 40)
	if d, err := a.db.Dataset(context.Background(), "spread"); err != nil || d.Current != vi.Version {
		t.Fatalf("after the failed run: %+v %v, want version %d", d, err, vi.Version)
	}
}

// An owner drops a stream it heard nothing of for the owner wait on a
// timer, with no batch arriving to trigger it, and counts it.
func TestPartitionedRun_SilentStreamDroppedByTimer(t *testing.T) {
	a, b := partitionNodes(t, 300*time.Millisecond)
	w := beginSpread(t, a, "spread")
	ctx := context.Background()
	for _, r := range ledgerRows(2000, "first") {
		if err := w.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	streams := func() int {
		b.runs.mu.Lock()
		defer b.runs.mu.Unlock()
		return len(b.runs.streams)
	}
	deadline := time.Now().Add(10 * time.Second)
	for streams() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the owner never opened a stream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	deadline = time.Now().Add(10 * time.Second)
	for streams() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d silent streams still held", streams())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := testutil.ToFloat64(b.runs.streamsDropped); got < 1 {
		t.Errorf("dropped streams counted: %v", got)
	}
	if err := w.Abort(ctx, "test over"); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("abort: %v", err)
	}
}
