package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// GCReport says what a garbage collection did or, dry, would do.
type GCReport struct {
	Dataset string `json:"dataset"`
	DryRun  bool   `json:"dry_run"`
	// VersionsExpired lists the versions retention expired, ascending.
	VersionsExpired []int64 `json:"versions_expired"`
	// CellsDeleted counts cell versions and markers removed.
	CellsDeleted int64 `json:"cells_deleted"`
	// BytesReclaimed estimates the bytes removed: row key + column +
	// value + 8 per cell, before storage compression.
	BytesReclaimed int64 `json:"bytes_reclaimed"`
	// InvalidTxnsPruned counts invalid transactions pruned (txn.I6).
	InvalidTxnsPruned int `json:"invalid_txns_pruned"`
}

// GC applies retention to a dataset and deletes exactly the cells no kept
// version can see plus the cells of its invalid transactions, then prunes
// the invalid set (doc.go G1-G7, with a worked example). Versions
// pinned by open Readers of this DB keep their cells. With dryRun nothing
// changes and the report says what would be deleted. Memory is bounded by
// one row's history. GC holds the dataset's writer slot from its first
// write of the row (which expires versions, durably before any cell
// goes) to its last (which prunes, and frees the slot). Errors:
// ErrDatasetNotFound, ErrRunInProgress (a run or another GC holds the
// dataset, in this process or another; GC never waits for it),
// ErrSlotLost.
func (db *DB) GC(ctx context.Context, name string, dryRun bool) (GCReport, error) {
	const op = "gc"
	ds, err := db.acquireWritable(ctx, name, op)
	if err != nil {
		return GCReport{}, err
	}
	defer ds.release()
	rep := GCReport{Dataset: name, DryRun: dryRun, VersionsExpired: []int64{}}
	now := db.opts.now()

	// G1: expire, durably first (taking the writer slot in the same write).
	var st rowState
	var expired []int64
	if dryRun {
		ds.mu.Lock()
		st = ds.st.clone()
		ds.mu.Unlock()
		expired = st.expired(now)
		st.Versions = slices.DeleteFunc(st.Versions, func(r versionRef) bool { return slices.Contains(expired, r.Version) })
	} else {
		st, err = db.writeRow(ctx, ds, func(st *rowState) error {
			if st.Dropping != nil {
				return fmt.Errorf("%w: %q", ErrDatasetNotFound, name)
			}
			if err := db.takeSlot(st, name, op, now); err != nil {
				return err
			}
			expired = st.expired(now)
			st.Versions = slices.DeleteFunc(st.Versions, func(r versionRef) bool { return slices.Contains(expired, r.Version) })
			st.Expired = append(st.Expired, expired...)
			slices.Sort(st.Expired)
			st.Expired = slices.Compact(st.Expired)
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("snapshot: GC of %s: %w", name, err)
		}
	}
	rep.VersionsExpired = append(rep.VersionsExpired, expired...)
	epoch := st.Slot.Epoch
	if !dryRun {
		defer func() {
			if err := db.releaseAfter(ctx, ds, epoch); err != nil {
				db.logger.Warn("freeing the writer slot after GC", "dataset", name, "err", err)
			}
		}()
	}

	// G2: the views whose cells must survive: every kept version, seen with
	// today's excluded set, and every open reader with the visibility it
	// pinned.
	var views, readerViews []txn.Visibility
	for _, r := range st.Versions {
		views = append(views, st.Txns.Visibility(r.Version))
	}
	ds.mu.Lock()
	for r := range ds.readers {
		views = append(views, r.vis)
		readerViews = append(readerViews, r.vis)
	}
	ds.mu.Unlock()
	for p := 0; p < st.Config.Partitions; p++ {
		if !dryRun {
			if _, err := db.slotDeadline(ds, epoch); err != nil {
				return rep, fmt.Errorf("snapshot: GC of %s: %w", name, err)
			}
		}
		if err := db.gcPartition(ctx, dataTable(name, p), views, dryRun, &rep); err != nil {
			return rep, err
		}
	}
	if !dryRun {
		if err := db.st.Sync(ctx); err != nil {
			return rep, fmt.Errorf("snapshot: syncing GC of %s: %w", name, err)
		}
	}
	// G6, txn.I6: the invalid ids past the grace whose cells are gone, that
	// no open reader can see.
	var prune []int64
	for _, id := range st.Txns.Prunable(now, db.grace) {
		seen := false
		for _, v := range readerViews {
			seen = seen || v.IsVisible(id)
		}
		if !seen {
			prune = append(prune, id)
		}
	}
	if !dryRun && len(prune) > 0 {
		left, err := db.idsWithCells(ctx, name, st.Config.Partitions, prune)
		if err != nil {
			return rep, err
		}
		prune = slices.DeleteFunc(prune, func(id int64) bool { return left[id] })
	}
	rep.InvalidTxnsPruned = len(prune)
	if dryRun {
		return rep, nil
	}
	// The version rows of expired versions, then the row: expired ids
	// and pruned transactions forgotten, the slot freed.
	gone := slices.Clone(st.Expired)
	if len(gone) > 0 {
		b := &store.Batch{Table: db.meta, Sync: true}
		for _, v := range gone {
			b.DeleteVersion(versionKey(name, v), colInfo, 0)
		}
		if err := db.st.Apply(ctx, b); err != nil {
			return rep, fmt.Errorf("snapshot: GC of %s: deleting version records: %w", name, err)
		}
	}
	_, err = db.writeRow(ctx, ds, func(st *rowState) error {
		if st.Slot.Owner == "" && st.Slot.Epoch == epoch {
			return errNoChange // freed at this epoch: by this write
		}
		if err := db.holdsSlot(st, epoch); err != nil {
			return err
		}
		st.Expired = slices.DeleteFunc(st.Expired, func(v int64) bool { return slices.Contains(gone, v) })
		st.Txns.Prune(prune)
		releaseSlot(st)
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("snapshot: GC of %s: %w", name, err)
	}
	db.metrics.gcDeleted.Add(float64(rep.CellsDeleted))
	db.logger.Info("gc done", "dataset", name, "dry_run", dryRun, "versions_expired", len(expired),
		"cells_deleted", rep.CellsDeleted, "invalid_pruned", rep.InvalidTxnsPruned)
	return rep, nil
}

// idsWithCells returns which of ids (ascending) still have a cell in the
// dataset's data tables.
func (db *DB) idsWithCells(ctx context.Context, name string, parts int, ids []int64) (map[int64]bool, error) {
	left := map[int64]bool{}
	tr := store.TimeRange{Min: ids[0], Max: ids[len(ids)-1] + 1}
	for p := 0; p < parts; p++ {
		it, err := db.st.Scan(ctx, dataTable(name, p), store.ScanOptions{ReadOptions: store.ReadOptions{TimeRange: tr}})
		if err != nil {
			return nil, fmt.Errorf("snapshot: GC of %s: %w", name, err)
		}
		for it.Next() {
			if ts := it.Cell().Timestamp; slices.Contains(ids, ts) {
				left[ts] = true
			}
		}
		if err := it.Close(); err != nil {
			return nil, fmt.Errorf("snapshot: GC of %s: %w", name, err)
		}
	}
	return left, nil
}

// releaseAfter frees the writer slot an operation of this DB took at
// epoch, if its last write did not (it failed); a release that cannot be
// made is left pending (the keeper makes it).
func (db *DB) releaseAfter(ctx context.Context, ds *dataset, epoch int64) error {
	ds.mu.Lock()
	held := ds.slot.epoch == epoch && !ds.slot.lost
	ds.mu.Unlock()
	if !held {
		return nil
	}
	release := func(ctx context.Context) error {
		_, err := db.writeRow(ctx, ds, func(st *rowState) error {
			if db.holdsSlot(st, epoch) != nil {
				return errNoChange
			}
			releaseSlot(st)
			return nil
		})
		return err
	}
	err := release(context.WithoutCancel(ctx))
	if err != nil {
		db.setPending(ds, "release of the writer slot", release)
	}
	return err
}

// gcPartition walks every cell of one partition table, row by row, and
// deletes the cells no view needs (G3-G5). Deletions of a row go into one
// batch, puts before markers, so a crash never leaves a marker removed
// while a cell it hides survives.
func (db *DB) gcPartition(ctx context.Context, table string, views []txn.Visibility, dryRun bool, rep *GCReport) error {
	// Every version of every cell: GC must see them all.
	it, err := db.st.Scan(ctx, table, store.ScanOptions{})
	if err != nil {
		return fmt.Errorf("snapshot: GC scanning %s: %w", table, err)
	}
	rr := newRowReader(it)
	defer rr.close()
	b := &store.Batch{Table: table}
	var arena []byte
	var needed, marker []bool
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		if err := db.st.Apply(ctx, b); err != nil {
			return fmt.Errorf("snapshot: GC deleting cells of %s: %w", table, err)
		}
		b.Reset()
		arena = arena[:0]
		if h := db.opts.hook; h != nil {
			h("gc:batch", rep.CellsDeleted)
		}
		return nil
	}
	for rr.next() {
		cells := rr.cells
		needed = slices.Grow(needed[:0], len(cells))[:len(cells)]
		marker = slices.Grow(marker[:0], len(cells))[:len(cells)]
		clear(needed)
		clear(marker)
		markNeeded(cells, views, needed, marker)
		// G5: a marker that is the effective state of some view stays if
		// a needed put older than it survives in its scope: compare with
		// the oldest needed put of its column, or of the row.
		rowMin := int64(-1)
		for i := 0; i < len(cells); {
			j := i
			colMin := int64(-1)
			for ; j < len(cells) && bytes.Equal(cells[j].Column, cells[i].Column); j++ {
				if needed[j] && cells[j].Kind == store.KindPut {
					colMin = cells[j].Timestamp // versions descend: the last is the oldest
				}
			}
			if colMin >= 0 && (rowMin < 0 || colMin < rowMin) {
				rowMin = colMin
			}
			for k := i; k < j; k++ {
				if marker[k] && cells[k].Kind == store.KindDeleteColumn && colMin >= 0 && colMin < cells[k].Timestamp {
					needed[k] = true
				}
			}
			i = j
		}
		for k := range cells {
			if marker[k] && cells[k].Kind == store.KindDeleteRow && rowMin >= 0 && rowMin < cells[k].Timestamp {
				needed[k] = true
			}
		}
		rowStart := -1
		for pass := 0; pass < 2; pass++ { // puts first, then markers
			for i := range cells {
				c := &cells[i]
				if needed[i] || (pass == 0) != (c.Kind == store.KindPut) {
					continue
				}
				rep.CellsDeleted++
				rep.BytesReclaimed += int64(len(c.Row) + len(c.Column) + len(c.Value) + 8)
				if dryRun {
					continue
				}
				if rowStart < 0 {
					rowStart = len(arena)
					arena = append(arena, rr.row...)
				}
				row := arena[rowStart : rowStart+len(rr.row) : rowStart+len(rr.row)]
				cs := len(arena)
				arena = append(arena, c.Column...)
				b.DeleteVersion(row, arena[cs:len(arena):len(arena)], c.Timestamp)
			}
		}
		if b.Len() >= batchSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rr.err(); err != nil {
		return fmt.Errorf("snapshot: GC scanning %s: %w", table, err)
	}
	return flush()
}

// markNeeded sets needed[i] for every put that some view sees (G3) and
// marker[i] for every delete marker that is the effective state of a
// column in some view (G4): the column's newest visible version, or the
// visible row marker that hides it. A row marker of a view in which a
// column has no visible version is a candidate too: it may still hide
// older puts that another view needs, and G5 decides.
func markNeeded(cells []store.Cell, views []txn.Visibility, needed, marker []bool) {
	for _, vis := range views {
		w := newVisibleWalk(cells, vis)
		for i, ok := w.next(); ok; i, ok = w.next() {
			switch {
			case i < 0 || w.hidden(i):
				if w.rowDel >= 0 {
					marker[w.rowDel] = true
				}
			case cells[i].Kind == store.KindPut:
				needed[i] = true
			default:
				marker[i] = true
			}
		}
	}
}
