package snapshot

import (
	"context"
	"fmt"
	"time"
)

// DefaultRefreshInterval is the RefreshInterval of a read-only DB when
// Options leave it 0.
const DefaultRefreshInterval = time.Second

// Refresh makes a ReadOnly DB see what the writer process committed,
// aborted, rolled back, tagged, collected or dropped since Open or the
// last refresh (doc.go W2): it rereads every dataset's metadata and the
// txn sets. The metadata is read first, the txn sets second, and the new
// metadata is published last, so that no version becomes readable here
// before the invalid set that guards it. Readers already open keep their
// pinned version (txn.V4). On a writer DB it does nothing: its memory is
// the truth (W1).
func (db *DB) Refresh(ctx context.Context) error {
	if err := db.check(); err != nil {
		return err
	}
	if !db.opts.ReadOnly {
		return nil
	}
	db.refreshMu.Lock()
	defer db.refreshMu.Unlock()
	start := db.opts.now()
	fresh := map[string]*dataset{}
	if err := db.loadInto(ctx, fresh); err != nil {
		return fmt.Errorf("snapshot: refreshing: %w", err)
	}
	if err := db.txm.Refresh(ctx); err != nil {
		return fmt.Errorf("snapshot: refreshing: %w", err)
	}
	db.mu.Lock()
	for name, ds := range db.datasets {
		if fresh[name] == nil {
			// Dropped by the writer: open Readers get ErrDatasetNotFound,
			// as after a drop in this process.
			ds.mu.Lock()
			ds.dropped = true
			ds.mu.Unlock()
			delete(db.datasets, name)
		}
	}
	for name, f := range fresh {
		ds := db.datasets[name]
		if ds == nil {
			db.datasets[name] = f
			continue
		}
		// Keep the dataset and its open Readers; take the new view.
		ds.mu.Lock()
		ds.cfg, ds.current, ds.versions, ds.expired, ds.tags = f.cfg, f.current, f.versions, f.expired, f.tags
		ds.mu.Unlock()
	}
	db.mu.Unlock()
	db.refreshedAt.Store(start.UnixNano())
	return nil
}

// maybeRefresh refreshes a read-only DB whose view is older than
// RefreshInterval (W2).
func (db *DB) maybeRefresh(ctx context.Context) error {
	if !db.opts.ReadOnly || db.opts.RefreshInterval < 0 {
		return nil
	}
	if last := db.refreshedAt.Load(); last != 0 && db.opts.now().Sub(time.Unix(0, last)) < db.opts.RefreshInterval {
		return nil
	}
	return db.Refresh(ctx)
}
