package snapshot

// Storage format 1 of the data tables, and its migration. Format 1 kept
// one store cell per column (table "d/<dataset>/<partition>", column =
// column name, a column delete marker for a column the schema dropped);
// format 2 keeps one cell per row version (rowversion.go). Open migrates
// every dataset of format 1 before anything reads it:
//
//  1. the format 2 tables are cleared (what an interrupted migration left);
//  2. each row of the format 1 tables is read with every version, resolved
//     at each kept version (the walk below, format 1's reading rule), and
//     written as a row version at that version's id wherever it differs
//     from the kept version before (a row delete marker where the row went);
//  3. the data is synced, and the dataset's configuration records format 2
//     with the format 1 tables still to drop (one durable metadata write:
//     from here on the dataset reads format 2);
//  4. the format 1 tables are dropped, and the configuration says so.
//
// A crash before 3 leaves format 1 in force, and the next Open starts
// again; after it, the next Open only finishes 4. Cells of invalid
// transactions and versions no kept version sees are not carried over; the
// ids of expired versions stay in the metadata until GC finds none of
// their row versions (G7).

import (
	"bytes"
	"context"
	"slices"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// dataFormat is the storage format of the data tables this code writes,
// recorded in each dataset's configuration (datasetConfig.Format; absent
// means 1).
const dataFormat = 2

// migrateFormat1 brings a dataset of format 1 to format 2 (steps above).
// The caller holds the dataset exclusively (Open, before any use).
func (db *DB) migrateFormat1(ctx context.Context, ds *dataset) error {
	parts := ds.cfg.Partitions
	if ds.cfg.Format < dataFormat {
		for p := 0; p < parts; p++ {
			if err := db.st.DeleteRange(ctx, dataTable(ds.name, p), nil, nil); err != nil {
				return err
			}
		}
		db.logger.Info("migrating a dataset to storage format 2", "dataset", ds.name, "versions", len(ds.versions))
		// The column dictionary: every column of a kept version.
		var names []string
		for _, vi := range ds.versions {
			for _, c := range vi.Schema.Columns {
				if !slices.Contains(names, c.Name) {
					names = append(names, c.Name)
				}
			}
		}
		dict := newDictionary(names)
		var views []format1View
		for _, vi := range ds.versions {
			views = append(views, format1View{version: vi.Version, vis: db.txm.Visibility(ds.name, vi.Version)})
		}
		rows := int64(0)
		for p := 0; p < parts; p++ {
			n, err := db.migratePartition(ctx, format1Table(ds.name, p), dataTable(ds.name, p), dict, views)
			if err != nil {
				return err
			}
			rows += n
		}
		if err := db.st.Sync(ctx); err != nil {
			return err
		}
		ds.mu.Lock()
		ds.cfg.Columns = names
		ds.cfg.Format, ds.cfg.Format1Left = dataFormat, true
		err := db.putConfigLocked(ctx, ds)
		ds.mu.Unlock()
		if err != nil {
			return err
		}
		db.logger.Info("dataset migrated to storage format 2", "dataset", ds.name, "rows", rows)
	}
	if ds.cfg.Format1Left {
		for p := 0; p < parts; p++ {
			if err := db.st.DeleteRange(ctx, format1Table(ds.name, p), nil, nil); err != nil {
				return err
			}
		}
		ds.mu.Lock()
		ds.cfg.Format1Left = false
		err := db.putConfigLocked(ctx, ds)
		ds.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// format1View is a kept version as the migration resolves it.
type format1View struct {
	version int64
	vis     txn.Visibility
}

// migratePartition writes the rows of one format 1 table into a format 2
// table and returns how many rows it read. Each row is resolved at each
// kept version in turn and written as a run would have written it
// (run_put.go): nothing when unchanged, a delta of the changed cells, or
// the whole row when new or when its chain is long.
func (db *DB) migratePartition(ctx context.Context, from, to string, dict *dictionary, views []format1View) (int64, error) {
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
			res = resolveFormat1(rr.cells, v.vis, res[:0])
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

// visibleWalk walks the raw cells of one format 1 row, in store.S5 order (the row
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

// resolvedCol is one column of a format 1 row as visible at one version:
// the newest visible put not hidden by a visible delete marker.
type resolvedCol struct {
	name  []byte
	value []byte // cell encoding; aliases the cells
}

// resolveFormat1 appends the columns of one format 1 row visible at vis,
// in column name order, to dst. An empty result means the row does not
// exist at vis.
func resolveFormat1(cells []store.Cell, vis txn.Visibility, dst []resolvedCol) []resolvedCol {
	w := newVisibleWalk(cells, vis)
	for i, ok := w.next(); ok; i, ok = w.next() {
		if i >= 0 && cells[i].Kind == store.KindPut && !w.hidden(i) {
			dst = append(dst, resolvedCol{name: cells[i].Column, value: cells[i].Value})
		}
	}
	return dst
}
