package snapshot

import (
	"bytes"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// resolvedCol is one column of a row as visible at one version: the
// newest visible put not hidden by a visible delete marker (txn V2, V3).
type resolvedCol struct {
	name  []byte
	value []byte // cell encoding; aliases the cells
}

// resolve applies the visibility rule to the raw cells of one row (S5
// order) and appends the visible columns, in column name order, to dst.
// An empty result means the row does not exist at vis.
func resolve(cells []store.Cell, vis txn.Visibility, dst []resolvedCol) []resolvedCol {
	rowDel := int64(-1)
	i := 0
	for ; i < len(cells) && len(cells[i].Column) == 0; i++ {
		c := &cells[i]
		if c.Kind == store.KindDeleteRow && c.Timestamp > rowDel && vis.IsVisible(c.Timestamp) {
			rowDel = c.Timestamp
		}
	}
	for i < len(cells) {
		col := cells[i].Column
		found := false
		for ; i < len(cells) && bytes.Equal(cells[i].Column, col); i++ {
			c := &cells[i]
			if found || !vis.IsVisible(c.Timestamp) {
				continue
			}
			found = true
			if c.Kind == store.KindPut && c.Timestamp > rowDel {
				dst = append(dst, resolvedCol{name: c.Column, value: c.Value})
			}
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
