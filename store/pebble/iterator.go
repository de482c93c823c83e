package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	cpebble "github.com/cockroachdb/pebble/v2"

	"github.com/snapstore/snapstore/store"
)

// maxSkipNexts is how many Next calls the iterator spends stepping over
// unwanted versions of one column before it seeks past them instead; the
// idea and the value are RocksDB's max_sequential_skip_in_iterations
// (default 8). Measured here (BenchmarkStore, memtable-resident data, 2
// loaded cores): with 4 a scan of 10 versions per column reading the newest
// ran 2-3x slower than with 16 or 32, because a memtable seek costs about as
// much as ten Nexts; with 32 a Get over 100 versions ran 2-3x slower than
// with 4. 8 sits between.
const maxSkipNexts = 8

// ctxCheckEvery is how many keys the iterator visits between two checks of
// its context, so that a cancelled request stops a long scan without paying
// for a check per key. A power of two.
const ctxCheckEvery = 256

// iterator is the store.Iterator of Scan, and the row reader inside Get (with
// s == nil, unregistered and used by one goroutine only).
type iterator struct {
	s *Store // nil inside Get

	// mu guards everything below against Store.Close, which closes open
	// iterators from another goroutine. It is held for the whole of each
	// method call, never across calls.
	mu sync.Mutex

	pi          *cpebble.Iterator
	gen         uint64          // iterPool generation of pi
	unpooled    bool            // pi has time filters: closed, never pooled
	ctx         context.Context // checked every ctxCheckEvery keys
	steps       uint
	tlen        int    // length of the encoded table prefix
	tablePrefix []byte // encoded table prefix (Scan only)
	lower       []byte // lower bound of the scan (Scan only)

	tr          store.TimeRange
	unboundedTS bool     // tr.Max == store.MaxTimestamp: no upper limit
	maxVersions int      // <= 0: all
	cols        [][]byte // encoded wanted columns, sorted, deduplicated; nil: all

	// prefix, in a Get, is the encoded table and row: the iterator is
	// positioned with SeekPrefixGE and seeks within the row with it too.
	prefix      []byte
	started     bool
	seekPending bool
	seekKey     []byte

	curCol []byte // encoded row+column prefix of the column being read

	// rowPrefix is the encoded table and row of the last key parsed, so
	// that the keys after it in the same row skip parsing the row, and
	// rowOK says rowBuf holds its row unescaped (rowEsc: it has escapes).
	rowPrefix     []byte
	rowEsc, rowOK bool
	count         int // versions of curCol returned so far
	skips         int // Next calls spent skipping in curCol

	rowBuf, colBuf, scratch []byte
	cur                     store.Cell
	err                     error
	closed                  bool
}

var _ store.Iterator = (*iterator)(nil)

// init sets the read options; opts is normalized.
func (it *iterator) init(ctx context.Context, tlen int, opts store.ReadOptions) {
	it.ctx = ctx
	it.tlen = tlen
	it.tr = opts.TimeRange
	it.unboundedTS = opts.TimeRange.Max == store.MaxTimestamp
	it.maxVersions = opts.MaxVersions
	if len(opts.Columns) > 0 {
		it.cols = make([][]byte, 0, len(opts.Columns))
		for _, c := range opts.Columns {
			it.cols = append(it.cols, appendEscaped(nil, c))
		}
		slices.SortFunc(it.cols, bytes.Compare)
		it.cols = slices.CompactFunc(it.cols, bytes.Equal)
	}
}

// reset clears the state of a previous read, keeping the buffers, for the
// reuse of a Get's iterator.
func (it *iterator) reset() {
	*it = iterator{
		seekKey:   it.seekKey[:0],
		rowPrefix: it.rowPrefix[:0],
		curCol:    it.curCol[:0],
		rowBuf:    it.rowBuf[:0],
		colBuf:    it.colBuf[:0],
		scratch:   it.scratch[:0],
	}
}

// Next implements store.Iterator.
func (it *iterator) Next() bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.next()
}

// Cell implements store.Iterator.
func (it *iterator) Cell() store.Cell {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.closed {
		return store.Cell{}
	}
	return it.cur
}

// SeekRow implements store.Iterator. A row before the scan's start seeks to
// the start; a row at or after its end ends the iteration.
func (it *iterator) SeekRow(row []byte) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.closed || it.err != nil {
		return
	}
	it.seekKey = appendEscaped(append(it.seekKey[:0], it.tablePrefix...), row)
	if bytes.Compare(it.seekKey, it.lower) < 0 {
		it.seekKey = append(it.seekKey[:0], it.lower...)
	}
	it.seekPending = true
	it.started = true
}

// Err implements store.Iterator.
func (it *iterator) Err() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.err
}

// Close implements store.Iterator. Closing twice returns Err again.
func (it *iterator) Close() error {
	it.mu.Lock()
	if it.closed {
		err := it.err
		it.mu.Unlock()
		return err
	}
	it.closed = true
	var cerr error
	if it.unpooled {
		cerr = it.pi.Close()
	} else {
		cerr = it.s.pool.put(it.pi, it.gen)
	}
	if cerr != nil && it.err == nil {
		it.err = fmt.Errorf("pebble: closing iterator: %w", cerr)
	}
	err := it.err
	it.cur = store.Cell{}
	it.mu.Unlock()
	if it.s != nil {
		it.s.iters.Lock()
		delete(it.s.iters.open, it)
		it.s.iters.Unlock()
	}
	return err
}

// closeBy closes the iterator on behalf of Store.Close, leaving cause as its
// error. The caller holds s.iters.
func (it *iterator) closeBy(cause error) error {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.closed {
		return nil
	}
	it.closed = true
	it.cur = store.Cell{}
	if it.err == nil {
		it.err = fmt.Errorf("pebble: iterating: %w", cause)
	}
	if err := it.pi.Close(); err != nil {
		return fmt.Errorf("pebble: closing iterator: %w", err)
	}
	return nil
}

// next moves to the next selected cell. The caller holds mu (or owns it).
func (it *iterator) next() bool {
	if it.err != nil || it.closed {
		return false
	}
	var valid bool
	switch {
	case it.seekPending:
		it.seekPending = false
		it.curCol = it.curCol[:0]
		valid = it.pi.SeekGE(it.seekKey)
	case !it.started && it.prefix != nil:
		it.started = true
		valid = it.pi.SeekPrefixGE(it.prefix)
	case !it.started:
		it.started = true
		valid = it.pi.First()
	default:
		valid = it.pi.Next()
	}
	for valid {
		if it.steps++; it.steps%ctxCheckEvery == 0 {
			if err := it.ctx.Err(); err != nil {
				it.err = fmt.Errorf("pebble: iterating: %w", err)
				it.cur = store.Cell{}
				return false
			}
		}
		key := it.pi.Key()
		var p parsedKey
		var err error
		if n := len(it.rowPrefix); n > 0 && len(key) > n && bytes.Equal(key[:n], it.rowPrefix) {
			p, err = parseCellKeyInRow(key, it.tlen, n, it.rowEsc)
		} else {
			p, err = parseCellKey(key, it.tlen)
			if err == nil {
				it.rowPrefix = append(it.rowPrefix[:0], key[:p.rowEnd]...)
				it.rowEsc, it.rowOK = p.rowEsc, false
			}
		}
		if err != nil {
			it.err = fmt.Errorf("pebble: iterating at key %x: %w", key, err)
			return false
		}
		colPrefix := key[:p.colEnd]
		if !bytes.Equal(colPrefix, it.curCol) {
			it.curCol = append(it.curCol[:0], colPrefix...)
			it.count, it.skips = 0, 0
		}
		switch {
		case p.ts >= it.tr.Max && !it.unboundedTS:
			// Newer than the range: step, or seek to the newest version
			// inside it.
			if it.skips < maxSkipNexts {
				it.skips++
				valid = it.pi.Next()
				continue
			}
			it.scratch = binary.BigEndian.AppendUint64(append(it.scratch[:0], colPrefix...), encodeTS(it.tr.Max-1))
			valid = it.seekGE(it.scratch)
			continue
		case p.ts < it.tr.Min, it.maxVersions > 0 && it.count >= it.maxVersions:
			// Nothing more of this column is wanted.
			valid = it.skipColumn(colPrefix)
			continue
		}
		value, err := it.pi.ValueAndErr()
		if err != nil {
			it.err = fmt.Errorf("pebble: reading value: %w", err)
			return false
		}
		if len(value) == 0 {
			it.err = fmt.Errorf("pebble: iterating at key %x: %w: empty value", key, errCorruptKey)
			return false
		}
		kind := store.CellKind(value[0])
		if it.cols != nil && kind != store.KindDeleteRow {
			colEnc := key[p.colStart:p.colEnd]
			if _, found := slices.BinarySearchFunc(it.cols, colEnc, bytes.Compare); !found {
				if p.colEnd-p.colStart == termLen {
					// Column "": row delete markers may follow.
					valid = it.pi.Next()
					continue
				}
				valid = it.seekNextColumn(key[:p.colStart], colEnc)
				continue
			}
		}
		it.count++
		c := store.Cell{Timestamp: p.ts, Kind: kind}
		if p.rowEsc {
			if !it.rowOK {
				it.rowBuf = unescape(it.rowBuf[:0], key[p.rowStart:p.rowEnd-termLen])
				it.rowOK = true
			}
			c.Row = it.rowBuf
		} else {
			c.Row = key[p.rowStart : p.rowEnd-termLen : p.rowEnd-termLen]
		}
		if p.colEsc {
			it.colBuf = unescape(it.colBuf[:0], key[p.colStart:p.colEnd-termLen])
			c.Column = it.colBuf
		} else {
			c.Column = key[p.colStart : p.colEnd-termLen : p.colEnd-termLen]
		}
		if kind == store.KindPut {
			c.Value = value[1:len(value):len(value)]
		}
		it.cur = c
		return true
	}
	if err := it.pi.Error(); err != nil {
		it.err = fmt.Errorf("pebble: iterating: %w", err)
	}
	it.cur = store.Cell{}
	return false
}

// skipColumn moves past every remaining version of the column whose encoded
// prefix is colPrefix (a slice of the current key).
func (it *iterator) skipColumn(colPrefix []byte) bool {
	if it.skips < maxSkipNexts {
		it.skips++
		return it.pi.Next()
	}
	it.scratch = prefixEnd(it.scratch[:0], colPrefix)
	return it.seekGE(it.scratch)
}

// seekGE seeks to key, which in a Get lies in the row read: with
// SeekPrefixGE, so that the iterator stays on the row's prefix.
func (it *iterator) seekGE(key []byte) bool {
	if it.prefix != nil {
		return it.pi.SeekPrefixGE(key)
	}
	return it.pi.SeekGE(key)
}

// seekNextColumn seeks to the first wanted column after colEnc in the row
// whose encoded prefix is rowPrefix, or to the next row when none is left.
func (it *iterator) seekNextColumn(rowPrefix, colEnc []byte) bool {
	i, _ := slices.BinarySearchFunc(it.cols, colEnc, bytes.Compare)
	if i < len(it.cols) {
		it.scratch = append(append(it.scratch[:0], rowPrefix...), it.cols[i]...)
	} else {
		it.scratch = prefixEnd(it.scratch[:0], rowPrefix)
	}
	return it.seekGE(it.scratch)
}
