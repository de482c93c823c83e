package snapshot

import (
	"bytes"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// rowReader groups the cells of a store.Iterator by row, every version:
// what GC, diffs and the migration of format 2 walk. The row and cells it
// returns are valid until the next call to next or seek.
type rowReader struct {
	it    store.Iterator
	has   bool // it is on a cell not yet returned
	done  bool
	cur   []byte
	cells []store.Cell
	arena []byte
}

func newRowReader(it store.Iterator) *rowReader { return &rowReader{it: it} }

// next reads the next row; false at the end or on error (see err).
func (rr *rowReader) next() bool {
	if rr.done {
		return false
	}
	if !rr.has {
		if !rr.it.Next() {
			rr.done = true
			return false
		}
	}
	rr.has = false
	c := rr.it.Cell()
	rr.arena = append(rr.arena[:0], c.Row...)
	rr.cur = rr.arena[:len(c.Row):len(c.Row)]
	rr.cells = rr.cells[:0]
	for {
		rr.addCell(c)
		if !rr.it.Next() {
			rr.done = true
			break
		}
		c = rr.it.Cell()
		if !bytes.Equal(c.Row, rr.cur) {
			rr.has = true
			break
		}
	}
	return true
}

func (rr *rowReader) addCell(c store.Cell) {
	s := len(rr.arena)
	rr.arena = append(rr.arena, c.Column...)
	rr.arena = append(rr.arena, c.Value...)
	col := rr.arena[s : s+len(c.Column) : s+len(c.Column)]
	val := rr.arena[s+len(c.Column) : len(rr.arena) : len(rr.arena)]
	if c.Value == nil {
		val = nil
	}
	rr.cells = append(rr.cells, store.Cell{Row: rr.cur, Column: col, Timestamp: c.Timestamp, Kind: c.Kind, Value: val})
}

func (rr *rowReader) row() []byte  { return rr.cur }
func (rr *rowReader) err() error   { return rr.it.Err() }
func (rr *rowReader) close() error { return rr.it.Close() }

// skipAfter is how many versions of a row a rowCursor steps over with Next,
// once the row is resolved, before it seeks to the next row instead.
const skipAfter = 8

// rowCursor resolves the rows of a store iterator over a data table at one
// visibility (rowversion.go), skipping rows absent there, and the versions
// older than what the walk needs. The row and state it holds are valid
// until the next call to next or seek: when the newest visible version of
// a row completes it (a full version), the state points into the
// iterator's memory, and the row's older versions are stepped over only
// when the cursor moves on.
type rowCursor struct {
	it       store.Iterator
	vis      txn.Visibility
	n        int // columns of the dictionary
	st       resolvedRow
	cur      []byte
	seekBuf  []byte
	pending  bool // it is on the first cell of a row not yet read
	skipRest bool // it is on a version of cur, whose remaining versions are to skip
	done     bool
	failed   error
}

func newRowCursor(it store.Iterator, vis txn.Visibility, n int) *rowCursor {
	rc := &rowCursor{it: it, vis: vis, n: n}
	rc.st.borrow = true
	return rc
}

// next resolves the next row present at the visibility; false at the end
// or on error (see err).
func (rc *rowCursor) next() bool {
	if rc.skipRest && !rc.skip() {
		return false
	}
	for !rc.done {
		if !rc.pending && !rc.it.Next() {
			rc.done = true
			return false
		}
		rc.pending = false
		c := rc.it.Cell()
		rc.cur = append(rc.cur[:0], c.Row...)
		rc.st.reset(rc.n)
		for {
			complete, err := rc.st.add(c, rc.vis)
			if err != nil {
				rc.failed, rc.done = err, true
				return false
			}
			if complete {
				rc.skipRest = true
				if rc.st.present() {
					return true
				}
				if !rc.skip() {
					return false
				}
				break
			}
			rc.st.own() // the iterator's memory of c is about to be reused
			if !rc.it.Next() {
				rc.done = true
				break
			}
			c = rc.it.Cell()
			if !bytes.Equal(c.Row, rc.cur) {
				rc.pending = true
				break
			}
		}
		if !rc.skipRest && rc.st.present() {
			return true
		}
		rc.skipRest = false
	}
	return false
}

// skip steps over the remaining versions of the row cur: with Next while
// there are few, else with a seek past the row. It returns false when the
// iterator ended.
func (rc *rowCursor) skip() bool {
	rc.skipRest = false
	for n := 0; ; n++ {
		if n == skipAfter {
			// Older versions nobody reads here: seek past the row.
			rc.seekBuf = append(append(rc.seekBuf[:0], rc.cur...), 0)
			rc.it.SeekRow(rc.seekBuf)
			return true
		}
		if !rc.it.Next() {
			rc.done = true
			return false
		}
		if c := rc.it.Cell(); !bytes.Equal(c.Row, rc.cur) {
			rc.pending = true
			return true
		}
	}
}

// seek positions the cursor so that next resolves the first row >= key.
func (rc *rowCursor) seek(key []byte) {
	rc.it.SeekRow(key)
	rc.pending, rc.done, rc.skipRest = false, false, false
}

func (rc *rowCursor) row() []byte { return rc.cur }

func (rc *rowCursor) err() error {
	if rc.failed != nil {
		return rc.failed
	}
	return rc.it.Err()
}

func (rc *rowCursor) close() error { return rc.it.Close() }
