package snapshot

import (
	"bytes"
	"context"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
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

// mergedRows merges the rows of several rowReaders (one per partition) in
// row key order. Rows never repeat across partitions.
type mergedRows struct {
	srcs []*rowReader
	live []bool
	cur  int // index of the source returned last, -1 before the first
	init bool
}

func newMergedRows(srcs []*rowReader) *mergedRows {
	return &mergedRows{srcs: srcs, live: make([]bool, len(srcs)), cur: -1}
}

func (m *mergedRows) next() bool {
	if !m.init {
		m.init = true
		for i, s := range m.srcs {
			m.live[i] = s.next()
		}
	} else if m.cur >= 0 {
		m.live[m.cur] = m.srcs[m.cur].next()
	}
	m.cur = -1
	for i, s := range m.srcs {
		if m.live[i] && (m.cur < 0 || bytes.Compare(s.row, m.srcs[m.cur].row) < 0) {
			m.cur = i
		}
	}
	return m.cur >= 0
}

func (m *mergedRows) row() []byte         { return m.srcs[m.cur].row }
func (m *mergedRows) cells() []store.Cell { return m.srcs[m.cur].cells }

func (m *mergedRows) err() error {
	for _, s := range m.srcs {
		if err := s.err(); err != nil {
			return err
		}
	}
	return nil
}

func (m *mergedRows) close() error {
	var first error
	for _, s := range m.srcs {
		if err := s.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// openMerged opens a scan of [start, end) over every partition table.
func openMerged(ctx context.Context, st store.Store, dataset string, parts int, opts store.ScanOptions) (*mergedRows, error) {
	srcs := make([]*rowReader, 0, parts)
	for p := 0; p < parts; p++ {
		it, err := st.Scan(ctx, dataTable(dataset, p), opts)
		if err != nil {
			for _, s := range srcs {
				s.close()
			}
			return nil, err
		}
		srcs = append(srcs, newRowReader(it))
	}
	return newMergedRows(srcs), nil
}

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
