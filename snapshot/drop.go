package snapshot

import (
	"context"
	"fmt"
)

// DropDataset deletes a dataset, all its versions and cells (D10). Its
// first write of the row records the drop durably (taking the writer
// slot), so that from then on the dataset is gone for every reader and
// writer, in this process and others, and a process that dies in the
// middle leaves a drop that the next writer, or a restart, finishes.
// Then the cells, the scratch and version rows are deleted, and last the
// row. Readers still open get ErrDatasetNotFound. Errors:
// ErrRunInProgress while a run, GC or rollback holds the dataset;
// ErrDatasetNotFound. Dropping a dataset whose drop was left unfinished
// finishes it.
func (db *DB) DropDataset(ctx context.Context, name string) error {
	if err := db.writable(); err != nil {
		return err
	}
	if err := db.check(); err != nil {
		return err
	}
	if err := db.maybeRefresh(ctx); err != nil {
		return err
	}
	db.mu.Lock()
	ds := db.datasets[name]
	db.mu.Unlock()
	if ds == nil {
		return fmt.Errorf("%w: %q", ErrDatasetNotFound, name)
	}
	if err := ds.acquireDrop(); err != nil {
		return err
	}
	defer ds.release()
	now := db.opts.now()
	if _, err := db.writeRow(ctx, ds, func(st *rowState) error {
		if st.Dropping != nil && st.Slot.Owner == db.owner {
			return errNoChange
		}
		if err := db.takeSlot(st, name, "drop", now); err != nil {
			return err
		}
		if st.Dropping == nil {
			st.Dropping = &dropState{Since: now.UTC()}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("snapshot: dropping %s: %w", name, err)
	}
	db.hook("drop:recorded", 0)
	return db.deleteDropped(ctx, ds)
}

// acquireDrop is acquire for a drop: a dataset whose drop is under way
// may be taken, to finish it.
func (ds *dataset) acquireDrop() error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if !ds.persisted || ds.dropped && ds.st.Dropping == nil {
		return fmt.Errorf("%w: %s", ErrDatasetNotFound, ds.name)
	}
	if ds.writer != "" {
		return fmt.Errorf("%w: %s of %s holds it", ErrRunInProgress, ds.writer, ds.name)
	}
	ds.writer = "drop"
	return nil
}

// finishDrop finishes a drop another process, or this one, left
// unfinished (D10), when this DB can take the writer slot. For the keeper
// and for BeginRun of the same name.
func (db *DB) finishDrop(ctx context.Context, ds *dataset) error {
	if err := ds.acquireDrop(); err != nil {
		return err
	}
	defer ds.release()
	now := db.opts.now()
	if _, err := db.writeRow(ctx, ds, func(st *rowState) error {
		if st.Dropping == nil {
			return fmt.Errorf("%w: no drop of %s under way", ErrInvalidArgument, ds.name)
		}
		return db.takeSlot(st, ds.name, "drop", now)
	}); err != nil {
		return err
	}
	return db.deleteDropped(ctx, ds)
}

// deleteDropped deletes what a dataset being dropped still holds: its
// cells, scratch rows and version rows, then its row. A deletion that
// failed may still land later (store.S9): the row then stays for the
// store's grace, so that a dataset of the same name is not created before
// a late deletion can no longer hit its cells.
func (db *DB) deleteDropped(ctx context.Context, ds *dataset) error {
	ds.mu.Lock()
	st := ds.st.clone()
	ds.mu.Unlock()
	epoch := st.Slot.Epoch
	fail := func(err error) error {
		retry := db.opts.now().Add(db.grace)
		if _, werr := db.writeRow(context.WithoutCancel(ctx), ds, func(st *rowState) error {
			if db.holdsSlot(st, epoch) != nil || st.Dropping == nil {
				return errNoChange
			}
			st.Dropping.RetryAfter = retry.UTC()
			return nil
		}); werr != nil {
			db.logger.Warn("recording a failed drop", "dataset", ds.name, "err", werr)
		}
		return fmt.Errorf("snapshot: dropping %s: %w", ds.name, err)
	}
	for _, t := range append(dataTablesOf(ds.name, st.Config), scratchTablesOf(ds.name, st.Config)...) {
		if err := db.st.DeleteRange(ctx, t, nil, nil); err != nil {
			return fail(err)
		}
	}
	for p := 0; p < st.Config.Partitions && !st.Config.Named; p++ {
		if st.ColumnTablesLeft || st.Format < metaFormat {
			if err := db.st.DeleteRange(ctx, columnTable(ds.name, p), nil, nil); err != nil {
				return fail(err)
			}
		}
	}
	vp := versionPrefix(ds.name)
	if err := db.st.DeleteRange(ctx, db.meta, vp, prefixEnd(vp)); err != nil {
		return fail(err)
	}
	db.hook("drop:deleted", 0)
	if db.opts.now().Before(st.Dropping.RetryAfter) {
		// The row goes when a late deletion can no longer land; the
		// keeper, or the next drop or run of the name, removes it then.
		return nil
	}
	if _, err := db.writeRow(ctx, ds, func(st *rowState) error {
		if st.Format == 0 {
			return errNoChange // the row is gone: by this write
		}
		if err := db.holdsSlot(st, epoch); err != nil {
			return err
		}
		st.gone = true
		return nil
	}); err != nil {
		return fmt.Errorf("snapshot: dropping %s: %w", ds.name, err)
	}
	db.mu.Lock()
	if db.datasets[ds.name] == ds {
		delete(db.datasets, ds.name)
	}
	db.mu.Unlock()
	ds.mu.Lock()
	ds.dropped = true
	ds.bodies = map[int64]*VersionInfo{}
	ds.mu.Unlock()
	db.logger.Info("dataset dropped", "dataset", ds.name)
	return nil
}
