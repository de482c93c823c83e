package snapshot

import (
	"context"
	"fmt"
)

// Abort ends the run without committing; its transaction becomes invalid
// (D4), so none of its cells is ever visible and GC removes them. reason
// is logged. Safe to call after Commit (no-op).
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
	err := r.db.txm.Abort(ctx, r.id, nil)
	r.db.clearScratchIfDirty(ctx, r.ds, r.nparts)
	r.ds.release()
	r.db.metrics.runs.WithLabelValues("aborted").Inc()
	r.db.logger.Warn("run aborted", "dataset", r.ds.name, "txn", r.id, "reason", reason)
	if err != nil {
		return fmt.Errorf("snapshot: aborting %s txn %d: %w", r.ds.name, r.id, err)
	}
	return nil
}
