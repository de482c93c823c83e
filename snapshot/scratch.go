package snapshot

// The scratch table of phase B (doc.go D5; keys.go has its layout): one per
// partition, holding the keys a run's partition received after its source
// order broke, each in a row prefixed with the run's id, at the run's id,
// with a sequence number as column, so that a key given twice is two
// cells of one row. A run reads only its own rows (its prefix and its
// timestamp): rows left by another run can never count as seen, and a
// clear of another run's rows that lands late (store.S9) cannot touch
// them. Writes to it (recordSeen, flushSeen: run_phase_b.go) are never
// synced: a crashed run's scratch rows are garbage.
//
// A run that recorded keys clears the table when it ends (commit or
// abort). A table that may still hold keys (that clear failed, or the
// process died; Open marks every dataset so) is cleared before the
// dataset's next run writes, once it holds the writer slot; if that clear
// fails, the run fails with it. Dropping a dataset clears it too.
//
// A clear deletes only the rows of runs up to the one it cleans up after
// (below a bound in the rows' id prefix), never the whole table: a later
// run of the dataset has a larger id (txn.I2, beginTxn), so a clear that
// lands late (store.S9), or that is still under way when the next run
// begins (the dataset is released before it), cannot delete the keys that
// run records, which would make its commit delete rows it saw.

import (
	"context"
	"fmt"
)

// clearScratchIfDirty clears the scratch tables of ds of the rows of run
// id and of the runs before it, when a run may have written them; a
// failure is logged and leaves them dirty, for the next run to clear.
func (db *DB) clearScratchIfDirty(ctx context.Context, ds *dataset, parts int, id int64) {
	ds.mu.Lock()
	dirty := ds.scratchDirty
	ds.mu.Unlock()
	if !dirty {
		return
	}
	if err := db.clearScratch(ctx, ds, parts, id+1); err != nil {
		db.logger.Warn("clearing a run's scratch table", "dataset", ds.name, "err", err)
	}
}

// clearScratch deletes the rows of the runs with ids below below from
// the scratch tables of ds (parts of them, for a dataset of one table;
// every table's, for one of named tables); on success they are known
// clean, so the next run need not clear them first.
func (db *DB) clearScratch(ctx context.Context, ds *dataset, parts int, below int64) error {
	ds.mu.Lock()
	cfg := ds.cfg
	ds.mu.Unlock()
	if !cfg.Named {
		cfg.Partitions = parts
	}
	for _, t := range scratchTablesOf(ds.name, cfg) {
		if err := db.st.DeleteRange(ctx, t, nil, scratchRow(nil, below, nil)); err != nil {
			return fmt.Errorf("snapshot: clearing the scratch table of %s: %w", ds.name, err)
		}
	}
	ds.mu.Lock()
	ds.scratchDirty = false
	ds.mu.Unlock()
	return nil
}
