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

// rowBuilder turns rows resolved at a version (rowState, by the dataset's
// column dictionary) into Rows or JSON of chosen schema columns. It is
// built once per version and column selection; a Row costs three slices
// and one buffer for the bytes of its values, the JSON nothing.
type rowBuilder struct {
	names   []string // the returned columns, schema order
	qname   [][]byte // names[j] as a JSON string and a colon
	outDict []int    // the dictionary index of each returned column
	keyDict []int    // the dictionary index of each key column, key order
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
	}
	return b
}

// build makes a Row whose values own their bytes. A column without a value
// (which cannot happen at a version, D1) is NULL.
func (b *rowBuilder) build(st *rowState) (Row, error) {
	row := Row{Columns: b.names, Values: make([]Value, len(b.outDict)), Key: make([]Value, len(b.keyDict))}
	buf := make([]byte, 0, len(st.buf))
	fill := func(dst []Value, dict []int) error {
		for j, d := range dict {
			p := st.value(d)
			if p == nil {
				continue
			}
			v, err := decodeColumnValue(p)
			if err != nil {
				return err
			}
			if v.Bytes != nil {
				s := len(buf)
				buf = append(buf, v.Bytes...)
				v.Bytes = buf[s:len(buf):len(buf)]
			}
			dst[j] = v
		}
		return nil
	}
	if err := fill(row.Values, b.outDict); err != nil {
		return Row{}, err
	}
	if err := fill(row.Key, b.keyDict); err != nil {
		return Row{}, err
	}
	return row, nil
}

// appendJSON appends the row as Row.AppendJSON does, without building it.
func (b *rowBuilder) appendJSON(dst []byte, st *rowState) ([]byte, error) {
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

// appendKeyJSON appends the row's key as a JSON array of values.
func (b *rowBuilder) appendKeyJSON(dst []byte, st *rowState) ([]byte, error) {
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
