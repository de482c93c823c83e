package snapshot

// The scratch table of phase B (doc.go D5; keys.go has its layout): one per
// partition, holding the keys a run's partition received after its source
// order broke, each in a row prefixed with the run's id, at the run's id,
// with a sequence number as column, so that a key given twice is two
// cells of one row. A run reads only its own rows (its prefix and its
// timestamp): rows left by another run can never count as seen, and a
// clear of another run's rows that lands late (store.S9) cannot touch
// them. Writes to it are never synced: a crashed run's scratch rows are
// garbage.
//
// A run that recorded keys clears the table when it ends (commit or
// abort). A table that may still hold keys (that clear failed, or the
// process died; Open marks every dataset so) is cleared before the
// dataset's next run writes, once it holds the writer slot; if that clear
// fails, the run fails with it. Dropping a dataset clears it too.

import (
	"context"
	"encoding/binary"
	"fmt"
)

// recordSeen adds key to the partition's batch of scratch rows.
func (r *Run) recordSeen(p *runPart, key []byte) {
	ss := len(p.sarena)
	p.sarena = scratchRow(p.sarena, r.id, key)
	re := len(p.sarena)
	p.sarena = binary.BigEndian.AppendUint64(p.sarena, p.seq)
	p.seq++
	p.seen.Put(p.sarena[ss:re:re], p.sarena[re:len(p.sarena):len(p.sarena)], r.id, nil)
}

// flushSeen applies the partition's batch of scratch rows, without sync.
func (r *Run) flushSeen(ctx context.Context, p *runPart) error {
	if p.seen.Len() == 0 {
		return nil
	}
	if err := r.db.st.Apply(ctx, &p.seen); err != nil {
		r.err = fmt.Errorf("snapshot: recording seen keys of %s txn %d: %w", r.ds.name, r.id, err)
		return r.err
	}
	p.seen.Reset()
	p.sarena = p.sarena[:0]
	return nil
}

// clearScratchIfDirty clears the scratch tables of ds when a run may have
// written them; a failure is logged and leaves them dirty, for the next
// run to clear.
func (db *DB) clearScratchIfDirty(ctx context.Context, ds *dataset, parts int) {
	ds.mu.Lock()
	dirty := ds.scratchDirty
	ds.mu.Unlock()
	if !dirty {
		return
	}
	if err := db.clearScratch(ctx, ds, parts); err != nil {
		db.logger.Warn("clearing a run's scratch table", "dataset", ds.name, "err", err)
	}
}

// clearScratch empties the scratch tables of ds (parts of them, for a
// dataset of one table; every table's, for one of named tables); on success they are
// known clean, so the next run need not clear them first.
func (db *DB) clearScratch(ctx context.Context, ds *dataset, parts int) error {
	ds.mu.Lock()
	cfg := ds.cfg
	ds.mu.Unlock()
	if !cfg.Named {
		cfg.Partitions = parts
	}
	for _, t := range scratchTablesOf(ds.name, cfg) {
		if err := db.st.DeleteRange(ctx, t, nil, nil); err != nil {
			return fmt.Errorf("snapshot: clearing the scratch table of %s: %w", ds.name, err)
		}
	}
	ds.mu.Lock()
	ds.scratchDirty = false
	ds.mu.Unlock()
	return nil
}
