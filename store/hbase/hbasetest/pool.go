package hbasetest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/store/hbase"
)

// The pool creates test tables ahead of the tests that Take them and drops
// them behind, off the tests' path: on the test HBase creating a table
// takes about 0.6 s and dropping one 0.4 s, nearly all of it a wait on the
// master's procedures, and a suite of a hundred short tests would
// otherwise spend half its time there. A package that calls Take calls
// Finish from its TestMain once m.Run returns.

// poolAhead is how many created tables wait for a test.
const poolAhead = 2

type pooled struct {
	opts hbase.Options
	err  error // creating the table failed
}

var pool struct {
	once  sync.Once
	ready chan pooled
	stop  chan struct{}
	wg    sync.WaitGroup // the creator and the drops under way

	mu       sync.Mutex
	dropErrs []error
}

// Take returns the options of a fresh, empty test table (those of Options),
// created ahead by the pool, and drops the table in the background once t
// and its cleanups are done. It skips t when there is no test HBase.
func Take(t testing.TB) hbase.Options {
	t.Helper()
	addr := testenv.HBaseThrift(t)
	pool.once.Do(func() {
		pool.ready = make(chan pooled, poolAhead)
		pool.stop = make(chan struct{})
		pool.wg.Add(1)
		go create(addr)
	})
	var p pooled
	select {
	case p = <-pool.ready:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no test table created on the HBase at %s in 2 minutes", addr)
	}
	if p.err != nil {
		t.Fatalf("creating a test table on the HBase at %s: %v", addr, p.err)
	}
	t.Cleanup(func() { dropLater(p.opts) })
	return p.opts
}

// create makes tables until Finish, poolAhead of them waiting at most.
func create(addr string) {
	defer pool.wg.Done()
	for {
		opts := options(addr)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		s, err := hbase.Open(ctx, opts)
		cancel()
		if err == nil {
			err = s.Close()
		}
		select {
		case pool.ready <- pooled{opts: opts, err: err}:
		case <-pool.stop:
			if err == nil {
				dropLater(opts)
			}
			return
		}
		if err != nil {
			// Wait before trying again; the test that took the error
			// failed with it.
			select {
			case <-time.After(time.Second):
			case <-pool.stop:
				return
			}
		}
	}
}

// dropLater drops the table of opts in the background; Finish waits for it.
func dropLater(opts hbase.Options) {
	pool.wg.Add(1)
	go func() {
		defer pool.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := hbase.DropTable(ctx, opts); err != nil {
			pool.mu.Lock()
			pool.dropErrs = append(pool.dropErrs, fmt.Errorf("dropping test table %s:%s: %w", opts.Namespace, opts.Table, err))
			pool.mu.Unlock()
		}
	}()
}

// Finish stops the pool, drops the tables no test took and waits for every
// drop, printing those that failed. A TestMain calls it after m.Run (and
// before a goroutine leak check); without a Take before it, it does
// nothing.
func Finish() {
	pool.once.Do(func() {}) // after this, Take makes no pool
	if pool.stop != nil {
		close(pool.stop)
		pool.wg.Wait() // the creator left; what it made is in ready
		for len(pool.ready) > 0 {
			if p := <-pool.ready; p.err == nil {
				dropLater(p.opts)
			}
		}
	}
	pool.wg.Wait()
	for _, err := range pool.dropErrs {
		fmt.Fprintln(os.Stderr, "hbasetest:", err)
	}
}
