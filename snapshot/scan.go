package snapshot

import (
	"bytes"
	"context"
	"fmt"

	"github.com/snapstore/snapstore/store"
)

// ScanOptions select rows of an ordered scan. Start, End and Prefix are key
// prefixes (the first n key columns).
type ScanOptions struct {
	Start []Value // first key included
	End   []Value // first key excluded
	// Prefix restricts the scan to keys starting with these values.
	Prefix []Value
	// Columns selects columns by name; nil means all.
	Columns []string
	// Limit is the most rows returned; 0 means no limit.
	Limit int
	// PageToken continues a previous scan of the same dataset and version
	// (pagetoken.go); ErrBadPageToken for a token that does not decode or
	// was made at another dataset or version than the reader's. Start,
	// End and Prefix still bound the scan.
	PageToken string
}

// RowIterator walks rows in row key order. Not safe for concurrent use;
// must be closed.
type RowIterator interface {
	// Next advances to the next row; false at the end, at the limit, or
	// on error (see Err).
	Next() bool
	// Row returns the current row; its Values own their bytes.
	Row() Row
	// AppendRowJSON appends the current row as Row.AppendJSON would,
	// without building it.
	AppendRowJSON(dst []byte) ([]byte, error)
	// Columns names the values of every row of the scan, in schema order
	// (Row.Columns, shared: do not modify it).
	Columns() []string
	// AppendValues appends the current row's values, aligned with
	// Columns, to dst without building the Row: a value's Bytes point
	// into the scan's memory and are valid only until the next call to
	// Next (a caller that keeps them copies them, or calls Row).
	AppendValues(dst []Value) ([]Value, error)
	// NextPageToken returns a token resuming after the last row returned
	// when the scan stopped at its limit with rows left, or "" when the
	// range is exhausted.
	NextPageToken() string
	// Err returns the error that stopped the scan, if any.
	Err() error
	// Close releases the scan and returns Err.
	Close() error
}

// Scan starts an ordered scan at the pinned version.
func (r *Reader) Scan(ctx context.Context, opts ScanOptions) (RowIterator, error) {
	if err := r.usable(); err != nil {
		return nil, err
	}
	if opts.Limit < 0 {
		return nil, fmt.Errorf("%w: negative limit", ErrInvalidArgument)
	}
	var start, end []byte
	if opts.Start != nil {
		k, err := r.encodeKeyPrefix(opts.Start, false)
		if err != nil {
			return nil, err
		}
		start = k
	}
	if opts.End != nil {
		k, err := r.encodeKeyPrefix(opts.End, false)
		if err != nil {
			return nil, err
		}
		end = k
	}
	if len(opts.Prefix) > 0 {
		k, err := r.encodeKeyPrefix(opts.Prefix, false)
		if err != nil {
			return nil, err
		}
		if bytes.Compare(k, start) > 0 {
			start = k
		}
		if pe := prefixEnd(k); end == nil || bytes.Compare(pe, end) < 0 {
			end = pe
		}
	}
	if opts.PageToken != "" {
		t, err := decodePageToken(opts.PageToken)
		if err != nil {
			return nil, err
		}
		if t.dataset != r.ds.name {
			return nil, fmt.Errorf("%w: not a page token of dataset %q", ErrBadPageToken, r.ds.name)
		}
		if t.table != r.table {
			return nil, fmt.Errorf("%w: not a page token of table %q of dataset %q", ErrBadPageToken, r.table, r.ds.name)
		}
		if t.version != r.info.Version {
			return nil, fmt.Errorf("%w: token is for version %d, the reader is at %d", ErrBadPageToken, t.version, r.info.Version)
		}
		if !isRowKey(t.lastKey, len(r.info.Schema.Key)) {
			return nil, fmt.Errorf("%w: malformed", ErrBadPageToken)
		}
		after := append(append([]byte{}, t.lastKey...), 0)
		if bytes.Compare(after, start) > 0 {
			start = after
		}
		r.tokens.continued(opts.PageToken)
	}
	idx, err := r.columnSelection(opts.Columns)
	if err != nil {
		return nil, err
	}
	rb := r.allRB
	if opts.Columns != nil {
		rb = newRowBuilder(r.info.Schema, r.dict, r.keyIdx, idx)
	}
	so := store.ScanOptions{ReadOptions: r.opts, Start: start, End: end}
	if end != nil && start != nil && bytes.Compare(start, end) >= 0 {
		return &rowIter{r: r, rb: rb, exhausted: true}, nil
	}
	m, err := openPartitions(ctx, r.db.st, r.tables, so, func(it store.Iterator) *rowCursor {
		return newRowCursor(it, r.vis, r.n)
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot: scanning %s version %d: %w", r.ds.name, r.info.Version, err)
	}
	return &rowIter{r: r, m: m, rb: rb, limit: opts.Limit}, nil
}

// rowIter implements RowIterator over the merged partitions. A row is
// built only when Row asks for it.
type rowIter struct {
	r         *Reader
	m         *mergedRows[*rowCursor]
	rb        *rowBuilder
	alloc     rowAlloc // the memory of the rows built
	limit     int
	n         int
	row       Row
	built     bool // row holds the current row
	lastKey   []byte
	err       error
	exhausted bool // the range has no more rows
	more      bool // stopped at the limit with rows left
	closed    bool
}

func (it *rowIter) Next() bool {
	if it.exhausted || it.more || it.err != nil || it.closed {
		return false
	}
	if !it.m.next() {
		if err := it.m.err(); err != nil {
			it.err = fmt.Errorf("snapshot: scanning %s version %d: %w", it.r.ds.name, it.r.info.Version, err)
		}
		it.exhausted = true
		return false
	}
	if _, err := it.m.single(); err != nil {
		it.err = fmt.Errorf("snapshot: scanning %s version %d: %w", it.r.ds.name, it.r.info.Version, err)
		return false
	}
	if it.limit > 0 && it.n == it.limit {
		it.more = true
		return false
	}
	it.built = false
	it.lastKey = append(it.lastKey[:0], it.m.src().row()...)
	it.n++
	return true
}

func (it *rowIter) Row() Row {
	if !it.built && it.err == nil {
		row, err := it.rb.build(&it.m.src().st, &it.alloc)
		if err != nil {
			it.err = err
			return Row{}
		}
		it.row, it.built = row, true
	}
	return it.row
}

// AppendRowJSON appends the current row as Row.AppendJSON would, without
// building the Row (no allocation): what an NDJSON stream writes.
func (it *rowIter) AppendRowJSON(dst []byte) ([]byte, error) {
	return it.rb.appendJSON(dst, &it.m.src().st)
}

func (it *rowIter) Columns() []string { return it.rb.names }

// AppendValues appends the current row's values without copying their
// bytes: what the Arrow and Parquet writers read, whose builders copy them.
func (it *rowIter) AppendValues(dst []Value) ([]Value, error) {
	return it.rb.appendValues(dst, &it.m.src().st)
}

func (it *rowIter) NextPageToken() string {
	if !it.more || it.lastKey == nil {
		return ""
	}
	tok := pageToken{dataset: it.r.ds.name, table: it.r.table, version: it.r.info.Version, lastKey: it.lastKey}.encode()
	it.r.tokens.handed(tok)
	return tok
}

func (it *rowIter) Err() error { return it.err }

func (it *rowIter) Close() error {
	if it.closed {
		return it.err
	}
	it.closed = true
	if it.m != nil {
		if err := it.m.close(); err != nil && it.err == nil {
			it.err = err
		}
	}
	return it.err
}
