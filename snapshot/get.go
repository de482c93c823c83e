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
	cells, err := r.db.st.Get(ctx, r.tables[partitionOf(rk, r.parts)], rk, o)
	if err != nil {
		return Row{}, fmt.Errorf("snapshot: reading a row of %s version %d: %w", r.ds.name, r.info.Version, err)
	}
	var buf [16]resolvedCol
	res := resolve(cells, r.vis, buf[:0])
	if len(res) == 0 {
		return Row{}, fmt.Errorf("%w: %s version %d", ErrRowNotFound, r.ds.name, r.info.Version)
	}
	rb := r.allRB
	if columns != nil {
		rb = newRowBuilder(r.info.Schema, r.keyIdx, idx)
	}
	return rb.build(res)
}
