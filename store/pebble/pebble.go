package pebble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
	"unsafe"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snapstore/snapstore/store"
)

// Defaults of Options, in bytes.
const (
	// DefaultMemTableSize is the default Options.MemTableSize: 64 MiB, the
	// size that the design brief measured as fastest for bulk runs.
	DefaultMemTableSize = 64 << 20
	// DefaultCacheSize is the default Options.CacheSize: 128 MiB.
	DefaultCacheSize = 128 << 20
)

// ErrIncompatibleFormat is returned by Open when the directory holds a
// Pebble database written with another storage format version than the one
// documented in docs/storage-format.md.
var ErrIncompatibleFormat = errors.New("pebble: incompatible storage format")

// Options configure Open. The zero value is usable: every zero field gets its
// documented default.
type Options struct {
	// MemTableSize is the size of one Pebble memtable in bytes; default
	// DefaultMemTableSize (64 MiB). Pebble keeps up to two of them before
	// stalling writes, and refuses 4 GiB or more (Open fails).
	MemTableSize uint64
	// CacheSize is the size of Pebble's block cache in bytes; default
	// DefaultCacheSize (128 MiB) when zero or negative.
	CacheSize int64
	// Logger receives Pebble's own log lines and the store's; nil discards
	// them. Pebble's Infof lines (WAL recovery, compactions, flushes) are
	// its housekeeping, logged at Debug; its Errorf lines at Error.
	Logger *slog.Logger
	// Registerer, when non-nil, gets the store's gauges (names
	// snapstore_pebble_*, listed in docs/operations.md and in metrics.go).
	// They are unregistered again by Close, so a store can be reopened with
	// the same Registerer.
	Registerer prometheus.Registerer

	// fs replaces the operating system's file system in tests (Pebble's
	// crashable vfs.MemFS simulates a machine crash); nil means vfs.Default.
	fs vfs.FS
}

// Store is a store.Store on one Pebble database: every table of the process
// lives in it, the table name being a key prefix. It is safe for concurrent
// use.
type Store struct {
	db       *cpebble.DB
	lock     *cpebble.Lock // dir's lock, held until Close
	dir      string
	fs       vfs.FS
	fsCloser io.Closer        // the disk-health checker of the default file system; nil with Options.fs
	wopts    *cpebble.Options // the options, defaults filled, for SSTables of loads
	logger   *slog.Logger
	reg      prometheus.Registerer
	colls    []prometheus.Collector

	// cond makes conditional writes atomic with their read (store.S7,
	// store.S8): every write (Apply, MutateRow, DeleteRange, a load's
	// Flush) holds it shared, CheckAndMutate and Increment hold it alone
	// from their read to their write. Taken before mu.
	cond sync.RWMutex

	// mu guards closed and the use of db: every operation holds it for
	// reading while it touches db; Close takes it for writing, so it waits
	// for operations in flight (never for open iterators).
	mu     sync.RWMutex
	closed bool

	// iters guards open, the set of iterators not yet closed. Lock order:
	// mu, then iters, then an iterator's own mutex.
	iters struct {
		sync.Mutex
		open map[*iterator]struct{}
	}

	// bufs pools key scratch buffers for Apply and Get.
	bufs sync.Pool

	// iters pools idle Pebble iterators for Get and Scan.
	pool iterPool

	// loads is the set of loads not yet closed (load.go), closed by Close.
	loads struct {
		sync.Mutex
		open map[*load]struct{}
	}

	// cache is the block cache (Options.CacheSize bytes), which
	// ReserveCache shrinks (cachereserve.go).
	cache     *cpebble.Cache
	cacheSize int64
	resv      reservations
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.ProcessLocal  = (*Store)(nil)
	_ store.CacheReserver = (*Store)(nil)
)

// ProcessLocal implements store.ProcessLocal: Pebble locks its directory,
// so one process at a time opens a Store.
func (s *Store) ProcessLocal() bool { return true }

// Open opens (creating if needed) the Pebble database in dir, which it
// creates 0700 with every file in it 0600 (privatefs.go). A
// directory of storage format 1 is upgraded first (format.go), which copies
// it once.
//
// Errors: ErrIncompatibleFormat when dir holds another format version;
// Pebble's errors (a locked or corrupt directory) wrapped; a registration
// error when Options.Registerer already holds the store's metric names.
func Open(dir string, opts Options) (*Store, error) {
	if opts.MemTableSize == 0 {
		opts.MemTableSize = DefaultMemTableSize
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cache := cpebble.NewCache(opts.CacheSize)
	defer cache.Unref()
	s := &Store{logger: logger, reg: opts.Registerer, cache: cache, cacheSize: opts.CacheSize}
	// A flush or a compaction replaces files that idle pooled iterators
	// still pin: let them go (from another goroutine, Pebble calls the
	// listener in the middle of its own work).
	unpin := func() { go s.pool.drain() }
	opened := false // the store is returned; else the file system is closed
	if opts.fs == nil {
		// Pebble's own default, made here so that this package can close
		// it: Pebble closes the disk-health checker it makes only in
		// DB.Close, so an Open that fails (a directory another process
		// holds) would leave its goroutine running.
		var fsCloser io.Closer
		opts.fs, fsCloser = vfs.WithDiskHealthChecks(privateFS{vfs.Default}, 5*time.Second, nil, func(info vfs.DiskSlowInfo) {
			logger.Warn("disk slow", "component", "pebble", "path", info.Path, "op", info.OpType.String(), "duration", info.Duration)
		})
		defer func() {
			if !opened {
				fsCloser.Close()
			}
		}()
		s.fsCloser = fsCloser
	}
	po := pebbleOptions(opts, cache, logger)
	po.EventListener = &cpebble.EventListener{
		FlushEnd:      func(cpebble.FlushInfo) { unpin() },
		CompactionEnd: func(cpebble.CompactionInfo) { unpin() },
	}
	if err := opts.fs.MkdirAll(dir, privateDirMode); err != nil {
		return nil, fmt.Errorf("pebble: opening %s: %w", dir, err)
	}
	if fi, err := opts.fs.Stat(dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("the data directory is open to other users; it holds copies of source data and may hold secrets: chmod 700 it", "dir", dir, "mode", fi.Mode().Perm().String())
	}
	lock, err := cpebble.LockDirectory(dir, opts.fs)
	if err != nil {
		return nil, fmt.Errorf("pebble: opening %s: %w", dir, err)
	}
	if err := upgrade(dir, po, lock, logger); err != nil {
		lock.Close()
		return nil, fmt.Errorf("pebble: upgrading %s: %w", dir, err)
	}
	if err := removeStaleLoads(opts.fs, dir); err != nil {
		lock.Close()
		return nil, fmt.Errorf("pebble: opening %s: %w", dir, err)
	}
	po.Lock = lock
	db, err := cpebble.Open(dir, po)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("pebble: opening %s: %w", dir, err)
	}
	s.db, s.lock, s.dir, s.fs = db, lock, dir, opts.fs
	s.wopts = po.Clone()
	s.wopts.EnsureDefaults()
	s.iters.open = make(map[*iterator]struct{})
	s.loads.open = make(map[*load]struct{})
	s.bufs.New = func() any { b := make([]byte, 0, 256); return &b }
	if err := s.checkFormat(); err != nil {
		return nil, errors.Join(err, db.Close(), lock.Close())
	}
	if err := s.registerMetrics(); err != nil {
		return nil, errors.Join(fmt.Errorf("pebble: registering metrics: %w", err), db.Close(), lock.Close())
	}
	logger.Debug("pebble store opened", "dir", dir)
	opened = true
	return s, nil
}

// DB returns the underlying Pebble database, for benchmarks and tools that
// compare with raw Pebble. Writing to it outside the encoding of the package
// doc corrupts the store. Since the store cannot see writes made through
// it, the store stops reusing Pebble iterators once DB has been called (see
// iterPool), and every later read takes a fresh view.
func (s *Store) DB() *cpebble.DB {
	s.pool.disable()
	return s.db
}

func (s *Store) getBuf() *[]byte  { return s.bufs.Get().(*[]byte) }
func (s *Store) putBuf(b *[]byte) { *b = (*b)[:0]; s.bufs.Put(b) }

// Apply implements store.Store. The batch is written as one Pebble batch:
// with pebble.Sync when b.Sync, else with pebble.NoSync (in the WAL, not
// fsynced; an uncommitted run needs no durability, DESIGN "Limits").
func (s *Store) Apply(ctx context.Context, b *store.Batch) error {
	s.cond.RLock()
	defer s.cond.RUnlock()
	return s.apply(ctx, b, b != nil && b.Sync)
}

// apply writes b as one Pebble batch, synced when sync is set; the caller
// holds cond.
func (s *Store) apply(ctx context.Context, b *store.Batch, sync bool) error {
	if b == nil {
		return fmt.Errorf("pebble: applying batch: %w", store.ErrInvalidArgument)
	}
	if err := store.CheckTable(b.Table); err != nil {
		return fmt.Errorf("pebble: applying batch: %w", err)
	}
	size := 0
	for i := range b.Mutations {
		m := &b.Mutations[i]
		if err := m.Validate(); err != nil {
			return fmt.Errorf("pebble: applying batch to %q: mutation %d: %w", b.Table, i, err)
		}
		size += len(m.Cell.Row) + len(m.Cell.Column) + len(m.Cell.Value) + len(b.Table) + 32
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebble: applying batch to %q: %w", b.Table, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("pebble: applying batch to %q: %w", b.Table, store.ErrClosed)
	}
	if len(b.Mutations) == 0 {
		return nil
	}
	bp := s.getBuf()
	defer s.putBuf(bp)
	tp := appendTable((*bp)[:0], b.Table)
	kb := tp[len(tp):]
	pb := s.db.NewBatchWithSize(size)
	defer pb.Close()
	for i := range b.Mutations {
		m := &b.Mutations[i]
		c := &m.Cell
		switch m.Op {
		case store.OpPut:
			var value []byte
			if c.Kind == store.KindPut {
				value = c.Value
			}
			d := pb.SetDeferred(cellKeyLen(tp, c.Row, c.Column), 1+len(value))
			putCellKey(d.Key, tp, c.Row, c.Column, c.Timestamp)
			d.Value[0] = byte(c.Kind)
			copy(d.Value[1:], value)
			if err := d.Finish(); err != nil {
				return fmt.Errorf("pebble: applying batch to %q: %w", b.Table, err)
			}
		case store.OpDeleteVersion:
			kb = appendCellKey(kb[:0], tp, c.Row, c.Column, c.Timestamp)
			if err := pb.Delete(kb, nil); err != nil {
				return fmt.Errorf("pebble: applying batch to %q: %w", b.Table, err)
			}
		}
	}
	// Keep the larger of the two buffers for the next Apply.
	if cap(kb) > cap(tp)-len(tp) {
		*bp = kb[:0]
	} else {
		*bp = tp[:0]
	}
	wo := cpebble.NoSync
	if sync {
		wo = cpebble.Sync
	}
	err := s.db.Apply(pb, wo)
	s.pool.invalidate()
	if err != nil {
		return fmt.Errorf("pebble: applying batch to %q: %w", b.Table, err)
	}
	return nil
}

// Get implements store.Store. The cells are copied into memory owned by the
// caller, two allocations per row: the cells, and one block holding the row
// key (shared by every returned cell), the columns (consecutive versions of
// one column share its slice) and the values, each slice with its capacity
// capped, so appending to one never overwrites another.
func (s *Store) Get(ctx context.Context, table string, row []byte, opts store.ReadOptions) ([]store.Cell, error) {
	g := getStates.Get().(*getState)
	defer g.release()
	buf, refs := g.buf[:0], g.refs[:0]
	rowEnd, colStart, colEnd := 0, 0, 0
	err := s.visitRow(ctx, &g.it, table, row, opts, func(c store.Cell) bool {
		if len(refs) == 0 {
			buf = append(buf, c.Row...)
			rowEnd = len(buf)
			colStart = len(buf)
			buf = append(buf, c.Column...)
			colEnd = len(buf)
		} else if !bytes.Equal(buf[colStart:colEnd], c.Column) {
			colStart = len(buf)
			buf = append(buf, c.Column...)
			colEnd = len(buf)
		}
		r := cellRef{col: colStart, colEnd: colEnd, val: -1, ts: c.Timestamp, kind: c.Kind}
		if c.Value != nil {
			r.val = len(buf)
			buf = append(buf, c.Value...)
			r.valEnd = len(buf)
		}
		refs = append(refs, r)
		return true
	})
	g.buf, g.refs = buf, refs
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	data := make([]byte, len(buf))
	copy(data, buf)
	rowCopy := data[:rowEnd:rowEnd]
	out := make([]store.Cell, len(refs))
	for i, r := range refs {
		c := &out[i]
		c.Row = rowCopy
		c.Column = data[r.col:r.colEnd:r.colEnd]
		c.Timestamp = r.ts
		c.Kind = r.kind
		if r.val >= 0 {
			c.Value = data[r.val:r.valEnd:r.valEnd]
		}
	}
	return out, nil
}

// VisitRow implements store.Store without copying: fn sees the cells in
// the Pebble iterator's memory.
func (s *Store) VisitRow(ctx context.Context, table string, row []byte, opts store.ReadOptions, fn func(store.Cell) bool) error {
	g := getStates.Get().(*getState)
	defer g.release()
	return s.visitRow(ctx, &g.it, table, row, opts, fn)
}

// visitRow reads one row with it, a reset row reader: a pooled Pebble
// iterator bounded to the row and positioned with SeekPrefixGE, so that
// the bloom filters of the SSTables are consulted (comparer.go).
func (s *Store) visitRow(ctx context.Context, it *iterator, table string, row []byte, opts store.ReadOptions, fn func(store.Cell) bool) error {
	if err := store.CheckTable(table); err != nil {
		return fmt.Errorf("pebble: getting row: %w", err)
	}
	if len(row) == 0 {
		return fmt.Errorf("pebble: getting row of %q: %w: empty row key", table, store.ErrInvalidArgument)
	}
	opts, err := opts.Normalize()
	if err != nil {
		return fmt.Errorf("pebble: getting row of %q: %w", table, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebble: getting row of %q: %w", table, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("pebble: getting row of %q: %w", table, store.ErrClosed)
	}
	bp := s.getBuf()
	defer s.putBuf(bp)
	buf := appendTable((*bp)[:0], table)
	tlen := len(buf)
	buf = appendEscaped(buf, row)
	lower := buf
	buf = prefixEnd(buf, lower)
	upper := buf[len(lower):]
	*bp = buf[:0]

	it.reset()
	it.init(ctx, tlen, opts)
	pi, gen, err := s.pool.get(ctx, s.db, lower, upper)
	if err != nil {
		return fmt.Errorf("pebble: getting row of %q: %w", table, err)
	}
	it.pi = pi
	it.prefix = lower
	for it.next() {
		if !fn(it.cur) {
			break
		}
	}
	err = it.err
	it.pi, it.prefix = nil, nil
	if cerr := s.pool.put(pi, gen); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pebble: getting row of %q: %w", table, err)
	}
	return nil
}

// getState is the reusable memory of one Get: its row reader and the cells
// gathered before they are copied out.
type getState struct {
	it   iterator
	buf  []byte    // row, columns and values of the cells gathered
	refs []cellRef // the cells gathered, as offsets into buf
}

// cellRef is a cell gathered by Get: its column and value as offsets into
// getState.buf (val < 0 for no value).
type cellRef struct {
	col, colEnd, val, valEnd int
	ts                       int64
	kind                     store.CellKind
}

var getStates = sync.Pool{New: func() any { return new(getState) }}

// maxPooledGetBytes bounds the memory a pooled getState keeps after a read
// of a large row.
const maxPooledGetBytes = 64 << 10

func (g *getState) release() {
	g.it.reset()
	if cap(g.buf) > maxPooledGetBytes || cap(g.refs)*int(unsafe.Sizeof(cellRef{})) > maxPooledGetBytes {
		return
	}
	getStates.Put(g)
}

// Scan implements store.Store. The iterator is a Pebble iterator, which
// reads the point-in-time state of the database when Scan is called (store.S3).
// Errors: ErrInvalidArgument for an empty table, a bad time range or
// opts.Start > opts.End (both non-nil); ErrClosed.
func (s *Store) Scan(ctx context.Context, table string, opts store.ScanOptions) (store.Iterator, error) {
	if err := store.CheckTable(table); err != nil {
		return nil, fmt.Errorf("pebble: scanning: %w", err)
	}
	ro, err := opts.ReadOptions.Normalize()
	if err != nil {
		return nil, fmt.Errorf("pebble: scanning %q: %w", table, err)
	}
	if opts.Start != nil && opts.End != nil && bytes.Compare(opts.Start, opts.End) > 0 {
		return nil, fmt.Errorf("pebble: scanning %q: %w: start row after end row", table, store.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebble: scanning %q: %w", table, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("pebble: scanning %q: %w", table, store.ErrClosed)
	}
	it := &iterator{s: s}
	// One allocation for the table prefix and the iterator's first row
	// prefix buffer (which grows on its own when a row key is longer).
	tp := appendTable(make([]byte, 0, len(table)+2+64), table)
	it.rowPrefix = tp[len(tp):]
	tp = tp[:len(tp):len(tp)]
	it.init(ctx, len(tp), ro)
	it.tablePrefix = tp
	lower := tp
	if len(opts.Start) > 0 {
		lower = appendEscaped(bytes.Clone(tp), opts.Start)
	}
	var upper []byte
	if opts.End != nil {
		upper = appendEscaped(bytes.Clone(tp), opts.End)
	} else {
		upper = prefixEnd(nil, tp)
	}
	it.lower = lower
	if filters := timeFilters(ro.TimeRange); filters != nil {
		// An iterator of its own, never pooled: its filters would hide
		// cells from the reads that reuse it.
		pi, err := s.db.NewIterWithContext(ctx, &cpebble.IterOptions{LowerBound: lower, UpperBound: upper, PointKeyFilters: filters})
		if err != nil {
			return nil, fmt.Errorf("pebble: scanning %q: %w", table, err)
		}
		it.pi, it.unpooled = pi, true
	} else {
		pi, gen, err := s.pool.get(ctx, s.db, lower, upper)
		if err != nil {
			return nil, fmt.Errorf("pebble: scanning %q: %w", table, err)
		}
		it.pi, it.gen = pi, gen
	}
	s.iters.Lock()
	s.iters.open[it] = struct{}{}
	s.iters.Unlock()
	return it, nil
}

// DeleteRange implements store.Store with one Pebble batch of two range
// deletions over the encoded bounds, the cells' and the counters'
// (store.S8), applied with pebble.Sync. Errors: ErrInvalidArgument for an
// empty table or start > end (both non-nil); start == end deletes nothing.
func (s *Store) DeleteRange(ctx context.Context, table string, start, end []byte) error {
	if err := store.CheckTable(table); err != nil {
		return fmt.Errorf("pebble: deleting range: %w", err)
	}
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		return fmt.Errorf("pebble: deleting range of %q: %w: start row after end row", table, store.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebble: deleting range of %q: %w", table, err)
	}
	s.cond.RLock()
	defer s.cond.RUnlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("pebble: deleting range of %q: %w", table, store.ErrClosed)
	}
	bounds := func(tp []byte) (lower, upper []byte) {
		lower = tp
		if len(start) > 0 {
			lower = appendEscaped(bytes.Clone(tp), start)
		}
		if end != nil {
			upper = appendEscaped(bytes.Clone(tp), end)
		} else {
			upper = prefixEnd(nil, tp)
		}
		return lower, upper
	}
	lower, upper := bounds(appendTable(nil, table))
	if bytes.Compare(lower, upper) >= 0 {
		return nil
	}
	clower, cupper := bounds(appendCounterKey(nil, table, nil, nil))
	pb := s.db.NewBatch()
	defer pb.Close()
	err := errors.Join(pb.DeleteRange(lower, upper, nil), pb.DeleteRange(clower, cupper, nil))
	if err == nil {
		err = s.db.Apply(pb, cpebble.Sync)
	}
	s.pool.invalidate()
	if err != nil {
		return fmt.Errorf("pebble: deleting range of %q: %w", table, err)
	}
	return nil
}

// Sync implements store.Store: it writes an empty log record with
// pebble.Sync, which fsyncs the WAL and with it every earlier batch.
func (s *Store) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebble: syncing: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("pebble: syncing: %w", store.ErrClosed)
	}
	if err := s.db.LogData(nil, cpebble.Sync); err != nil {
		return fmt.Errorf("pebble: syncing: %w", err)
	}
	return nil
}

// Close implements store.Store. It waits for operations in flight, closes
// every iterator still open (their next call returns false and their Err
// ErrClosed), unregisters the metrics and closes Pebble. A second Close
// returns ErrClosed.
func (s *Store) Close() error {
	// Unregister first, outside mu: a scrape in progress holds the
	// registry while it reads mu in the gauge functions.
	if s.reg != nil {
		for _, c := range s.colls {
			s.reg.Unregister(c)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("pebble: closing: %w", store.ErrClosed)
	}
	s.closed = true
	s.iters.Lock()
	var errs []error
	for it := range s.iters.open {
		errs = append(errs, it.closeBy(store.ErrClosed))
	}
	clear(s.iters.open)
	s.iters.Unlock()
	s.loads.Lock()
	loads := make([]*load, 0, len(s.loads.open))
	for l := range s.loads.open {
		loads = append(loads, l)
	}
	s.loads.Unlock()
	for _, l := range loads {
		l.Close()
	}
	s.pool.close()
	s.resv.close()
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("pebble: closing: %w", err))
	}
	if err := s.lock.Close(); err != nil {
		errs = append(errs, fmt.Errorf("pebble: releasing the directory lock: %w", err))
	}
	if s.fsCloser != nil {
		s.fsCloser.Close()
	}
	return errors.Join(errs...)
}

// slogBridge is Pebble's Logger on a *slog.Logger. Pebble's Infof lines
// ("Found 0 WALs", compaction and flush notes) say nothing an operator
// acts on, so they go to Debug: at snapstore's default level (info) the
// log holds snapstore's own lines.
type slogBridge struct{ l *slog.Logger }

func (b slogBridge) Infof(format string, args ...any) {
	if !b.l.Enabled(context.Background(), slog.LevelDebug) {
		return // not formatted for nothing
	}
	b.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (b slogBridge) Errorf(format string, args ...any) {
	b.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf logs at Error and panics: Pebble calls it only for corruption it
// cannot continue from, and it must not return.
func (b slogBridge) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.l.Error(msg, "component", "pebble", "fatal", true)
	panic("pebble: fatal: " + msg)
}

var _ io.Closer = (*Store)(nil)
