package snapshot

// The visibility rule of txn (txn.V2: which cell versions a view sees;
// txn.V3: the newest visible version of a column wins, and a visible delete
// marker hides the visible puts at or below it) applied to the raw cells of
// one row. visibleWalk is its one implementation: reads, runs and diffs
// resolve rows with it (resolve), GC decides with it which cells some view
// needs (gc.go, markNeeded).

import (
	"bytes"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// visibleWalk walks the raw cells of one row, in store.S5 order (the row
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

// resolvedCol is one column of a row as visible at one version: the
// newest visible put not hidden by a visible delete marker.
type resolvedCol struct {
	name  []byte
	value []byte // cell encoding; aliases the cells
}

// resolve appends the columns of one row visible at vis, in column name
// order, to dst. An empty result means the row does not exist at vis.
func resolve(cells []store.Cell, vis txn.Visibility, dst []resolvedCol) []resolvedCol {
	w := newVisibleWalk(cells, vis)
	for i, ok := w.next(); ok; i, ok = w.next() {
		if i >= 0 && cells[i].Kind == store.KindPut && !w.hidden(i) {
			dst = append(dst, resolvedCol{name: cells[i].Column, value: cells[i].Value})
		}
	}
	return dst
}

// readOpts returns the store read options that find the newest visible
// version of every column at vis: versions up to the read pointer, and
// enough of them to step over the excluded ones.
func readOpts(vis txn.Visibility) store.ReadOptions {
	return store.ReadOptions{
		TimeRange:   store.TimeRange{Min: 0, Max: vis.ReadPointer + 1},
		MaxVersions: 1 + vis.ExcludedAtOrBelow(vis.ReadPointer),
	}
}
