package snapshot

// Storage format 2 of the data tables, and its migration to format 3
// (docs/storage-format.md lists every format). Formats 1 and 2 kept one
// store cell per column (table "d/<dataset>/<partition>", column = column
// name, a column delete marker for a column the schema dropped); format 3
// keeps one cell per row version (rowversion.go). A writer's Open, after
// the metadata is of format 2 (migrate.go), migrates every dataset whose
// row says format 2 before anything reads it:
//
//  1. the writer slot of the dataset is taken (W1), so that no other
//     writer runs it meanwhile, and the format 3 tables are cleared (what
//     an interrupted migration left);
//  2. each row of the column tables is read with every version, resolved
//     at each kept version (the walk below, format 2's reading rule), and
//     written as a row version at that version's id wherever it differs
//     from the kept version before (a row delete marker where the row went);
//  3. the data is synced, and one write of the dataset's row (D9) records
//     format 3, the column dictionary and the column tables still to drop,
//     and frees the slot: from here on the dataset reads format 3;
//  4. the column tables are dropped, and the row says so.
//
// A crash before 3 leaves format 2 in the row, and the next Open starts
// again; after it, the next Open only finishes 4. When every dataset is of
// format 3, the store records format 3 (metadata.go). Cells of invalid
// transactions and versions no kept version sees are not carried over.

import (
	"bytes"
	"context"
	"slices"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// formatColumnCells is the storage format whose data tables keep one cell
// per column (format 2, and format 1's data).
const formatColumnCells = 2

// migrateRows brings a dataset of format 2 to format 3 (steps above), and
// drops the column tables a migrated dataset still has. The caller is
// Open, before any use of the dataset.
func (db *DB) migrateRows(ctx context.Context, ds *dataset) error {
	if err := ds.acquire("migrate"); err != nil {
		return err
	}
	defer ds.release()
	ds.mu.Lock()
	st := ds.st.clone()
	kept := slices.Clone(ds.versions)
	ds.mu.Unlock()
	parts := st.Config.Partitions
	if st.Dropping != nil {
		return nil // the drop deletes the column tables too (drop.go)
	}
	if st.Format < metaFormat {
		now := db.opts.now()
		var err error
		st, err = db.writeRow(ctx, ds, func(st *rowState) error {
			if st.Format >= metaFormat {
				return errNoChange // another writer migrated it
			}
			return db.takeSlot(st, ds.name, "migrate", now)
		})
		if err != nil {
			return err
		}
		if st.Format >= metaFormat {
			return db.migrateRows(ctx, ds)
		}
		epoch := st.Slot.Epoch
		names, err := db.migrateData(ctx, ds, st, kept)
		if err == nil {
			st, err = db.writeRow(ctx, ds, func(st *rowState) error {
				if st.Format >= metaFormat {
					return errNoChange // this write landed
				}
				if err := db.holdsSlot(st, epoch); err != nil {
					return err
				}
				st.Format, st.ColumnTablesLeft = metaFormat, true
				st.Collected = nil // G10 speaks of row versions only
				st.Config.Columns = names
				releaseSlot(st)
				return nil
			})
		}
		if err != nil {
			if rerr := db.releaseAfter(ctx, ds, epoch); rerr != nil {
				db.logger.Warn("freeing the writer slot after a failed migration", "dataset", ds.name, "err", rerr)
			}
			return err
		}
		db.logger.Info("dataset migrated to storage format 3", "dataset", ds.name)
	}
	if st.ColumnTablesLeft {
		for p := 0; p < parts; p++ {
			if err := db.st.DeleteRange(ctx, columnTable(ds.name, p), nil, nil); err != nil {
				return err
			}
		}
		if _, err := db.writeRow(ctx, ds, func(st *rowState) error {
			if !st.ColumnTablesLeft {
				return errNoChange
			}
			st.ColumnTablesLeft = false
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// migrateData writes the row versions of every kept version of a dataset
// of format 2 (steps 1 and 2 above), syncs them, and returns the column
// dictionary.
func (db *DB) migrateData(ctx context.Context, ds *dataset, st rowState, kept []*VersionInfo) ([]string, error) {
	parts := st.Config.Partitions
	for p := 0; p < parts; p++ {
		if err := db.st.DeleteRange(ctx, dataTable(ds.name, p), nil, nil); err != nil {
			return nil, err
		}
	}
	db.logger.Info("migrating a dataset to storage format 3", "dataset", ds.name, "versions", len(kept))
	// The column dictionary: every column of a kept version.
	var names []string
	for _, vi := range kept {
		for _, c := range vi.Schema.Columns {
			if !slices.Contains(names, c.Name) {
				names = append(names, c.Name)
			}
		}
	}
	dict := newDictionary(names)
	var views []format2View
	for _, vi := range kept {
		views = append(views, format2View{version: vi.Version, vis: st.Txns.Visibility(vi.Version)})
	}
	rows := int64(0)
	for p := 0; p < parts; p++ {
		n, err := db.migratePartition(ctx, columnTable(ds.name, p), dataTable(ds.name, p), dict, views)
		if err != nil {
			return nil, err
		}
		rows += n
	}
	if err := db.st.Sync(ctx); err != nil {
		return nil, err
	}
	db.logger.Info("dataset data migrated", "dataset", ds.name, "rows", rows)
	return names, nil
}

// format2View is a kept version as the migration resolves it.
type format2View struct {
	version int64
	vis     txn.Visibility
}

// migratePartition writes the rows of one format 2 table into a format 3
// table and returns how many rows it read. Each row is resolved at each
// kept version in turn and written as a run would have written it
// (run_put.go): nothing when unchanged, a delta of the changed cells, or
// the whole row when new or when its chain is long.
func (db *DB) migratePartition(ctx context.Context, from, to string, dict *dictionary, views []format2View) (int64, error) {
	it, err := db.st.Scan(ctx, from, store.ScanOptions{})
	if err != nil {
		return 0, err
	}
	rr := newRowReader(it)
	defer rr.close()
	b := &store.Batch{Table: to}
	nd := len(dict.names)
	prev, cur := make([][]byte, nd), make([][]byte, nd)
	var arena, vals []byte
	var res []resolvedCol
	var cellIdx []int
	var cellVal [][]byte
	var n int64
	for rr.next() {
		n++
		clear(prev)
		chain := 0
		present := false
		for _, v := range views {
			res = resolveFormat2(rr.cells, v.vis, res[:0])
			if len(res) == 0 {
				if present {
					st := len(arena)
					arena = append(arena, rr.cur...)
					b.DeleteRow(arena[st:len(arena):len(arena)], v.version)
				}
				present = false
				clear(prev)
				continue
			}
			clear(cur)
			vals = vals[:0]
			for _, rc := range res {
				d, ok := dict.index[string(rc.name)]
				if !ok {
					continue // a column of no kept version's schema
				}
				cv, err := decodeCellValue(rc.value, false)
				if err != nil {
					return n, err
				}
				st := len(vals)
				vals = appendColumnValue(vals, cv)
				cur[d] = vals[st:len(vals):len(vals)]
			}
			full := !present || chain >= maxChain
			cellIdx, cellVal = cellIdx[:0], cellVal[:0]
			for d := range cur {
				switch {
				case cur[d] != nil && (full || !bytes.Equal(prev[d], cur[d])):
					cellIdx, cellVal = append(cellIdx, d), append(cellVal, cur[d])
				case cur[d] == nil && prev[d] != nil && !full:
					cellIdx, cellVal = append(cellIdx, d), append(cellVal, deleteColumnValue)
				}
			}
			if len(cellIdx) > 0 {
				st := len(arena)
				arena = append(arena, rr.cur...)
				row := arena[st:len(arena):len(arena)]
				vs := len(arena)
				arena = appendVersion(arena, full, cellIdx, cellVal)
				b.Put(row, nil, v.version, arena[vs:len(arena):len(arena)])
				if full {
					chain = 1
				} else {
					chain++
				}
			}
			present = true
			for d := range cur {
				prev[d] = append(prev[d][:0], cur[d]...)
				if cur[d] == nil {
					prev[d] = nil
				}
			}
		}
		if b.Len() >= batchSize || len(arena) >= batchBytes {
			if err := db.st.Apply(ctx, b); err != nil {
				return n, err
			}
			b.Reset()
			arena = arena[:0]
		}
	}
	if err := rr.err(); err != nil {
		return n, err
	}
	if err := db.st.Apply(ctx, b); err != nil {
		return n, err
	}
	return n, nil
}

// visibleWalk walks the raw cells of one format 2 row, in store.S5 order (the row
// delete markers, column "", first; then each column's versions newest
// first), at one visibility, a column at a time.
type visibleWalk struct {
	cells []store.Cell
	vis   txn.Visibility
	i     int // the first cell of the next column
	// rowDel is the index of the newest visible row delete marker, -1
	// when none is visible.
	rowDel int
}

func newVisibleWalk(cells []store.Cell, vis txn.Visibility) visibleWalk {
	w := visibleWalk{cells: cells, vis: vis, rowDel: -1}
	for ; w.i < len(cells) && len(cells[w.i].Column) == 0; w.i++ {
		c := &cells[w.i]
		if c.Kind == store.KindDeleteRow && vis.IsVisible(c.Timestamp) && (w.rowDel < 0 || c.Timestamp > cells[w.rowDel].Timestamp) {
			w.rowDel = w.i
		}
	}
	return w
}

// next moves to the next column and returns the index of its newest
// visible cell (a put or a column delete marker), or -1 when none of its
// versions is visible; ok is false after the last column.
func (w *visibleWalk) next() (idx int, ok bool) {
	if w.i >= len(w.cells) {
		return -1, false
	}
	col := w.cells[w.i].Column
	idx = -1
	for ; w.i < len(w.cells) && bytes.Equal(w.cells[w.i].Column, col); w.i++ {
		if idx < 0 && w.vis.IsVisible(w.cells[w.i].Timestamp) {
			idx = w.i
		}
	}
	return idx, true
}

// hidden reports whether the visible row delete marker hides cell idx
// (its timestamp is at or below the marker's).
func (w *visibleWalk) hidden(idx int) bool {
	return w.rowDel >= 0 && w.cells[idx].Timestamp <= w.cells[w.rowDel].Timestamp
}

// resolvedCol is one column of a format 2 row as visible at one version:
// the newest visible put not hidden by a visible delete marker.
type resolvedCol struct {
	name  []byte
	value []byte // cell encoding; aliases the cells
}

// resolveFormat2 appends the columns of one format 2 row visible at vis,
// in column name order, to dst. An empty result means the row does not
// exist at vis.
func resolveFormat2(cells []store.Cell, vis txn.Visibility, dst []resolvedCol) []resolvedCol {
	w := newVisibleWalk(cells, vis)
	for i, ok := w.next(); ok; i, ok = w.next() {
		if i >= 0 && cells[i].Kind == store.KindPut && !w.hidden(i) {
			dst = append(dst, resolvedCol{name: cells[i].Column, value: cells[i].Value})
		}
	}
	return dst
}
