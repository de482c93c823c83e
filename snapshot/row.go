package snapshot

import (
	"bytes"
	"slices"
	"strings"
)

// Row is one row as read.
type Row struct {
	// Key holds the key column values in key order.
	Key []Value
	// Columns names the returned columns, in schema order. The slice may be
	// shared by the rows of one read: do not modify it.
	Columns []string
	// Values aligns with Columns.
	Values []Value
}

// rowBuilder turns resolved columns into Rows of chosen schema columns.
// It is built once per read and costs, per row, three slices and one
// buffer for the bytes of the values.
type rowBuilder struct {
	names  []string
	bnames [][]byte // names sorted, as bytes
	slot   []int    // bnames[i] goes to output slot[i] (-1: not returned)
	keyAt  []int    // bnames[i] is key column keyAt[i] (-1: not a key column)
	n, nk  int
}

func newRowBuilder(s Schema, keyIdx, idx []int) *rowBuilder {
	b := &rowBuilder{n: len(idx), nk: len(keyIdx)}
	type ent struct {
		name      string
		slot, key int
	}
	var ents []ent
	for i, c := range s.Columns {
		e := ent{name: c.Name, slot: -1, key: -1}
		for j, x := range idx {
			if x == i {
				e.slot = j
			}
		}
		for j, x := range keyIdx {
			if x == i {
				e.key = j
			}
		}
		if e.slot >= 0 || e.key >= 0 {
			ents = append(ents, e)
		}
	}
	slices.SortFunc(ents, func(a, b ent) int { return strings.Compare(a.name, b.name) })
	for _, e := range ents {
		b.bnames = append(b.bnames, []byte(e.name))
		b.slot = append(b.slot, e.slot)
		b.keyAt = append(b.keyAt, e.key)
	}
	b.names = make([]string, len(idx))
	for j, x := range idx {
		b.names[j] = s.Columns[x].Name
	}
	return b
}

// build makes a Row; columns without a cell (a column added to the schema
// that has no value in this row cannot happen at a version, D1) are NULL.
func (b *rowBuilder) build(res []resolvedCol) (Row, error) {
	row := Row{Columns: b.names, Values: make([]Value, b.n), Key: make([]Value, b.nk)}
	size := 0
	for _, r := range res {
		size += len(r.value)
	}
	buf := make([]byte, 0, size)
	ri := 0
	for i, name := range b.bnames {
		for ri < len(res) && bytes.Compare(res[ri].name, name) < 0 {
			ri++
		}
		if ri == len(res) || !bytes.Equal(res[ri].name, name) {
			continue
		}
		v, err := decodeCellValue(res[ri].value, false)
		if err != nil {
			return Row{}, err
		}
		if v.Bytes != nil {
			st := len(buf)
			buf = append(buf, v.Bytes...)
			v.Bytes = buf[st:len(buf):len(buf)]
		}
		if b.slot[i] >= 0 {
			row.Values[b.slot[i]] = v
		}
		if b.keyAt[i] >= 0 {
			row.Key[b.keyAt[i]] = v
		}
	}
	return row, nil
}
