package snapshot

import (
	"bytes"

	"github.com/snapstore/snapstore/store"
)

// rowReader groups the cells of a store.Iterator by row. The row and cells
// it returns are valid until the next call to next or seek.
type rowReader struct {
	it    store.Iterator
	has   bool // it is on a cell not yet returned
	done  bool
	row   []byte
	cells []store.Cell
	arena []byte
}

func newRowReader(it store.Iterator) *rowReader { return &rowReader{it: it} }

// seek positions the reader so that next returns the first row >= key.
func (rr *rowReader) seek(key []byte) {
	rr.it.SeekRow(key)
	rr.has, rr.done = false, false
}

// next reads the next row; false at the end or on error (see err).
func (rr *rowReader) next() bool {
	if rr.done {
		return false
	}
	if !rr.has {
		if !rr.it.Next() {
			rr.done = true
			return false
		}
	}
	rr.has = false
	c := rr.it.Cell()
	rr.arena = append(rr.arena[:0], c.Row...)
	rr.row = rr.arena[:len(c.Row):len(c.Row)]
	rr.cells = rr.cells[:0]
	for {
		rr.addCell(c)
		if !rr.it.Next() {
			rr.done = true
			break
		}
		c = rr.it.Cell()
		if !bytes.Equal(c.Row, rr.row) {
			rr.has = true
			break
		}
	}
	return true
}

func (rr *rowReader) addCell(c store.Cell) {
	s := len(rr.arena)
	rr.arena = append(rr.arena, c.Column...)
	rr.arena = append(rr.arena, c.Value...)
	col := rr.arena[s : s+len(c.Column) : s+len(c.Column)]
	val := rr.arena[s+len(c.Column) : len(rr.arena) : len(rr.arena)]
	if c.Value == nil {
		val = nil
	}
	rr.cells = append(rr.cells, store.Cell{Row: rr.row, Column: col, Timestamp: c.Timestamp, Kind: c.Kind, Value: val})
}

func (rr *rowReader) err() error { return rr.it.Err() }

func (rr *rowReader) close() error { return rr.it.Close() }
