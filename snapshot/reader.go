package snapshot

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

type readerState struct {
	db     *DB
	ds     *dataset
	info   VersionInfo
	vis    txn.Visibility
	opts   store.ReadOptions
	parts  int
	keyIdx []int
	tables []string    // data table of each partition
	allIdx []int       // every schema column
	allRB  *rowBuilder // builds rows of every column; read-only, shared
	self   *Reader
	closed atomic.Bool
}

// reader implements DB.Reader: it resolves at to a kept version, pins it
// and takes the visibility under the dataset lock, so GC cannot expire the
// version in between.
func (db *DB) reader(ctx context.Context, name string, at At) (*Reader, error) {
	set := 0
	if at.Version != 0 {
		set++
	}
	if !at.AsOf.IsZero() {
		set++
	}
	if at.Tag != "" {
		set++
	}
	if set > 1 {
		return nil, fmt.Errorf("%w: at most one of version, as_of and tag", ErrInvalidArgument)
	}
	if at.Version < 0 {
		return nil, fmt.Errorf("%w: negative version", ErrInvalidArgument)
	}
	ds, err := db.lookup(name)
	if err != nil {
		return nil, err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.dropped {
		return nil, fmt.Errorf("%w: %q", ErrDatasetNotFound, name)
	}
	var vi *VersionInfo
	switch {
	case at.Tag != "":
		v, ok := ds.tags[at.Tag]
		if !ok {
			return nil, fmt.Errorf("%w: %s tag %q", ErrTagNotFound, name, at.Tag)
		}
		vi = ds.versionLocked(v)
	case !at.AsOf.IsZero():
		for i := len(ds.versions) - 1; i >= 0; i-- {
			if !ds.versions[i].CommittedAt.After(at.AsOf) {
				vi = ds.versions[i]
				break
			}
		}
		if vi == nil {
			return nil, fmt.Errorf("%w: %s has no kept version committed at or before %s", ErrVersionNotKept, name, at.AsOf.UTC().Format("2006-01-02T15:04:05.999999Z"))
		}
	case at.Version != 0:
		vi = ds.versionLocked(at.Version)
		if vi == nil {
			return nil, fmt.Errorf("%w: %s version %d", ErrVersionNotKept, name, at.Version)
		}
	default:
		if ds.current == 0 {
			return nil, fmt.Errorf("%w: %s", ErrNoVersion, name)
		}
		vi = ds.versionLocked(ds.current)
	}
	if vi == nil {
		return nil, fmt.Errorf("%w: %s", ErrVersionNotKept, name)
	}
	vis := db.txm.Visibility(name, vi.Version)
	if vis.IsExcluded(vi.Version) {
		// Rolled back by the writer process after this view's metadata
		// was read (S2).
		return nil, fmt.Errorf("%w: %s version %d was rolled back", ErrVersionNotKept, name, vi.Version)
	}
	r := &Reader{readerState{db: db, ds: ds, info: ds.infoLocked(vi), parts: ds.cfg.Partitions}}
	r.self = r
	r.vis = vis
	r.opts = readOpts(r.vis)
	for _, k := range vi.Schema.Key {
		r.keyIdx = append(r.keyIdx, columnIndex(vi.Schema, k))
	}
	for p := 0; p < r.parts; p++ {
		r.tables = append(r.tables, dataTable(name, p))
	}
	for i := range vi.Schema.Columns {
		r.allIdx = append(r.allIdx, i)
	}
	r.allRB = newRowBuilder(vi.Schema, r.keyIdx, r.allIdx)
	ds.readers[r] = struct{}{}
	db.openReaders.Add(1)
	return r, nil
}

func (r *readerState) close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.ds.mu.Lock()
	delete(r.ds.readers, r.self)
	r.ds.mu.Unlock()
	r.db.openReaders.Add(-1)
	return nil
}

func (r *readerState) usable() error {
	if r.closed.Load() {
		return fmt.Errorf("%w: reader", ErrClosed)
	}
	if err := r.db.check(); err != nil {
		return err
	}
	r.ds.mu.Lock()
	dropped := r.ds.dropped
	r.ds.mu.Unlock()
	if dropped {
		return fmt.Errorf("%w: %q", ErrDatasetNotFound, r.ds.name)
	}
	return nil
}

func (r *readerState) parseKey(parts []string) ([]Value, error) {
	s := r.info.Schema
	if len(parts) != len(s.Key) {
		return nil, fmt.Errorf("%w: %d key parts for %d key columns %v", ErrBadKey, len(parts), len(s.Key), s.Key)
	}
	out := make([]Value, len(parts))
	for i, p := range parts {
		v, err := ParseValue(s.Columns[r.keyIdx[i]].Kind, p)
		if err != nil {
			return nil, fmt.Errorf("%w (key column %q)", err, s.Key[i])
		}
		out[i] = v
	}
	return out, nil
}

// encodeKeyPrefix encodes the first len(key) key columns. With full set,
// every key column must be given.
func (r *readerState) encodeKeyPrefix(key []Value, full bool) ([]byte, error) {
	s := r.info.Schema
	if len(key) > len(s.Key) || (full && len(key) != len(s.Key)) {
		return nil, fmt.Errorf("%w: %d key values for %d key columns", ErrBadKey, len(key), len(s.Key))
	}
	var out []byte
	for i, v := range key {
		if want := s.Columns[r.keyIdx[i]].Kind; v.Kind != want {
			return nil, fmt.Errorf("%w: key column %q is %s, got %s", ErrBadKey, s.Key[i], want, v.Kind)
		}
		var err error
		if out, err = appendKeyValue(out, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// columnSelection returns the store column filter and the schema indexes
// of the columns to return, for a caller's column list (nil: all).
func (r *readerState) columnSelection(columns []string) ([][]byte, []int, error) {
	s := r.info.Schema
	if len(columns) == 0 {
		return nil, r.allIdx, nil
	}
	var filter [][]byte
	var idx []int
	want := make([]bool, len(s.Columns))
	for _, c := range columns {
		i := columnIndex(s, c)
		if i < 0 {
			return nil, nil, fmt.Errorf("%w: no column %q at version %d", ErrInvalidArgument, c, r.info.Version)
		}
		want[i] = true
	}
	for _, i := range r.keyIdx {
		want[i] = true // key columns decide whether a row exists
	}
	for i, w := range want {
		if w {
			filter = append(filter, []byte(s.Columns[i].Name))
		}
	}
	for i := range s.Columns {
		for _, c := range columns {
			if c == s.Columns[i].Name {
				idx = append(idx, i)
				break
			}
		}
	}
	return filter, idx, nil
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

func (r *readerState) get(ctx context.Context, key []Value, columns []string) (Row, error) {
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
	cells, err := r.db.st.Get(ctx, r.tables[PartitionOf(rk, r.parts)], rk, o)
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

// Page tokens: base64url (no padding) of uvarint(version) followed by the
// last row key returned; the scan resumes at the first key after it.
func encodePageToken(version int64, lastKey []byte) string {
	b := binary.AppendUvarint(nil, uint64(version))
	return base64.RawURLEncoding.EncodeToString(append(b, lastKey...))
}

func decodePageToken(tok string) (int64, []byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: not base64url", ErrBadPageToken)
	}
	v, n := binary.Uvarint(b)
	if n <= 0 || v == 0 || len(b) == n {
		return 0, nil, fmt.Errorf("%w: malformed", ErrBadPageToken)
	}
	return int64(v), b[n:], nil
}

func (r *readerState) scan(ctx context.Context, opts ScanOptions) (RowIterator, error) {
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
		v, last, err := decodePageToken(opts.PageToken)
		if err != nil {
			return nil, err
		}
		if v != r.info.Version {
			return nil, fmt.Errorf("%w: token is for version %d, the reader is at %d", ErrBadPageToken, v, r.info.Version)
		}
		after := append(append([]byte{}, last...), 0)
		if bytes.Compare(after, start) > 0 {
			start = after
		}
	}
	filter, idx, err := r.columnSelection(opts.Columns)
	if err != nil {
		return nil, err
	}
	so := store.ScanOptions{ReadOptions: r.opts, Start: start, End: end}
	so.Columns = filter
	if end != nil && start != nil && bytes.Compare(start, end) >= 0 {
		return &rowIter{r: r, exhausted: true}, nil
	}
	m, err := openMerged(ctx, r.db.st, r.ds.name, r.parts, so)
	if err != nil {
		return nil, fmt.Errorf("snapshot: scanning %s version %d: %w", r.ds.name, r.info.Version, err)
	}
	rb := r.allRB
	if opts.Columns != nil {
		rb = newRowBuilder(r.info.Schema, r.keyIdx, idx)
	}
	return &rowIter{r: r, m: m, rb: rb, limit: opts.Limit}, nil
}

// rowIter implements RowIterator over a mergedRows.
type rowIter struct {
	r         *readerState
	m         *mergedRows
	rb        *rowBuilder
	limit     int
	n         int
	row       Row
	lastKey   []byte
	res       []resolvedCol
	err       error
	exhausted bool // the range has no more rows
	more      bool // stopped at the limit with rows left
	closed    bool
}

func (it *rowIter) advance() bool {
	for it.m.next() {
		it.res = resolve(it.m.cells(), it.r.vis, it.res[:0])
		if len(it.res) > 0 {
			return true
		}
	}
	if err := it.m.err(); err != nil {
		it.err = fmt.Errorf("snapshot: scanning %s version %d: %w", it.r.ds.name, it.r.info.Version, err)
	}
	it.exhausted = true
	return false
}

func (it *rowIter) Next() bool {
	if it.exhausted || it.more || it.err != nil || it.closed {
		return false
	}
	if !it.advance() {
		return false
	}
	if it.limit > 0 && it.n == it.limit {
		it.more = true
		return false
	}
	row, err := it.rb.build(it.res)
	if err != nil {
		it.err = err
		return false
	}
	it.row = row
	it.lastKey = append(it.lastKey[:0], it.m.row()...)
	it.n++
	return true
}

func (it *rowIter) Row() Row { return it.row }

func (it *rowIter) NextPageToken() string {
	if !it.more || it.lastKey == nil {
		return ""
	}
	return encodePageToken(it.r.info.Version, it.lastKey)
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
