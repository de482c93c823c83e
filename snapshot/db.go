package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snapstore/snapstore/records"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// DB is the set of SNAPSHOT datasets kept in one store. Safe for concurrent
// use. Open makes one; Close ends it.
type DB struct {
	st      store.Store
	ids     *txn.IDs
	meta    string
	rec     *records.Store // the records of meta
	logger  *slog.Logger
	opts    Options
	metrics *metrics
	closed  atomic.Bool

	openReaders atomic.Int64
	pins        pinSet // the pins of open Readers in the store (pins.go)

	// owner names this DB in writer slots (slot.go); processLocal says no
	// other process can open the store (store.ProcessLocal); grace is the
	// time before an invalid transaction may be pruned (G6).
	owner        string
	processLocal bool
	grace        time.Duration
	writes       atomic.Int64 // writes of rows made, naming each (rowState.Write)
	// stopc and donec stop and await the keeper (slot.go). refreshMu
	// serialises refreshes, and refreshedAt is the start (Unix ns) of the
	// last one.
	stopc       chan struct{}
	donec       chan struct{}
	refreshMu   sync.Mutex
	refreshedAt atomic.Int64

	// mu guards datasets (the map, not the datasets).
	mu       sync.Mutex
	datasets map[string]*dataset
}

// Close closes the DB (not the store): runs still open are aborted, the
// keeper stopped, the unused transaction ids given back (txn.I1), the
// metrics unregistered. Readers still open get ErrClosed. A second Close
// does nothing.
func (db *DB) Close() error {
	if db == nil || db.closed.Swap(true) {
		return nil
	}
	db.mu.Lock()
	var runs []interface {
		Abort(ctx context.Context, reason string) error
	}
	for _, ds := range db.datasets {
		ds.mu.Lock()
		if ds.run != nil {
			runs = append(runs, ds.run)
		}
		ds.mu.Unlock()
	}
	db.mu.Unlock()
	var errs []error
	for _, r := range runs {
		if err := r.Abort(context.Background(), "database closed"); err != nil {
			errs = append(errs, err)
		}
	}
	db.stopKeeper()
	db.endPins()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.ids.Close(ctx); err != nil {
		db.logger.Warn("giving back transaction ids", "err", err)
	}
	db.metrics.unregister()
	db.unregisterLocal()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("snapshot: closing: %w", err)
	}
	return nil
}

// hook calls Options.hook, the crash test's kill point.
func (db *DB) hook(point string, n int64) {
	if h := db.opts.hook; h != nil {
		h(point, n)
	}
}

// allDatasets returns the datasets this DB knows, for a pass over them
// that takes no DB lock while it works.
func (db *DB) allDatasets() []*dataset {
	db.mu.Lock()
	defer db.mu.Unlock()
	all := make([]*dataset, 0, len(db.datasets))
	for _, ds := range db.datasets {
		all = append(all, ds)
	}
	return all
}

// check returns ErrClosed once Close began.
func (db *DB) check() error {
	if db == nil || db.closed.Load() {
		return ErrClosed
	}
	return nil
}

// lookupWritable returns the dataset a write names: first whether this
// DB may write at all (ErrReadOnly), then lookup's answer.
func (db *DB) lookupWritable(ctx context.Context, name string) (*dataset, error) {
	if err := db.writable(); err != nil {
		return nil, err
	}
	return db.lookup(ctx, name)
}

// acquireWritable is lookupWritable that also takes the dataset for op in
// this DB (D8, ErrRunInProgress); the caller releases it. The writer slot
// in the row is taken by op's first write.
func (db *DB) acquireWritable(ctx context.Context, name, op string) (*dataset, error) {
	ds, err := db.lookupWritable(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := ds.acquire(op); err != nil {
		return nil, err
	}
	return ds, nil
}
