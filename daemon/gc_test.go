package daemon

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// countingCollector counts the calls of the periodic GC.
type countingCollector struct{ collects, trims int }

func (c *countingCollector) CollectGarbage(context.Context) ([]snapshot.GCReport, error) {
	c.collects++
	return nil, nil
}

func (c *countingCollector) TrimAudit(context.Context) { c.trims++ }

// TestRunGC_Ticks runs the loops in a synctest bubble (fake time): one
// collection per interval, the audit retention at once and hourly, none
// after cancel, and runGC returns only once both loops have.
func TestRunGC_Ticks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &countingCollector{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			runGC(ctx, c, false, 30*time.Minute, slog.New(slog.DiscardHandler))
		}()
		time.Sleep(3*time.Hour + time.Minute)
		synctest.Wait()
		cancel()
		<-done
		if c.collects != 6 || c.trims != 4 {
			t.Fatalf("in 3h with a 30m interval: %d collections, %d trims; want 6, 4", c.collects, c.trims)
		}
	})
}

// TestRunGC_ZeroIntervalTrimsOnly: gc_interval 0 collects nothing, while
// the audit trail's retention still applies.
func TestRunGC_ZeroIntervalTrimsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &countingCollector{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); runGC(ctx, c, false, 0, slog.New(slog.DiscardHandler)) }()
		time.Sleep(2*time.Hour + time.Minute)
		synctest.Wait()
		cancel()
		<-done
		if c.collects != 0 || c.trims != 3 {
			t.Fatalf("in 2h with no interval: %d collections, %d trims; want 0, 3", c.collects, c.trims)
		}
	})
}

// A read-only process (a reader of a store another process writes) runs no
// periodic GC: runGC returns at once, having called nothing.
func TestRunGC_ReadOnlyCollectsNothing(t *testing.T) {
	c := &countingCollector{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runGC(context.Background(), c, true, time.Millisecond, slog.New(slog.DiscardHandler)) // never cancelled
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("runGC of a read-only process kept running")
	}
	if c.collects != 0 || c.trims != 0 {
		t.Fatalf("a read-only process: %d collections, %d trims", c.collects, c.trims)
	}
}
