package storetest

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/snapstore/snapstore/store"
)

// model is an in-memory reference implementation of one table's semantics,
// used by the randomized subtest: a set of cells keyed by coordinate.
type model struct {
	cells map[coord]store.Cell
}

type coord struct {
	row, col string
	ts       int64
}

func newModel() *model { return &model{cells: make(map[coord]store.Cell)} }

// apply applies a valid batch's mutations in order (store.S4: a put replaces the
// coordinate whatever its kind).
func (m *model) apply(b *store.Batch) {
	for _, mu := range b.Mutations {
		c := mu.Cell
		k := coord{string(c.Row), string(c.Column), c.Timestamp}
		switch mu.Op {
		case store.OpPut:
			c = cloneCell(c)
			if c.Kind != store.KindPut {
				c.Value = nil
			}
			m.cells[k] = c
		case store.OpDeleteVersion:
			delete(m.cells, k)
		}
	}
}

// sortedCoords returns the model's coordinates in a fixed order, so that a
// seeded test picks the same ones on every run.
func (m *model) sortedCoords() []coord {
	ks := make([]coord, 0, len(m.cells))
	for k := range m.cells {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b coord) int {
		return cmp.Or(cmp.Compare(a.row, b.row), cmp.Compare(a.col, b.col), cmp.Compare(a.ts, b.ts))
	})
	return ks
}

// newest returns the newest version of a column of a row, if any.
func (m *model) newest(row, col string) (store.Cell, bool) {
	var best store.Cell
	found := false
	for k, c := range m.cells {
		if k.row == row && k.col == col && (!found || k.ts > best.Timestamp) {
			best, found = c, true
		}
	}
	return best, found
}

// check decides a store.Check as store.S7 says.
func (m *model) check(row string, c store.Check) bool {
	cell, ok := m.newest(row, string(c.Column))
	if c.Absent() {
		return !ok
	}
	return ok && cell.Kind == store.KindPut && bytes.Equal(cell.Value, c.Value)
}

// deleteRange removes every cell of the rows in [start, end).
func (m *model) deleteRange(start, end []byte) {
	for k := range m.cells {
		if inRows([]byte(k.row), start, end) {
			delete(m.cells, k)
		}
	}
}

// read returns the cells of rows in [start, end) selected by opts (already
// normalized), in store.S5 order: time range, then the column filter (row markers
// always pass), then MaxVersions per (row, column).
func (m *model) read(start, end []byte, opts store.ReadOptions) []store.Cell {
	var all []store.Cell
	for _, c := range m.cells {
		if !inRows(c.Row, start, end) || !inTimeRange(c.Timestamp, opts.TimeRange) {
			continue
		}
		if len(opts.Columns) > 0 && c.Kind != store.KindDeleteRow && !slices.ContainsFunc(opts.Columns, func(col []byte) bool { return bytes.Equal(col, c.Column) }) {
			continue
		}
		all = append(all, c)
	}
	slices.SortFunc(all, compareS5)
	if opts.MaxVersions <= 0 {
		return all
	}
	out := all[:0]
	n := 0
	for i, c := range all {
		if i == 0 || !bytes.Equal(c.Row, all[i-1].Row) || !bytes.Equal(c.Column, all[i-1].Column) {
			n = 0
		}
		if n < opts.MaxVersions {
			out = append(out, c)
		}
		n++
	}
	return out
}

// inRows reports whether row is in [start, end); nil bounds are open.
func inRows(row, start, end []byte) bool {
	return (start == nil || bytes.Compare(row, start) >= 0) && (end == nil || bytes.Compare(row, end) < 0)
}

// inTimeRange applies [Min, Max), with Max == store.MaxTimestamp meaning no
// upper bound (HBase's allTime), as store.TimeRange documents.
func inTimeRange(ts int64, r store.TimeRange) bool {
	return ts >= r.Min && (ts < r.Max || r.Max == store.MaxTimestamp)
}

// compareS5 orders cells by row, column, then timestamp descending.
func compareS5(a, b store.Cell) int {
	if c := bytes.Compare(a.Row, b.Row); c != 0 {
		return c
	}
	if c := bytes.Compare(a.Column, b.Column); c != 0 {
		return c
	}
	return cmp.Compare(b.Timestamp, a.Timestamp)
}

// cloneCell deep-copies c, keeping nil as nil.
func cloneCell(c store.Cell) store.Cell {
	c.Row = bytes.Clone(c.Row)
	c.Column = bytes.Clone(c.Column)
	if c.Value != nil {
		c.Value = bytes.Clone(c.Value)
	}
	return c
}

// formatCell renders a cell on one line, bytes quoted, as test output.
func formatCell(c store.Cell) string {
	s := fmt.Sprintf("%q/%q@%d %s", c.Row, c.Column, c.Timestamp, c.Kind)
	if c.Kind == store.KindPut {
		s += fmt.Sprintf(" %q", c.Value)
	}
	return s
}

func formatCells(cells []store.Cell) string {
	var sb strings.Builder
	for _, c := range cells {
		sb.WriteString("\n\t")
		sb.WriteString(formatCell(c))
	}
	if len(cells) == 0 {
		sb.WriteString(" (none)")
	}
	return sb.String()
}

// sameCell compares two cells: coordinates and kind exactly, values by
// content for puts; a marker must carry a nil Value.
func sameCell(got, want store.Cell) bool {
	if !bytes.Equal(got.Row, want.Row) || !bytes.Equal(got.Column, want.Column) || got.Timestamp != want.Timestamp || got.Kind != want.Kind {
		return false
	}
	if want.Kind == store.KindPut {
		return bytes.Equal(got.Value, want.Value)
	}
	return got.Value == nil
}
