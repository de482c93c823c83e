package snapshot

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Commit finishes the run (D3): writes delete markers for rows not seen,
// checks the guards, flushes and syncs the data, writes the version's
// record, then, in one conditional write of the dataset's row, makes the
// run's id committed and the dataset's current version and frees the
// writer slot (D9), only if the run still holds the slot at its epoch
// (W3: ErrSlotLost otherwise). On any error the run is aborted and the
// current version is unchanged, except ErrOutcomeUnknown: the commit's
// write may have landed and could not be read back; the DB learns which
// when the store answers, and keeps the dataset held until then.
func (r *Run) Commit(ctx context.Context) (vi VersionInfo, err error) {
	if err := r.usable(); err != nil {
		return VersionInfo{}, err
	}
	start := time.Now()
	defer func() {
		if err != nil && !r.done {
			if aerr := r.Abort(context.WithoutCancel(ctx), err.Error()); aerr != nil {
				err = errors.Join(err, aerr)
			}
		}
	}()
	if err := r.finishWrites(ctx); err != nil {
		return VersionInfo{}, err
	}
	if r.unchanged() {
		return r.verifyInstead(ctx)
	}
	// Data first (flushed, not yet durable), then the version's record,
	// then the row that lists it.
	if err := r.db.st.Sync(ctx); err != nil {
		return VersionInfo{}, fmt.Errorf("snapshot: syncing %s txn %d: %w", r.ds.name, r.id, err)
	}
	r.hook("commit:synced", 0)
	vi = VersionInfo{
		Dataset: r.ds.name, Version: r.id, CommittedAt: r.db.opts.now().UTC(),
		Source: r.opts.Source, Stats: r.statsNow(), Schema: r.opts.Schema, RestoredFrom: r.restoredFrom,
		Shapes: r.shapesNow(),
	}
	if _, err := r.db.slotDeadline(r.ds, r.epoch); err != nil { // W3
		return VersionInfo{}, fmt.Errorf("snapshot: committing %s txn %d: %w", r.ds.name, r.id, err)
	}
	if err := r.db.writeBody(ctx, &vi, r.srcDigest, nil); err != nil {
		return VersionInfo{}, err
	}
	r.hook("commit:recorded", r.id)
	stored := vi
	ds := r.ds
	ds.mu.Lock()
	ds.bodies[r.id] = &stored
	ds.mu.Unlock()
	if err := r.db.commitTxn(ctx, r, &stored); err != nil {
		if !errors.Is(err, ErrOutcomeUnknown) {
			return VersionInfo{}, fmt.Errorf("snapshot: committing %s txn %d: %w", r.ds.name, r.id, err)
		}
		// The slot stays held until the outcome is known: the keeper
		// commits it if the row still allows, or learns it landed.
		r.done = true
		r.publishStats()
		r.db.setPending(ds, fmt.Sprintf("commit of txn %d", r.id), func(ctx context.Context) error {
			return r.db.resolveCommit(ctx, r, &stored)
		})
		ds.release()
		return VersionInfo{}, fmt.Errorf("snapshot: committing %s txn %d: %w", r.ds.name, r.id, err)
	}
	r.hook("commit:committed", r.id)
	r.publishStats()
	r.done = true
	ds.mu.Lock()
	vi = ds.infoLocked(&stored)
	ds.mu.Unlock()
	ds.release()
	r.db.clearScratchIfDirty(context.WithoutCancel(ctx), ds, r.nparts, r.id)
	r.hook("commit:cleared", r.id)
	r.db.metrics.runs.WithLabelValues("committed").Inc()
	r.db.metrics.commitSecs.Observe(time.Since(start).Seconds())
	r.db.logger.Info("run committed", "dataset", ds.name, "txn", r.id, "version", r.id,
		"rows", vi.Stats.Rows, "inserted", vi.Stats.Inserted, "updated", vi.Stats.Updated,
		"deleted", vi.Stats.Deleted, "bytes_written", vi.Stats.BytesWritten)
	return vi, nil
}

// finishWrites makes the run's last writes (lastWrites), then checks the
// guards (D7).
func (r *Run) finishWrites(ctx context.Context) error {
	if err := r.lastWrites(ctx, false); err != nil {
		return err
	}
	return r.checkGuards()
}

// lastWrites makes the run's last writes (D3): its phase-B keys flushed,
// delete markers for the rows not seen (D5), every batch applied and
// every load flushed; then ends its writer, so that no write can follow
// the commit point (W3). With seal the loads are sealed instead of
// flushed (r.sealed), for the commit to flush them with other tables'
// (TablesRun.flushLoads): a partition still loading is in phase A of a
// first run, whose deletions read nothing (markDeleted).
func (r *Run) lastWrites(ctx context.Context, seal bool) error {
	for _, p := range r.parts {
		if err := r.flushSeen(ctx, p); err != nil {
			return err
		}
	}
	if err := r.syncWrites(ctx, r.parts, false, seal); err != nil {
		return err
	}
	r.hook("commit:flushed", r.stats.Rows)
	// Delete markers for rows not seen (D5), and duplicate keys.
	for _, p := range r.parts {
		if err := r.markDeleted(ctx, p); err != nil {
			return err
		}
	}
	if err := r.syncWrites(ctx, r.parts, true, seal); err != nil {
		return err
	}
	r.closeIters()
	// Every write is made: the writer ends before the commit point, so
	// that none can follow it (W3).
	r.endWrites()
	r.hook("commit:deleted", r.stats.Deleted)
	return nil
}

// unchanged reports whether a finished run may be recorded as a
// verification of the previous version (RunOptions.VerifyUnchanged):
// nothing inserted, updated or deleted, the same schema.
func (r *Run) unchanged() bool {
	st := r.stats
	return r.opts.VerifyUnchanged && r.prev != nil && st.Inserted+st.Updated+st.Deleted == 0 && sameSchema(r.prev.Schema, r.opts.Schema)
}

// commitTxn is the commit point (D3, D9): one conditional write of the
// dataset's row that ends r's transaction as committed, lists its version
// as kept and current, and frees the writer slot, made only while r holds
// the slot at its epoch (W3). A commit that already landed is found in
// the row (errNoChange).
func (db *DB) commitTxn(ctx context.Context, r *Run, vi *VersionInfo) error {
	_, err := db.writeRow(ctx, r.ds, func(st *rowState) error {
		if st.kept(r.id) {
			return errNoChange
		}
		if err := db.holdsSlot(st, r.epoch); err != nil {
			return err
		}
		if err := st.Txns.Commit(r.id); err != nil {
			return fmt.Errorf("%w: %v", ErrSlotLost, err)
		}
		st.Current = r.id
		st.Versions = append(st.Versions, versionRef{Version: r.id, CommittedAt: vi.CommittedAt})
		releaseSlot(st)
		return nil
	})
	return err
}

// resolveCommit learns the outcome of a commit that reported
// ErrOutcomeUnknown: committed if the row lists the version; else the
// commit is made if the run still holds the slot, or the transaction is
// aborted.
func (db *DB) resolveCommit(ctx context.Context, r *Run, vi *VersionInfo) error {
	err := db.commitTxn(ctx, r, vi)
	switch {
	case err == nil:
		db.logger.Info("run committed (outcome learned later)", "dataset", r.ds.name, "txn", r.id)
		return nil
	case errors.Is(err, ErrOutcomeUnknown), retryable(err):
		return err
	}
	return db.abortTxn(ctx, r.ds, r.id, r.epoch)
}
