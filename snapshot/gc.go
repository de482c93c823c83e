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
	columns := len(ds.cfg.Columns)
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
			b.DeleteVersion(versionKey(name, v), colDigest, 0)
		}
		b.Put(datasetKey(name), colExp, 0, encodeIDs(allExpired))
		if err := db.st.Apply(ctx, b); err != nil {
			return rep, fmt.Errorf("snapshot: expiring versions of %s: %w", name, err)
		}
	}

	live := make([]bool, len(allExpired)) // expired versions with cells left
	for p := 0; p < parts; p++ {
		if err := db.gcPartition(ctx, dataTable(name, p), columns, views, dryRun, allExpired, live, &rep); err != nil {
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

// gcPartition walks every row version of one partition table, row by
// row, and deletes the cells no view needs (G3-G5). A cell is one column
// of a row version (rowversion.go: a value or a column delete marker) or a
// row delete marker; a row version keeps only its needed cells (it is
// rewritten without the others, or deleted when none is left). A full row
// version also hides everything older (a read's walk stops there), so it
// stays, even without cells, while something older survives, as a row
// delete marker does (G5). The changes of one row are one batch, applied
// atomically (a store.Batch on Pebble, one row mutation on HBase).
func (db *DB) gcPartition(ctx context.Context, table string, n int, views []txn.Visibility, dryRun bool, expired []int64, live []bool, rep *GCReport) error {
	// Every version of every row: GC must see them all.
	it, err := db.st.Scan(ctx, table, store.ScanOptions{})
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
			if ent.keep() {
				if j, found := slices.BinarySearch(expired, ent.ts); found {
					live[j] = true
				}
			}
			removed, rewrite := ent.removed()
			if removed == 0 {
				continue
			}
			rep.CellsDeleted += int64(removed)
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

// markNeeded walks the row as each view reads it (rowState.add): the
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

// keep reports whether anything of the entry survives.
func (e *gcEntry) keep() bool { return e.hides || e.neededCells() > 0 }

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
