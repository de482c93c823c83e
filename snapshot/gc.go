package snapshot

import (
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
	// CellsDeleted counts cell versions and markers removed: those no
	// kept version sees (superseded, or only in expired versions) and
	// those of invalid transactions.
	CellsDeleted int64 `json:"cells_deleted"`
	// CellsOfInvalidTxns counts the cells of CellsDeleted that invalid
	// transactions wrote (failed or aborted runs, txn.I6): no version
	// ever saw them, so they go without a version expiring.
	CellsOfInvalidTxns int64 `json:"cells_of_invalid_txns"`
	// BytesReclaimed estimates the bytes removed: row key + column +
	// value + 8 per cell, before storage compression.
	BytesReclaimed int64 `json:"bytes_reclaimed"`
	// InvalidTxnsPruned counts invalid transactions pruned (txn.I6).
	InvalidTxnsPruned int `json:"invalid_txns_pruned"`
}

// GC applies retention to a dataset and deletes exactly the cells no kept
// version can see plus the cells of its invalid transactions, then prunes
// the invalid set and forgets the dropped tables whose cells are gone
// (doc.go G1-G10, with a worked example). Versions
// pinned by open Readers of this DB keep their cells; versions pinned in
// the store by Readers of any process (G8) stay kept. With dryRun nothing
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

	// G8: the versions live pins of any process name stay kept.
	var pinned map[int64]bool
	if db.usesPins() {
		if pinned, err = db.pinnedVersions(ctx, name, now, !dryRun); err != nil {
			return rep, err
		}
	}

	// G1: expire, durably first (taking the writer slot in the same write).
	// The mark of the previous GC (G10) is read in the same write and
	// cleared by it: a GC that ends early leaves none.
	var st rowState
	var expired []int64
	var mark *gcMark
	if dryRun {
		ds.mu.Lock()
		st = ds.st.clone()
		ds.mu.Unlock()
		expired = unpinned(st.expired(now), pinned)
		st.Versions = slices.DeleteFunc(st.Versions, func(r versionRef) bool { return slices.Contains(expired, r.Version) })
		mark = st.Collected
	} else {
		st, err = db.writeRow(ctx, ds, func(st *rowState) error {
			if st.Dropping != nil {
				return fmt.Errorf("%w: %q", ErrDatasetNotFound, name)
			}
			if err := db.takeSlot(st, name, op, now); err != nil {
				return err
			}
			expired = unpinned(st.expired(now), pinned)
			st.Versions = slices.DeleteFunc(st.Versions, func(r versionRef) bool { return slices.Contains(expired, r.Version) })
			st.Expired = append(st.Expired, expired...)
			slices.Sort(st.Expired)
			st.Expired = slices.Compact(st.Expired)
			mark, st.Collected = st.Collected, nil
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
	readerTables := map[int]bool{} // the tables open Readers read (G9)
	ds.mu.Lock()
	for r := range ds.readers {
		views = append(views, r.vis)
		readerViews = append(readerViews, r.vis)
		for _, t := range r.info.Tables {
			readerTables[t.Number] = true
		}
	}
	ds.mu.Unlock()
	// G8: a pin written after the first reading of the pins, by a Reader
	// that read the row before the expiry above, keeps the cells of its
	// version, expired now, and its record.
	var latePins map[int64]bool
	if db.usesPins() && !dryRun {
		if latePins, err = db.pinnedVersions(ctx, name, now, false); err != nil {
			return rep, err
		}
		for v := range latePins {
			if !st.kept(v) && slices.Contains(st.Expired, v) {
				vis := st.Txns.Visibility(v)
				views = append(views, vis)
				readerViews = append(readerViews, vis)
			}
		}
	}
	// G10: with the previous GC's mark still good, only the cells of
	// invalid transactions can go, and only the versions in their span
	// are read; else every version of every row.
	skip := !db.opts.gcReadsAll && mark.covers(&st, expired)
	var within store.TimeRange
	tables := gcTables(ds, st, views, readerViews)
	if ids := st.Txns.InvalidIDs(); skip && len(ids) > 0 {
		within = store.TimeRange{Min: ids[0], Max: ids[len(ids)-1] + 1}
	} else if skip {
		tables = nil
	}
	for _, g := range tables {
		if !dryRun {
			if _, err := db.slotDeadline(ds, epoch); err != nil {
				return rep, fmt.Errorf("snapshot: GC of %s: %w", name, err)
			}
		}
		if err := db.gcPartition(ctx, g, st.Txns.IsInvalid, within, dryRun, &rep); err != nil {
			return rep, err
		}
	}
	if skip {
		db.hook("gc:skipped", int64(len(tables)))
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
		left, err := db.idsWithCells(ctx, name, dataTablesOf(name, st.Config), prune)
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
	gone := slices.DeleteFunc(slices.Clone(st.Expired), func(v int64) bool { return latePins[v] })
	if len(gone) > 0 {
		b := &store.Batch{Table: db.meta, Sync: true}
		for _, v := range gone {
			b.DeleteVersion(versionKey(name, v), colInfo, 0)
			b.DeleteVersion(versionKey(name, v), colDigest, 0)
			for _, tc := range st.Config.Tables {
				b.DeleteVersion(versionKey(name, v), tableDigestColumn(tc.Num), 0)
			}
		}
		if err := db.st.Apply(ctx, b); err != nil {
			return rep, fmt.Errorf("snapshot: GC of %s: deleting version records: %w", name, err)
		}
	}
	// G9: the tables no kept version holds, whose cells are gone.
	forget, err := db.emptyTables(ctx, name, st.Config, unheldTables(ds, st, readerTables, len(st.Expired)-len(gone), prune))
	if err != nil {
		return rep, err
	}
	next := newMark(&st, skip, len(readerViews) > 0)
	var forgotten []string
	_, err = db.writeRow(ctx, ds, func(st *rowState) error {
		if st.Slot.Owner == "" && st.Slot.Epoch == epoch {
			return errNoChange // freed at this epoch: by this write
		}
		if err := db.holdsSlot(st, epoch); err != nil {
			return err
		}
		st.Expired = slices.DeleteFunc(st.Expired, func(v int64) bool { return slices.Contains(gone, v) })
		st.Txns.Prune(prune)
		forgotten = forgetTables(ds, st, forget)
		st.Collected = next
		releaseSlot(st)
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("snapshot: GC of %s: %w", name, err)
	}
	if len(forgotten) > 0 {
		db.logger.Info("gc forgot dropped tables", "dataset", name, "tables", someTables(forgotten))
	}
	db.metrics.gcDeleted.Add(float64(rep.CellsDeleted))
	db.logger.Info("gc done", "dataset", name, "dry_run", dryRun, "versions_expired", len(expired),
		"versions_pinned", len(pinned), "cells_deleted", rep.CellsDeleted, "invalid_pruned", rep.InvalidTxnsPruned,
		"rows_read", gcRowsRead(skip, within))
	return rep, nil
}

// gcMark is what a GC proved of a dataset's data tables (G10), kept in
// its row (rowState.Collected) by the GC's last write: every cell of a
// transaction up to Top that is in the store is seen by the views of
// Versions, the versions up to Top kept then (G3-G5 keep it), or belongs
// to a transaction invalid then and still invalid since.
type gcMark struct {
	Top      int64   `json:"top"`
	Versions []int64 `json:"versions"`
}

// covers reports whether m, read in the row by GC's first write, still
// proves that no cell but those of invalid transactions can go (G10): st
// is that row with the versions expired now removed, expired those
// versions. It holds when nothing expires now and nothing waits for its
// version records to go, no transaction is in progress, the data is row
// versions, and the versions kept up to m.Top are exactly m.Versions (none
// expired since, none listed another way).
func (m *gcMark) covers(st *rowState, expired []int64) bool {
	if m == nil || len(expired) > 0 || len(st.Expired) > 0 || len(st.Txns.InProgress) > 0 ||
		st.Format != metaFormat || st.ColumnTablesLeft {
		return false
	}
	var old []int64
	for _, r := range st.Versions {
		if r.Version <= m.Top {
			old = append(old, r.Version)
		}
	}
	return slices.Equal(old, m.Versions)
}

// newMark returns the mark a GC of st (the row as its first write left
// it) leaves for the next one (G10), or nil: a GC that read every version
// leaves one only if the views it kept cells for were the kept versions'
// alone (no Reader of this DB, no late pin), since a reader's view ends
// without a GC noticing; a GC that skipped proves what the mark it used
// did, plus that the transactions committed since are kept versions.
func newMark(st *rowState, skipped, readers bool) *gcMark {
	if (readers && !skipped) || st.Format != metaFormat || st.ColumnTablesLeft {
		return nil
	}
	m := &gcMark{Top: st.Top, Versions: []int64{}}
	for _, r := range st.Versions {
		m.Versions = append(m.Versions, r.Version)
	}
	return m
}

// gcRowsRead names what a GC read of the data tables, for its log line.
func gcRowsRead(skipped bool, within store.TimeRange) string {
	switch {
	case !skipped:
		return "all"
	case within.IsZero():
		return "none"
	}
	return "invalid"
}

// unpinned returns the versions of expired that no live pin names (G8).
func unpinned(expired []int64, pinned map[int64]bool) []int64 {
	return slices.DeleteFunc(expired, func(v int64) bool { return pinned[v] })
}

// gcTable is one data table GC collects: its column dictionary's size and
// the views whose cells must survive in it (G2).
type gcTable struct {
	table   string
	columns int
	views   []txn.Visibility
}

// gcTables returns the data tables of ds, whose row holds st, with their
// views: for a dataset of named tables, a table's are the kept versions
// that hold it and every open reader's (readerViews); views are those of
// every kept version and reader. A table no kept version holds has only
// the readers' views, so its cells go once no reader sees them.
func gcTables(ds *dataset, st rowState, views, readerViews []txn.Visibility) []gcTable {
	var out []gcTable
	if !st.Config.Named {
		for p := 0; p < st.Config.Partitions; p++ {
			out = append(out, gcTable{dataTable(ds.name, p), len(st.Config.Columns), views})
		}
		return out
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for _, tc := range st.Config.Tables {
		tv := slices.Clone(readerViews)
		for _, ref := range st.Versions {
			if vi := ds.bodies[ref.Version]; vi != nil && slices.ContainsFunc(vi.Tables, func(t TableInfo) bool { return t.Number == tc.Num }) {
				tv = append(tv, st.Txns.Visibility(ref.Version))
			}
		}
		for _, t := range tc.dataTables(ds.name) {
			out = append(out, gcTable{t, len(tc.Columns), tv})
		}
	}
	return out
}

// idsWithCells returns which of ids (ascending) still have a cell in the
// dataset's data tables.
func (db *DB) idsWithCells(ctx context.Context, name string, tables []string, ids []int64) (map[int64]bool, error) {
	left := map[int64]bool{}
	tr := store.TimeRange{Min: ids[0], Max: ids[len(ids)-1] + 1}
	for _, t := range tables {
		it, err := db.st.Scan(ctx, t, store.ScanOptions{ReadOptions: store.ReadOptions{TimeRange: tr}})
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

// gcPartition walks every row version of one partition table, row by
// row, and deletes the cells no view needs (G3-G5). A cell is one column
// of a row version (rowversion.go: a value or a column delete marker) or a
// row delete marker; a row version keeps only its needed cells (it is
// rewritten without the others, or deleted when none is left). A full row
// version also hides everything older (a read's walk stops there), so it
// stays, even without cells, while something older survives, as a row
// delete marker does (G5). The changes of one row are one batch, applied
// atomically (a store.Batch on Pebble, one row mutation on HBase).
//
// A non-zero within reads only the row versions in that time range and
// deletes only those of invalid transactions (G10): no view sees them, so
// they go whole whatever else the row holds, as they do when every
// version is read.
func (db *DB) gcPartition(ctx context.Context, gt gcTable, invalid func(int64) bool, within store.TimeRange, dryRun bool, rep *GCReport) error {
	table, n, views := gt.table, gt.columns, gt.views
	onlyInvalid := !within.IsZero()
	if onlyInvalid {
		views = nil
	}
	// Every version of every row (G3-G5 must see them all), or those in
	// within.
	it, err := db.st.Scan(ctx, table, store.ScanOptions{ReadOptions: store.ReadOptions{TimeRange: within}})
	if err != nil {
		return fmt.Errorf("snapshot: GC scanning %s: %w", table, err)
	}
	rr := newRowReader(it)
	defer rr.close()
	b := &store.Batch{Table: table}
	var arena []byte
	g := gcRow{n: n}
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
		if err := g.load(rr.cells); err != nil {
			return fmt.Errorf("snapshot: GC of %s: %w", table, err)
		}
		g.markNeeded(views)
		rowStart := -1
		for e := range g.entries {
			ent := &g.entries[e]
			if onlyInvalid && !invalid(ent.ts) {
				continue
			}
			removed, rewrite := ent.removed()
			if removed == 0 {
				continue
			}
			rep.CellsDeleted += int64(removed)
			if invalid(ent.ts) {
				rep.CellsOfInvalidTxns += int64(removed)
			}
			var value []byte
			if rewrite {
				st := len(arena)
				arena = ent.appendKept(arena)
				value = arena[st:len(arena):len(arena)]
				rep.BytesReclaimed += int64(len(ent.value) - len(value))
			} else {
				rep.BytesReclaimed += int64(len(rr.cur) + len(ent.value) + 8)
			}
			if dryRun {
				continue
			}
			if rowStart < 0 {
				rowStart = len(arena)
				arena = append(arena, rr.cur...)
			}
			row := arena[rowStart : rowStart+len(rr.cur) : rowStart+len(rr.cur)]
			if rewrite {
				b.Put(row, nil, ent.ts, value)
			} else {
				b.DeleteVersion(row, nil, ent.ts)
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

// gcRow is one row's versions as GC weighs them; reused row after row.
type gcRow struct {
	n       int // columns of the dictionary
	entries []gcEntry
	cells   []gcCell // the cells of every entry, entries[i] indexing here
	set     []bool
}

// gcEntry is one row version: a row delete marker, or a packed version
// whose cells are cells[first:first+count] of its gcRow.
type gcEntry struct {
	row          *gcRow
	ts           int64
	marker       bool
	full         bool // stops the walk, hides what is older
	value        []byte
	first, count int
	// candidate: a row delete marker or full version where some view's
	// walk stopped (G4); hides: a needed value older than it survives
	// (G5, row scope).
	candidate, hides bool
}

// gcCell is one cell of a row version.
type gcCell struct {
	idx    int
	val    []byte
	marker bool // a column delete marker
	// needed: the value some view reads (G3), or the column delete marker
	// that is some view's state of its column (G4) and hides a needed
	// value (G5, column scope).
	needed, candidate bool
}

// load parses the raw cells of one row (store order, newest first).
func (g *gcRow) load(cells []store.Cell) error {
	g.entries, g.cells = g.entries[:0], g.cells[:0]
	for _, c := range cells {
		e := gcEntry{row: g, ts: c.Timestamp, value: c.Value, first: len(g.cells)}
		switch c.Kind {
		case store.KindDeleteRow:
			e.marker = true
		case store.KindPut:
			var vr versionReader
			if err := vr.open(c.Value); err != nil {
				return err
			}
			e.full = vr.full
			for {
				idx, start, end, ok, err := vr.nextCell()
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				val := c.Value[start:end:end]
				if idx >= g.n {
					return fmt.Errorf("%w: column %d of a dictionary of %d", ErrCorrupt, idx, g.n)
				}
				g.cells = append(g.cells, gcCell{idx: idx, val: val, marker: val[0] == deleteColumn})
			}
			e.count = len(g.cells) - e.first
		default:
			return fmt.Errorf("%w: %s cell in a data table", ErrCorrupt, c.Kind)
		}
		g.entries = append(g.entries, e)
	}
	return nil
}

// markNeeded walks the row as each view reads it (resolvedRow.add): the
// newest visible cell of each column is needed when it is a value (G3),
// a candidate when it is a column delete marker (G4); the row delete
// marker or full version where a walk stops is a candidate (G4). A
// candidate is kept when a needed value older than it survives in its
// scope (G5).
func (g *gcRow) markNeeded(views []txn.Visibility) {
	if len(g.set) < g.n {
		g.set = make([]bool, g.n)
	}
	set := g.set[:g.n]
	for _, vis := range views {
		clear(set)
		nset := 0
		for e := range g.entries {
			ent := &g.entries[e]
			if !vis.IsVisible(ent.ts) {
				continue
			}
			if ent.marker {
				ent.candidate = true
				break
			}
			for k := ent.first; k < ent.first+ent.count; k++ {
				c := &g.cells[k]
				if set[c.idx] {
					continue
				}
				set[c.idx] = true
				nset++
				if c.marker {
					c.candidate = true
				} else {
					c.needed = true
				}
			}
			if ent.full {
				ent.candidate = true
				break
			}
			if nset == g.n {
				break
			}
		}
	}
	// G5. Entries are newest first: the last needed value of a column (or
	// of the row) is its oldest.
	rowOldest := int64(-1)
	colOldest := map[int]int64{}
	for e := range g.entries {
		ent := &g.entries[e]
		for k := ent.first; k < ent.first+ent.count; k++ {
			if c := &g.cells[k]; c.needed {
				rowOldest = ent.ts
				colOldest[c.idx] = ent.ts
			}
		}
	}
	for e := range g.entries {
		ent := &g.entries[e]
		ent.hides = ent.candidate && rowOldest >= 0 && rowOldest < ent.ts
		for k := ent.first; k < ent.first+ent.count; k++ {
			if c := &g.cells[k]; c.candidate {
				old, ok := colOldest[c.idx]
				c.needed = ok && old < ent.ts
			}
		}
	}
}

// neededCells counts the needed cells of a version.
func (e *gcEntry) neededCells() int {
	n := 0
	for k := e.first; k < e.first+e.count; k++ {
		if e.row.cells[k].needed {
			n++
		}
	}
	return n
}

// removed returns how many cells GC removes from the entry, and whether
// the entry is rewritten (some of it survives) rather than deleted.
func (e *gcEntry) removed() (int, bool) {
	if e.marker {
		if e.hides {
			return 0, false
		}
		return 1, false
	}
	needed := e.neededCells()
	switch {
	case needed == e.count:
		return 0, false
	case needed == 0 && !e.hides:
		return e.count, false
	}
	return e.count - needed, true
}

// appendKept appends the entry's value without its unneeded cells.
func (e *gcEntry) appendKept(dst []byte) []byte {
	var idx []int
	var vals [][]byte
	for k := e.first; k < e.first+e.count; k++ {
		if c := &e.row.cells[k]; c.needed {
			idx = append(idx, c.idx)
			vals = append(vals, c.val)
		}
	}
	return appendVersion(dst, e.full, idx, vals)
}
