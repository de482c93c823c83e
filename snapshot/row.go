package snapshot

import (
	"github.com/snapstore/snapstore/internal/jsonstr"
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

// rowBuilder turns rows resolved at a version (resolvedRow, by the dataset's
// column dictionary) into Rows, JSON or values of chosen schema columns.
// It is built once per version and column selection; a Row costs its
// values and a buffer for their bytes (carved from slabs in a scan:
// rowAlloc), the JSON and the values borrowing st's bytes nothing.
type rowBuilder struct {
	names   []string // the returned columns, schema order
	qname   [][]byte // names[j] as a JSON string and a colon
	outDict []int    // the dictionary index of each returned column
	keyDict []int    // the dictionary index of each key column, key order
	keySlot []int    // the returned column each key column is, -1 when not returned
}

// newRowBuilder returns the builder of the schema columns idx (schema
// indexes) of rows of schema s, whose key columns are keyIdx; dict maps
// schema indexes to dictionary indexes.
func newRowBuilder(s Schema, dict, keyIdx, idx []int) *rowBuilder {
	b := &rowBuilder{names: make([]string, len(idx)), qname: make([][]byte, len(idx))}
	for j, x := range idx {
		b.names[j] = s.Columns[x].Name
		b.qname[j] = append(jsonstr.Append(nil, s.Columns[x].Name), ':')
		b.outDict = append(b.outDict, dict[x])
	}
	for _, x := range keyIdx {
		b.keyDict = append(b.keyDict, dict[x])
		slot := -1
		for j, y := range idx {
			if y == x {
				slot = j
			}
		}
		b.keySlot = append(b.keySlot, slot)
	}
	return b
}

// build makes a Row whose values own their bytes: the values (Values and
// Key share one array) and their bytes, carved from a's slabs when a is
// not nil (a scan's rows), else two allocations. A column without a value
// (which cannot happen at a version, D1) is NULL.
func (b *rowBuilder) build(st *resolvedRow, a *rowAlloc) (Row, error) {
	n := len(b.outDict)
	vals := a.values(n + len(b.keyDict))
	row := Row{Columns: b.names, Values: vals[:n:n], Key: vals[n:]}
	size := 0
	for _, d := range b.outDict {
		size += len(st.value(d))
	}
	for j, d := range b.keyDict {
		if b.keySlot[j] < 0 {
			size += len(st.value(d))
		}
	}
	buf := a.bytes(size)
	decode := func(d int) (Value, error) {
		p := st.value(d)
		if p == nil {
			return Value{}, nil
		}
		v, err := decodeColumnValue(p)
		if err != nil {
			return Value{}, err
		}
		if v.Bytes != nil {
			s := len(buf)
			buf = append(buf, v.Bytes...)
			v.Bytes = buf[s:len(buf):len(buf)]
		}
		return v, nil
	}
	var err error
	for j, d := range b.outDict {
		if row.Values[j], err = decode(d); err != nil {
			return Row{}, err
		}
	}
	for j, d := range b.keyDict {
		if k := b.keySlot[j]; k >= 0 {
			row.Key[j] = row.Values[k]
		} else if row.Key[j], err = decode(d); err != nil {
			return Row{}, err
		}
	}
	return row, nil
}

// rowAlloc hands out the memory of the rows one reader builds in turn
// from slabs of several rows, so that a scan allocates once per slab
// rather than twice per row. A row keeps its slab alive, so a caller that
// keeps one row keeps at most a slab's worth of memory; rows never share
// a value.
type rowAlloc struct {
	vals []Value
	buf  []byte
}

const (
	slabRows  = 64       // rows' values per slab of Values
	slabBytes = 32 << 10 // bytes per slab of value bytes
)

// values returns n zero Values; a nil rowAlloc allocates them alone.
func (a *rowAlloc) values(n int) []Value {
	if a == nil {
		return make([]Value, n)
	}
	if cap(a.vals)-len(a.vals) < n {
		a.vals = make([]Value, 0, n*slabRows)
	}
	s := len(a.vals)
	a.vals = a.vals[:s+n]
	return a.vals[s : s+n : s+n]
}

// bytes returns an empty buffer of capacity size, which appends fill
// without growing it; a nil rowAlloc allocates it alone.
func (a *rowAlloc) bytes(size int) []byte {
	if a == nil || size > slabBytes/4 {
		return make([]byte, 0, size)
	}
	if cap(a.buf)-len(a.buf) < size {
		a.buf = make([]byte, 0, slabBytes)
	}
	s := len(a.buf)
	a.buf = a.buf[:s+size]
	return a.buf[s : s : s+size]
}

// appendJSON appends the row as Row.AppendJSON does, without building it.
func (b *rowBuilder) appendJSON(dst []byte, st *resolvedRow) ([]byte, error) {
	dst = append(dst, '{')
	for j, d := range b.outDict {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, b.qname[j]...)
		var v Value
		if p := st.value(d); p != nil {
			var err error
			if v, err = decodeColumnValue(p); err != nil {
				return dst, err
			}
		}
		dst = v.AppendJSON(dst)
	}
	return append(dst, '}'), nil
}

// appendValues appends the row's values in the order of names; their
// Bytes point into st, valid until st moves on.
func (b *rowBuilder) appendValues(dst []Value, st *resolvedRow) ([]Value, error) {
	for _, d := range b.outDict {
		var v Value
		if p := st.value(d); p != nil {
			var err error
			if v, err = decodeColumnValue(p); err != nil {
				return dst, err
			}
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// appendKeyJSON appends the row's key as a JSON array of values.
func (b *rowBuilder) appendKeyJSON(dst []byte, st *resolvedRow) ([]byte, error) {
	dst = append(dst, '[')
	for j, d := range b.keyDict {
		if j > 0 {
			dst = append(dst, ',')
		}
		var v Value
		if p := st.value(d); p != nil {
			var err error
			if v, err = decodeColumnValue(p); err != nil {
				return dst, err
			}
		}
		dst = v.AppendJSON(dst)
	}
	return append(dst, ']'), nil
}
