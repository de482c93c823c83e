package snapshot

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// At selects the version a reader is pinned to. The zero At means the
// current version. At most one field may be set.
type At struct {
	// Version is a kept version (a transaction id); 0: not given.
	Version int64
	// AsOf, when not nil, selects the newest kept version committed at or
	// before *AsOf. Every time is a time, the zero time.Time included
	// (nothing was committed then: ErrVersionNotKept).
	AsOf *time.Time
	// Tag selects the version a tag names; "": not given.
	Tag string
}

// Reader reads one dataset at one pinned version (D2): Get reads a row
// (get.go), Scan a key range (scan.go). It keeps that version from being
// collected until Close (G2). Safe for concurrent use.
type Reader struct {
	db     *DB
	ds     *dataset
	info   VersionInfo
	vis    txn.Visibility
	opts   store.ReadOptions
	parts  int
	pk     []string // the dataset's partition key, nil for the row key
	keyIdx []int
	tables []string    // data table of each partition
	allIdx []int       // every schema column
	allRB  *rowBuilder // builds rows of every column; read-only, shared
	closed atomic.Bool
}

// Reader pins a version of the dataset name: at.Version, the newest kept
// version committed at or before *at.AsOf, the version tagged at.Tag, or
// the current one. Errors: ErrDatasetNotFound, ErrNoVersion, ErrVersionNotKept
// (expired by GC, never committed, or nothing kept as of the time),
// ErrTagNotFound, ErrInvalidArgument (more than one field of at set, a
// negative version).
//
// The version is resolved, pinned and its visibility taken under the
// dataset lock, so GC cannot expire it in between.
func (db *DB) Reader(ctx context.Context, name string, at At) (*Reader, error) {
	set := 0
	if at.Version != 0 {
		set++
	}
	if at.AsOf != nil {
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
	ds, err := db.lookup(ctx, name)
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
	case at.AsOf != nil:
		for i := len(ds.versions) - 1; i >= 0; i-- {
			if !ds.versions[i].CommittedAt.After(*at.AsOf) {
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
			return nil, versionNotKept(name, at.Version, ds.current)
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
	vis := ds.st.Txns.Visibility(vi.Version)
	if vis.IsExcluded(vi.Version) {
		return nil, fmt.Errorf("%w: %s version %d is not committed", ErrCorrupt, name, vi.Version)
	}
	r := &Reader{db: db, ds: ds, info: ds.infoLocked(vi), parts: ds.cfg.Partitions, pk: ds.cfg.PartitionKey, vis: vis, opts: readOpts(vis)}
	r.keyIdx = keyIndexes(vi.Schema)
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

// Version describes the pinned version.
func (r *Reader) Version() VersionInfo { return r.info }

// Close unpins the version. A second Close does nothing.
func (r *Reader) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.ds.mu.Lock()
	delete(r.ds.readers, r)
	r.ds.mu.Unlock()
	r.db.openReaders.Add(-1)
	return nil
}

// usable returns ErrClosed after Close (of the Reader or the DB), and
// ErrDatasetNotFound once the dataset was dropped.
func (r *Reader) usable() error {
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

// ParseKey converts the text of each key column (as given in a URL path
// segment) to typed key values using the pinned schema. ErrBadKey when the
// count or a value does not fit.
func (r *Reader) ParseKey(parts []string) ([]Value, error) {
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
func (r *Reader) encodeKeyPrefix(key []Value, full bool) ([]byte, error) {
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
func (r *Reader) columnSelection(columns []string) ([][]byte, []int, error) {
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
