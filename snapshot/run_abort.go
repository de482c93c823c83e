package snapshot

import (
	"context"
	"fmt"
)

// Abort ends the run without committing; its transaction becomes invalid
// (D4), so none of its cells is ever visible and GC removes them. reason
// is logged. Safe to call after Commit (no-op). When the abort's write
// cannot be made, the transaction stays in progress, excluded from every
// read, and the DB keeps the dataset until it is made (ErrOutcomeUnknown).
func (r *Run) Abort(ctx context.Context, reason string) error {
	if r.done {
		return nil
	}
	r.publishStats()
	r.done = true
	r.closeIters()
	// Writes in flight end before the transaction is invalid, so that GC,
	// which may run once it is, finds every cell of it.
	r.endWrites()
	err := r.db.endTxn(ctx, r, reason)
	r.db.clearScratchIfDirty(ctx, r.ds, r.nparts, r.id)
	r.ds.release()
	r.db.metrics.runs.WithLabelValues("aborted").Inc()
	r.db.logger.Warn("run aborted", "dataset", r.ds.name, "txn", r.id, "reason", reason)
	if err != nil {
		return fmt.Errorf("snapshot: aborting %s txn %d: %w", r.ds.name, r.id, err)
	}
	return nil
}

// endTxn aborts r's transaction; when its write fails, the abort is made
// pending (the keeper makes it) and the dataset stays held.
func (db *DB) endTxn(ctx context.Context, r *Run, reason string) error {
	err := db.abortTxn(ctx, r.ds, r.id, r.epoch)
	if err != nil {
		db.setPending(r.ds, fmt.Sprintf("abort of txn %d (%s)", r.id, reason), func(ctx context.Context) error {
			return db.abortTxn(ctx, r.ds, r.id, r.epoch)
		})
	}
	return err
}

// abortTxn makes transaction id of ds invalid and frees the writer slot
// held at epoch, in one write of the row (txn.I4, D9). Nothing to write
// when id is no longer in progress: committed (an earlier commit whose
// outcome was unknown landed), or made invalid by another writer that took
// the slot (txn.I5).
func (db *DB) abortTxn(ctx context.Context, ds *dataset, id, epoch int64) error {
	_, err := db.writeRow(ctx, ds, func(st *rowState) error {
		if !st.Txns.IsInProgress(id) {
			return errNoChange
		}
		if err := st.Txns.Abort(id, db.opts.now()); err != nil {
			return err
		}
		if db.holdsSlot(st, epoch) == nil {
			releaseSlot(st)
		}
		return nil
	})
	return err
}

// setPending records an outcome of ds still to be learned: the keeper
// calls learn until it succeeds, and ds stays held by this DB until then
// (its writer is not freed).
func (db *DB) setPending(ds *dataset, what string, learn func(ctx context.Context) error) {
	ds.mu.Lock()
	if ds.writer == "" {
		ds.writer = what
	}
	ds.pending = learn
	ds.mu.Unlock()
	db.logger.Warn("outcome to learn; the dataset stays held", "dataset", ds.name, "what", what)
}
