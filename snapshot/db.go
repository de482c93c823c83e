package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// DB is the set of SNAPSHOT datasets kept in one store. Safe for concurrent
// use. Open makes one; Close ends it.
type DB struct {
	st      store.Store
	txm     *txn.Manager
	meta    string
	logger  *slog.Logger
	opts    Options
	metrics *metrics
	closed  atomic.Bool

	openReaders atomic.Int64

	// Sharing the store with other processes (lease.go, refresh.go).
	// owner names this DB in the writer lease; leaseUntil is the lease's
	// expiry (Unix ns) as last renewed; leaseLost is set for good when
	// another owner took it; stopc and donec stop and await the renewal
	// loop. refreshMu serialises refreshes, and refreshedAt is the start
	// (Unix ns) of the last one.
	owner       string
	leaseUntil  atomic.Int64
	leaseLost   atomic.Bool
	stopc       chan struct{}
	donec       chan struct{}
	refreshMu   sync.Mutex
	refreshedAt atomic.Int64

	// mu guards datasets (the map, not the datasets).
	mu       sync.Mutex
	datasets map[string]*dataset
}

// Close closes the DB (not the store): runs still open are aborted, the
// metrics unregistered, and the writer lease, if held, released. Readers
// still open get ErrClosed. A second Close does nothing.
func (db *DB) Close() error {
	if db == nil || db.closed.Swap(true) {
		return nil
	}
	db.mu.Lock()
	var runs []*Run
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
	db.metrics.unregister()
	db.txm.Close()
	if err := db.releaseLease(); err != nil {
		errs = append(errs, fmt.Errorf("releasing the writer lease: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("snapshot: closing: %w", err)
	}
	return nil
}

// check returns ErrClosed once Close began.
func (db *DB) check() error {
	if db == nil || db.closed.Load() {
		return ErrClosed
	}
	return nil
}

// lookup returns the dataset or ErrDatasetNotFound. Every entry point
// that names a dataset finds it here, so that on a read-only DB each of
// them first refreshes a view older than RefreshInterval (W2); on a writer
// DB maybeRefresh does nothing.
func (db *DB) lookup(ctx context.Context, name string) (*dataset, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	if err := db.maybeRefresh(ctx); err != nil {
		return nil, err
	}
	db.mu.Lock()
	ds := db.datasets[name]
	db.mu.Unlock()
	if ds == nil {
		return nil, fmt.Errorf("%w: %q", ErrDatasetNotFound, name)
	}
	return ds, nil
}

// lookupWritable returns the dataset a write names: first whether this
// DB may write at all (writable: ErrReadOnly, ErrWriterLeaseLost), then
// lookup's answer.
func (db *DB) lookupWritable(ctx context.Context, name string) (*dataset, error) {
	if err := db.writable(); err != nil {
		return nil, err
	}
	return db.lookup(ctx, name)
}

// acquireWritable is lookupWritable that also takes the dataset's writer
// slot for op (D8, ErrRunInProgress); the caller releases it.
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
