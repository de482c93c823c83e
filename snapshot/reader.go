package snapshot

import (
	"context"
	"fmt"
	"sync"
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
// collected until Close: in this process (G2) and, where other processes
// share the store, in the store (a pin with a lease, G8). Safe for
// concurrent use.
type Reader struct {
	db    *DB
	ds    *dataset
	table string // "" for a dataset of one table
	info  VersionInfo
	vis   txn.Visibility
	opts  store.ReadOptions
	parts int
	pk    []string // the table's partition key, nil for the row key
	*readPlan
	closed atomic.Bool
	// pin is the Reader's pin in the store (pins.go), nil when it needs
	// none; tokens are the page tokens its scans handed out that none of
	// its own scans continued since (the pin lingers for them).
	pin    *pin
	tokens pageTokens
}

// pageTokens are the page tokens a Reader handed out and did not continue
// itself: a token continued by another Reader (the next HTTP page, on any
// process) needs the version kept after this one closes; one this Reader
// continued, as a scan that reads every page through one Reader does,
// does not.
type pageTokens struct {
	mu   sync.Mutex
	open map[string]bool
}

// handed records a token handed out.
func (t *pageTokens) handed(tok string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open == nil {
		t.open = map[string]bool{}
	}
	t.open[tok] = true
}

// continued records a scan continuing tok.
func (t *pageTokens) continued(tok string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.open, tok)
}

// outstanding reports whether a token handed out was not continued.
func (t *pageTokens) outstanding() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open) > 0
}

// Reader pins a version of the dataset name: at.Version, the newest kept
// version committed at or before *at.AsOf, the version tagged at.Tag, or
// the current one. Errors: ErrDatasetNotFound, ErrNoVersion, ErrVersionNotKept
// (expired by GC, never committed, or nothing kept as of the time),
// ErrTagNotFound, ErrInvalidArgument (more than one field of at set, a
// negative version).
//
// The version is resolved, pinned and its visibility taken under the
// dataset lock, so GC cannot expire it in between; a pin in the store
// that must be written at once is checked against the dataset's row
// (G8).
//
// A dataset of named tables has ErrTableRequired, naming its tables: read
// one with TableReader.
func (db *DB) Reader(ctx context.Context, name string, at At) (*Reader, error) {
	return db.openReader(ctx, name, "", false, at)
}

// TableReader pins a version of the dataset name, as Reader, and reads
// its table table: the Reader's Get, Scan and Version are those of the
// table (its schema and stats). ErrTableNotFound when the version holds
// no such table; the table "" is the table of a dataset of one table.
func (db *DB) TableReader(ctx context.Context, name, table string, at At) (*Reader, error) {
	return db.openReader(ctx, name, table, true, at)
}

// openReader opens a Reader of name at at: of its table table when
// qualified.
func (db *DB) openReader(ctx context.Context, name, table string, qualified bool, at At) (*Reader, error) {
	r, ttl, err := db.openReaderLocal(ctx, name, table, qualified, at)
	if err != nil {
		return nil, err
	}
	if err := db.pinRead(ctx, r, ttl); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// openReaderLocal opens a Reader as openReader does, pinned in this
// process (G2), and returns it with the dataset's retention TTL, from
// which pinRead learns whether it must pin it in the store too (G8).
func (db *DB) openReaderLocal(ctx context.Context, name, table string, qualified bool, at At) (*Reader, time.Duration, error) {
	if err := checkAt(at); err != nil {
		return nil, 0, err
	}
	ds, err := db.lookup(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	vi, err := ds.resolveLocked(at)
	if err != nil {
		return nil, 0, err
	}
	vis := ds.st.Txns.Visibility(vi.Version)
	if vis.IsExcluded(vi.Version) {
		return nil, 0, fmt.Errorf("%w: %s version %d is not committed", ErrCorrupt, name, vi.Version)
	}
	num, parts, pk := 0, ds.cfg.Partitions, ds.cfg.PartitionKey
	switch {
	case vi.Tables != nil && !qualified:
		return nil, 0, tableRequired(vi)
	case vi.Tables != nil:
		t, ok := vi.Table(table)
		if !ok {
			return nil, 0, tableNotFound(name, table, vi)
		}
		vi, num, parts, pk = tableView(vi, t), t.Number, t.Partitions, t.PartitionKey
	case table != "":
		return nil, 0, tableNotFound(name, table, vi)
	}
	plan, err := ds.planLocked(vi, num)
	if err != nil {
		return nil, 0, err
	}
	r := &Reader{db: db, ds: ds, table: table, info: ds.infoLocked(vi), parts: parts, pk: pk, vis: vis, opts: readOpts(vis)}
	r.readPlan = plan
	ds.readers[r] = struct{}{}
	db.openReaders.Add(1)
	return r, ds.cfg.Retention.TTL, nil
}

// readPlan is what every Reader of one version shares, built once per
// version (planLocked) so that opening a Reader, once per HTTP request,
// costs no more than pinning the version. Read-only.
type readPlan struct {
	keyIdx []int
	n      int         // columns of the dataset's dictionary (rowversion.go)
	dict   []int       // the dictionary index of each schema column
	tables []string    // data table of each partition
	names  []string    // the dictionary's column names
	allIdx []int       // every schema column
	allRB  *rowBuilder // builds rows of every column
}

// maxPlans bounds the read plans a dataset keeps; beyond it, the plans of
// versions no longer kept are dropped first, then any.
const maxPlans = 16

// planKey names a read plan: a version, and a table's number (0 for a
// dataset of one table).
type planKey struct {
	version int64
	table   int
}

// planLocked returns the read plan of vi, a kept version of ds (the view
// of its table number num, tableView, when num > 0), building it on first
// use; ds.mu is held. The column dictionary only grows and
// every row version a reader of vi sees was written before vi's commit, so
// a plan built at any time after the commit stays right.
func (ds *dataset) planLocked(vi *VersionInfo, num int) (*readPlan, error) {
	pkey := planKey{vi.Version, num}
	if p := ds.plans[pkey]; p != nil {
		return p, nil
	}
	p := &readPlan{keyIdx: keyIndexes(vi.Schema)}
	columns := ds.cfg.Columns
	if num > 0 {
		tc := ds.cfg.tableByNum(num)
		if tc == nil {
			return nil, fmt.Errorf("%w: %s version %d holds table number %d, which the dataset's configuration lacks", ErrCorrupt, ds.name, vi.Version, num)
		}
		columns = tc.Columns
		p.tables = tc.dataTables(ds.name)
	} else {
		for i := 0; i < ds.cfg.Partitions; i++ {
			p.tables = append(p.tables, dataTable(ds.name, i))
		}
	}
	d := newDictionary(columns)
	var ok bool
	if p.dict, _, ok = d.columnsOf(vi.Schema); !ok {
		return nil, fmt.Errorf("%w: %s version %d has a column missing from the dataset's column dictionary", ErrCorrupt, ds.name, vi.Version)
	}
	p.n = len(d.names)
	p.names = d.names
	for i := range vi.Schema.Columns {
		p.allIdx = append(p.allIdx, i)
	}
	p.allRB = newRowBuilder(vi.Schema, p.dict, p.keyIdx, p.allIdx)
	if ds.plans == nil {
		ds.plans = map[planKey]*readPlan{}
	}
	if len(ds.plans) >= maxPlans {
		for k := range ds.plans {
			if ds.versionLocked(k.version) == nil {
				delete(ds.plans, k)
			}
		}
		if len(ds.plans) >= maxPlans {
			clear(ds.plans)
		}
	}
	ds.plans[pkey] = p
	return p, nil
}

// Table returns the table the Reader reads, "" for a dataset of one
// table.
func (r *Reader) Table() string { return r.table }

// Version describes the pinned version (for a TableReader, its table's
// schema and stats, TableInfo).
func (r *Reader) Version() VersionInfo { return r.info }

// Close unpins the version. A second Close does nothing.
func (r *Reader) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	if r.pin != nil {
		r.pin.end(r.tokens.outstanding())
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
	return r.appendKeyPrefix(nil, key)
}

// appendKey appends the encoding of a full key to out.
func (r *Reader) appendKey(out []byte, key []Value) ([]byte, error) {
	if s := r.info.Schema; len(key) != len(s.Key) {
		return nil, fmt.Errorf("%w: %d key values for %d key columns", ErrBadKey, len(key), len(s.Key))
	}
	return r.appendKeyPrefix(out, key)
}

// appendKeyPrefix appends the encoding of the first len(key) <= len(Key)
// key columns to out.
func (r *Reader) appendKeyPrefix(out []byte, key []Value) ([]byte, error) {
	s := r.info.Schema
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

// columnSelection returns the schema indexes of the columns to return,
// for a caller's column list (nil: all), in schema order.
func (r *Reader) columnSelection(columns []string) ([]int, error) {
	s := r.info.Schema
	if len(columns) == 0 {
		return r.allIdx, nil
	}
	if err := r.info.CheckColumns(columns); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	var idx []int
	for i := range s.Columns {
		for _, c := range columns {
			if c == s.Columns[i].Name {
				idx = append(idx, i)
				break
			}
		}
	}
	return idx, nil
}

// resolveLocked returns the kept version of ds at selects (Reader); ds.mu
// is held.
func (ds *dataset) resolveLocked(at At) (*VersionInfo, error) {
	if ds.dropped {
		return nil, fmt.Errorf("%w: %q", ErrDatasetNotFound, ds.name)
	}
	var vi *VersionInfo
	switch {
	case at.Tag != "":
		v, ok := ds.tags[at.Tag]
		if !ok {
			return nil, fmt.Errorf("%w: %s tag %q", ErrTagNotFound, ds.name, at.Tag)
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
			return nil, noVersionAt(ds.name, *at.AsOf, ds.cfg.CreatedAt, ds.versions)
		}
	case at.Version != 0:
		vi = ds.versionLocked(at.Version)
		if vi == nil {
			return nil, versionNotKept(ds.name, at.Version, ds.current)
		}
	default:
		if ds.current == 0 {
			return nil, fmt.Errorf("%w: %s", ErrNoVersion, ds.name)
		}
		vi = ds.versionLocked(ds.current)
	}
	if vi == nil {
		return nil, fmt.Errorf("%w: %s", ErrVersionNotKept, ds.name)
	}
	return vi, nil
}

// checkAt checks that at sets at most one field, and no negative version.
func checkAt(at At) error {
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
		return fmt.Errorf("%w: at most one of version, as_of and tag", ErrInvalidArgument)
	}
	if at.Version < 0 {
		return fmt.Errorf("%w: negative version", ErrInvalidArgument)
	}
	return nil
}
