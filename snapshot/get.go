package snapshot

import (
	"context"
	"fmt"
)

// Get reads one row. columns selects columns by name (nil means all).
// ErrRowNotFound when absent at the pinned version.
func (r *Reader) Get(ctx context.Context, key []Value, columns []string) (Row, error) {
	if err := r.usable(); err != nil {
		return Row{}, err
	}
	rk, err := r.encodeKeyPrefix(key, true)
	if err != nil {
		return Row{}, err
	}
	filter, idx, err := r.columnSelection(columns)
	if err != nil {
		return Row{}, err
	}
	o := r.opts
	o.Columns = filter
	tables, err := r.rowTables(rk, key)
	if err != nil {
		return Row{}, err
	}
	var buf [16]resolvedCol
	res := buf[:0]
	for _, t := range tables {
		cells, err := r.db.st.Get(ctx, t, rk, o)
		if err != nil {
			return Row{}, fmt.Errorf("snapshot: reading a row of %s version %d: %w", r.ds.name, r.info.Version, err)
		}
		if res = resolve(cells, r.vis, res); len(res) > 0 {
			break
		}
	}
	if len(res) == 0 {
		return Row{}, fmt.Errorf("%w: %s version %d", ErrRowNotFound, r.ds.name, r.info.Version)
	}
	rb := r.allRB
	if columns != nil {
		rb = newRowBuilder(r.info.Schema, r.keyIdx, idx)
	}
	return rb.build(res)
}

// rowTables returns the data tables where the row of encoded key rk (key
// its values) may be: its partition's, or every partition's when the
// dataset places rows by columns that are not all key columns
// (partition_key.go).
func (r *Reader) rowTables(rk []byte, key []Value) ([]string, error) {
	if r.pk == nil {
		p := partitionOf(rk, r.parts)
		return r.tables[p : p+1], nil
	}
	p, ok, err := keyPartition(r.info.Schema, r.pk, key, r.parts)
	switch {
	case err != nil:
		return nil, err
	case ok:
		return r.tables[p : p+1], nil
	}
	return r.tables, nil
}
