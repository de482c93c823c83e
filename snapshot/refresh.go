package snapshot

import (
	"context"
	"fmt"
	"time"
)

// DefaultRefreshInterval is the RefreshInterval of a DB whose store other
// processes may write, when Options leave it 0.
const DefaultRefreshInterval = time.Second

// Refresh makes the DB see what other processes committed, aborted,
// rolled back, tagged, collected or dropped since Open or the last
// refresh (doc.go W2): it rereads every dataset's row, one consistent view
// of each dataset, and the version rows it lists that this DB has not
// read. A state older than the one this DB holds (which it wrote itself)
// is ignored. Readers already open keep their pinned version (txn.V4).
func (db *DB) Refresh(ctx context.Context) error {
	if err := db.check(); err != nil {
		return err
	}
	db.refreshMu.Lock()
	defer db.refreshMu.Unlock()
	start := db.opts.now()
	db.mu.Lock()
	all := make(map[string]*dataset, len(db.datasets))
	for name, ds := range db.datasets {
		all[name] = ds
	}
	db.mu.Unlock()
	seen, err := db.loadInto(ctx, all)
	if err != nil {
		return fmt.Errorf("snapshot: refreshing: %w", err)
	}
	db.mu.Lock()
	for name, ds := range all {
		if seen[name] {
			if db.datasets[name] == nil {
				db.datasets[name] = ds
			}
			continue
		}
		ds.mu.Lock()
		gone := ds.persisted && ds.writer == ""
		if gone {
			// Dropped by another process: open Readers get
			// ErrDatasetNotFound, as after a drop in this process.
			ds.dropped = true
		}
		ds.mu.Unlock()
		if gone && db.datasets[name] == ds {
			delete(db.datasets, name)
		}
	}
	db.mu.Unlock()
	db.refreshedAt.Store(start.UnixNano())
	return nil
}

// maybeRefresh refreshes a view older than RefreshInterval (W2).
func (db *DB) maybeRefresh(ctx context.Context) error {
	if db.opts.RefreshInterval <= 0 {
		return nil
	}
	if last := db.refreshedAt.Load(); last != 0 && db.opts.now().Sub(time.Unix(0, last)) < db.opts.RefreshInterval {
		return nil
	}
	return db.Refresh(ctx)
}
