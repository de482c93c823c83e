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
// pinned by open Readers keep their cells. With dryRun nothing changes and
// the report says what would be deleted. Memory is bounded by one row's
// history. Errors: ErrDatasetNotFound, ErrRunInProgress (a run holds the
// dataset; GC never waits for it).
func (db *DB) GC(ctx context.Context, name string, dryRun bool) (GCReport, error) {
	ds, err := db.acquireWritable(ctx, name, "gc")
	if err != nil {
		return GCReport{}, err
	}
	defer ds.release()
	rep := GCReport{Dataset: name, DryRun: dryRun, VersionsExpired: []int64{}}

	// G2: the views whose cells must survive: every kept version after
	// expiry, seen with today's excluded set, and every open reader with
	// the visibility it pinned.
	ds.mu.Lock()
	expired := ds.expiredLocked(db.opts.now())
	rep.VersionsExpired = append(rep.VersionsExpired, expired...)
	if !dryRun && len(expired) > 0 {
		ds.versions = slices.DeleteFunc(ds.versions, func(vi *VersionInfo) bool {
			_, found := slices.BinarySearch(expired, vi.Version)
			return found
		})
	}
	var views []txn.Visibility
	for _, vi := range ds.versions {
		if _, found := slices.BinarySearch(expired, vi.Version); !found {
			views = append(views, db.txm.Visibility(name, vi.Version))
		}
	}
	var readerViews []txn.Visibility
	for r := range ds.readers {
		views = append(views, r.vis)
		readerViews = append(readerViews, r.vis)
	}
	parts := ds.cfg.Partitions
	// G7: expired versions are remembered until none of their cells is
	// left.
	allExpired := slices.Clone(ds.expired)
	allExpired = append(allExpired, expired...)
	slices.Sort(allExpired)
	if !dryRun {
		ds.expired = allExpired
	}
	ds.mu.Unlock()
	invalid := db.txm.Invalid(name)

	if !dryRun && len(expired) > 0 {
		b := &store.Batch{Table: db.meta, Sync: true}
		for _, v := range expired {
			b.DeleteVersion(versionKey(name, v), colInfo, 0)
		}
		b.Put(datasetKey(name), colExp, 0, encodeIDs(allExpired))
		if err := db.st.Apply(ctx, b); err != nil {
			return rep, fmt.Errorf("snapshot: expiring versions of %s: %w", name, err)
		}
	}

	live := make([]bool, len(allExpired)) // expired versions with cells left
	for p := 0; p < parts; p++ {
		if err := db.gcPartition(ctx, dataTable(name, p), views, dryRun, allExpired, live, &rep); err != nil {
			return rep, err
		}
	}
	if !dryRun {
		var still []int64
		for i, v := range allExpired {
			if live[i] {
				still = append(still, v)
			}
		}
		if len(still) != len(allExpired) {
			b := &store.Batch{Table: db.meta, Sync: true}
			b.Put(datasetKey(name), colExp, 0, encodeIDs(still))
			if err := db.st.Apply(ctx, b); err != nil {
				return rep, fmt.Errorf("snapshot: GC of %s: %w", name, err)
			}
			ds.mu.Lock()
			ds.expired = still
			ds.mu.Unlock()
		}
	}
	if !dryRun {
		if err := db.st.Sync(ctx); err != nil {
			return rep, fmt.Errorf("snapshot: syncing GC of %s: %w", name, err)
		}
	}
	// G6, txn.I6: prune the invalid ids whose cells are gone: every one
	// that no open reader can see (those that one can see kept their
	// cells).
	var prune []int64
	for _, id := range invalid {
		seen := false
		for _, v := range readerViews {
			if v.IsVisible(id) {
				seen = true
				break
			}
		}
		if !seen {
			prune = append(prune, id)
		}
	}
	rep.InvalidTxnsPruned = len(prune)
	if !dryRun {
		if err := db.txm.Prune(ctx, prune); err != nil {
			return rep, fmt.Errorf("snapshot: GC of %s: %w", name, err)
		}
		db.metrics.gcDeleted.Add(float64(rep.CellsDeleted))
	}
	db.logger.Info("gc done", "dataset", name, "dry_run", dryRun, "versions_expired", len(expired),
		"cells_deleted", rep.CellsDeleted, "invalid_pruned", rep.InvalidTxnsPruned)
	return rep, nil
}

// gcPartition walks every cell of one partition table, row by row, and
// deletes the cells no view needs (G3-G5). Deletions of a row go into one
// batch, puts before markers, so a crash never leaves a marker removed
// while a cell it hides survives.
func (db *DB) gcPartition(ctx context.Context, table string, views []txn.Visibility, dryRun bool, expired []int64, live []bool, rep *GCReport) error {
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
		for i := range cells {
			if needed[i] {
				if j, found := slices.BinarySearch(expired, cells[i].Timestamp); found {
					live[j] = true
				}
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
