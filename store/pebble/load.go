package pebble

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/snapstore/snapstore/store"
)

// loadTableBytes is the size at which a load finishes an SSTable and
// ingests it: Pebble's target file size of the bottom levels, so that a
// long load keeps its temporary files small and lands file by file.
const loadTableBytes = 64 << 20

// loadFilePrefix names the temporary SSTables of loads in the database's
// directory; Open deletes any a crash left.
const loadFilePrefix = "load-"

// Load implements store.Loader: the cells are written into SSTables (with
// the options of the bottom level) in the database's directory and
// ingested, which bypasses the WAL, the memtables and the compactions that
// would move them down: an ingested table lands in the lowest level whose
// key range it does not overlap, the bottom one for new data.
func (s *Store) Load(ctx context.Context, table string) (store.Load, error) {
	if err := store.CheckTable(table); err != nil {
		return nil, fmt.Errorf("pebble: loading: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebble: loading %q: %w", table, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("pebble: loading %q: %w", table, store.ErrClosed)
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	l := &load{s: s, table: table, tp: appendTable(nil, table), name: loadFilePrefix + hex.EncodeToString(id[:])}
	l.wo = s.wopts.MakeWriterOptions(6, s.db.TableFormat())
	l.wo.DisableValueBlocks = true // as compactions write them (options.go)
	s.loads.Lock()
	s.loads.open[l] = struct{}{}
	s.loads.Unlock()
	return l, nil
}

// load is a store.Load of the Pebble store. Not safe for concurrent use.
type load struct {
	s      *Store
	table  string
	tp     []byte // the encoded table prefix
	name   string // prefix of its files' names
	wo     sstable.WriterOptions
	w      *sstable.Writer
	path   string   // the file w writes
	paths  []string // finished files not yet ingested
	seq    int
	size   int64
	last   []byte // the last key added to w
	key    []byte
	val    []byte
	err    error // sticky
	done   bool
	sealed bool // Seal: no more Adds
}

// Add implements store.Load.
func (l *load) Add(c store.Cell) error {
	if l.err != nil {
		return l.err
	}
	if l.done || l.sealed {
		return fmt.Errorf("pebble: loading %q: %w", l.table, store.ErrClosed)
	}
	m := store.Mutation{Op: store.OpPut, Cell: c}
	if err := m.Validate(); err != nil {
		return l.fail(err)
	}
	l.key = appendCellKey(l.key[:0], l.tp, c.Row, c.Column, c.Timestamp)
	if l.w != nil && compareKeys(l.key, l.last) <= 0 {
		return l.fail(fmt.Errorf("%w: cells out of order", store.ErrInvalidArgument))
	}
	if l.w == nil {
		if err := l.create(); err != nil {
			return l.fail(err)
		}
	}
	l.val = append(l.val[:0], byte(c.Kind))
	if c.Kind == store.KindPut {
		l.val = append(l.val, c.Value...)
	}
	if err := l.w.Set(l.key, l.val); err != nil {
		return l.fail(err)
	}
	l.last = append(l.last[:0], l.key...)
	l.size += int64(len(l.key) + len(l.val))
	if cap(l.val) > 1<<20 {
		l.val = nil // a wide value's copy: not kept for the next cells
	}
	if l.size >= loadTableBytes {
		if err := l.finish(); err != nil {
			return l.fail(err)
		}
	}
	return nil
}

func compareKeys(a, b []byte) int { return comparer.Compare(a, b) }

// create starts a new SSTable.
func (l *load) create() error {
	fs := l.s.fs
	l.path = filepath.Join(l.s.dir, fmt.Sprintf("%s-%06d.sst", l.name, l.seq))
	l.seq++
	f, err := fs.Create(l.path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	l.w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), l.wo)
	l.size = 0
	return nil
}

// finish closes the current SSTable and queues it for ingestion.
func (l *load) finish() error {
	if l.w == nil {
		return nil
	}
	err := l.w.Close()
	l.w = nil
	l.paths = append(l.paths, l.path)
	return err
}

// Seal implements store.Load: the SSTable being written is finished,
// its buffers freed; its cells wait for a Flush or a FlushLoads.
func (l *load) Seal() error {
	if l.err != nil {
		return l.err
	}
	if l.done {
		return fmt.Errorf("pebble: loading %q: %w", l.table, store.ErrClosed)
	}
	l.sealed = true
	if err := l.finish(); err != nil {
		return l.fail(err)
	}
	l.last, l.key, l.val = nil, nil, nil
	return nil
}

// Flush implements store.Load: the SSTables written so far are ingested
// (atomically, and durably: Pebble syncs them and its manifest).
func (l *load) Flush(ctx context.Context) error {
	return l.s.FlushLoads(ctx, []store.Load{l})
}

// FlushLoads implements store.Loader: the SSTables of every load are
// ingested in one Ingest (atomically, and durably: Pebble syncs them and
// its manifest once).
func (s *Store) FlushLoads(ctx context.Context, loads []store.Load) error {
	var ls []*load
	var paths []string
	for _, sl := range loads {
		l, ok := sl.(*load)
		if !ok || l.s != s {
			return fmt.Errorf("pebble: flushing loads: %w: a load of another store", store.ErrInvalidArgument)
		}
		if l.err != nil {
			return l.err
		}
		if l.done {
			return fmt.Errorf("pebble: loading %q: %w", l.table, store.ErrClosed)
		}
		if err := l.finish(); err != nil {
			return l.fail(err)
		}
		ls = append(ls, l)
		paths = append(paths, l.paths...)
	}
	if len(paths) == 0 {
		return nil
	}
	what := fmt.Sprintf("%q", ls[0].table)
	if len(ls) > 1 {
		what = fmt.Sprintf("%d tables", len(ls))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebble: loading %s: %w", what, err)
	}
	s.cond.RLock() // a write: see Store.cond
	defer s.cond.RUnlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("pebble: loading %s: %w", what, store.ErrClosed)
	}
	err := s.db.Ingest(ctx, paths)
	s.pool.invalidate()
	for _, l := range ls {
		l.removeFiles()
	}
	if err != nil {
		for _, l := range ls {
			l.fail(err)
		}
		return fmt.Errorf("pebble: loading %s: %w", what, err)
	}
	return nil
}

// Close implements store.Load: what was not flushed is dropped.
func (l *load) Close() error {
	if l.done {
		return nil
	}
	l.done = true
	if l.w != nil {
		_ = l.w.Close()
		l.w = nil
		l.paths = append(l.paths, l.path)
	}
	l.removeFiles()
	l.s.loads.Lock()
	delete(l.s.loads.open, l)
	l.s.loads.Unlock()
	return nil
}

// removeFiles deletes the load's files (ingestion links them into the
// database, so they are not needed after it either).
func (l *load) removeFiles() {
	for _, p := range l.paths {
		_ = l.s.fs.Remove(p)
	}
	l.paths = l.paths[:0]
}

func (l *load) fail(err error) error {
	l.err = fmt.Errorf("pebble: loading %q: %w", l.table, err)
	return l.err
}

// removeStaleLoads deletes the temporary SSTables of loads a crash
// interrupted.
func removeStaleLoads(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if strings.HasPrefix(n, loadFilePrefix) && strings.HasSuffix(n, ".sst") {
			errs = append(errs, fs.Remove(filepath.Join(dir, n)))
		}
	}
	return errors.Join(errs...)
}

var _ store.Loader = (*Store)(nil)
