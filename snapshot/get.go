package snapshot

import (
	"context"
	"fmt"
	"sync"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// Get reads one row. columns selects columns by name (nil means all).
// ErrRowNotFound when absent at the pinned version.
func (r *Reader) Get(ctx context.Context, key []Value, columns []string) (Row, error) {
	if err := r.usable(); err != nil {
		return Row{}, err
	}
	rb := r.allRB
	if columns != nil {
		idx, err := r.columnSelection(columns)
		if err != nil {
			return Row{}, err
		}
		rb = newRowBuilder(r.info.Schema, r.dict, r.keyIdx, idx)
	}
	g, err := r.getRow(ctx, key)
	if err != nil {
		return Row{}, err
	}
	defer g.release()
	return rb.build(&g.st, nil)
}

// GetJSON reads one row as Get does and appends it to dst as two members
// of a JSON object, without building a Row: "key":[...],"row":{...}, the
// key as its values' JSON array and the row as Row.AppendJSON writes it.
// ErrRowNotFound when absent at the pinned version.
func (r *Reader) GetJSON(ctx context.Context, dst []byte, key []Value, columns []string) ([]byte, error) {
	if err := r.usable(); err != nil {
		return dst, err
	}
	rb := r.allRB
	if columns != nil {
		idx, err := r.columnSelection(columns)
		if err != nil {
			return dst, err
		}
		rb = newRowBuilder(r.info.Schema, r.dict, r.keyIdx, idx)
	}
	g, err := r.getRow(ctx, key)
	if err != nil {
		return dst, err
	}
	defer g.release()
	dst = append(dst, `"key":`...)
	if dst, err = rb.appendKeyJSON(dst, &g.st); err != nil {
		return dst, err
	}
	dst = append(dst, `,"row":`...)
	return rb.appendJSON(dst, &g.st)
}

// rowGet is the reusable memory of one point read: the row resolved, and
// visit, bound once, which the store calls with each raw cell.
type rowGet struct {
	st    resolvedRow
	vis   txn.Visibility
	err   error
	key   []byte
	visit func(store.Cell) bool
}

var rowGets = sync.Pool{New: func() any {
	g := new(rowGet)
	g.visit = func(c store.Cell) bool {
		done, err := g.st.add(c, g.vis)
		if err != nil {
			g.err = err
			return false
		}
		return !done
	}
	return g
}}

// maxPooledRowBytes bounds the memory a pooled rowGet keeps after a read
// of a wide row.
const maxPooledRowBytes = 64 << 10

func (g *rowGet) release() {
	g.vis = txn.Visibility{}
	if cap(g.st.buf) <= maxPooledRowBytes {
		rowGets.Put(g)
	}
}

// getRow resolves the row of key at the pinned version with one store
// read (VisitRow, which stops at the end of the row's chain) in each
// partition where the row may be (rowTables). The caller
// releases the result. ErrRowNotFound.
func (r *Reader) getRow(ctx context.Context, key []Value) (*rowGet, error) {
	g := rowGets.Get().(*rowGet)
	var err error
	if g.key, err = r.appendKey(g.key[:0], key); err != nil {
		g.release()
		return nil, err
	}
	tables, err := r.rowTables(g.key, key)
	if err != nil {
		g.release()
		return nil, err
	}
	g.vis = r.vis
	for _, t := range tables {
		g.err = nil
		g.st.reset(r.n)
		if err := r.db.st.VisitRow(ctx, t, g.key, r.opts, g.visit); err != nil {
			g.release()
			return nil, fmt.Errorf("snapshot: reading a row of %s version %d: %w", r.ds.name, r.info.Version, err)
		}
		if g.err != nil {
			err := g.err
			g.release()
			return nil, fmt.Errorf("snapshot: reading a row of %s version %d: %w", r.ds.name, r.info.Version, err)
		}
		if g.st.present() {
			break
		}
	}
	if !g.st.present() {
		g.release()
		where := r.ds.name
		if r.table != "" {
			where = fmt.Sprintf("table %s of %s", r.table, r.ds.name)
		}
		return nil, fmt.Errorf("%w: no key %s in %s at version %d", ErrRowNotFound, FormatKey(r.info.Schema.Key, key), where, r.info.Version)
	}
	return g, nil
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
