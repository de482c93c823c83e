package snapshot

// Row versions (doc.go D1): a dataset partition holds one store cell per
// row version, in column "" at the writing run's transaction id: a row
// delete marker (store.KindDeleteRow), or a put whose value packs the
// cells of the row at that version.
//
// # Layout
//
// Columns are named by their index in the dataset's column dictionary
// (datasetConfig.Columns): every column name any run ever had, in the order
// they first came, never reordered or shortened, so an index means the
// same column in every version. A packed value is
//
//	header   1 byte: 0x01 full, 0x02 delta
//	m        uvarint: the number of cells
//	m times: uvarint dictionary index (ascending), column value
//
// and a column value is the cell value encoding (encoding.go) with a
// length before the bytes of the variable-length kinds, or a column delete
// marker:
//
//	kind byte, then: KindNull nothing; KindInt zig-zag varint; KindUint
//	uvarint; KindFloat 8 bytes big-endian; every other kind uvarint(len)
//	and the bytes; 0xff (deleteColumn): a column delete marker, nothing
//
// # Reading a row at a version
//
// The visible versions of a row, newest first, form its chain: a delta
// holds the cells that changed since the version before it (new values,
// and delete markers for columns the run's schema no longer has), a full
// version every column of the row. The state at a view is, for each
// column, the newest cell of the chain that has it; the walk stops at a
// full version (it hides what is older, as a row delete marker and puts
// at once would) or at a visible row delete marker (the row is absent
// unless versions above it gave columns). This is the per-column rule of
// txn.V3, row version by row version. A run writes a delta when the
// previous version's chain is shorter than maxChain, else the whole row,
// so a read walks at most maxChain versions.

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// Row version headers.
const (
	versionFull  = 0x01
	versionDelta = 0x02
)

// deleteColumn is the column value of a column delete marker.
const deleteColumn = 0xff

// maxChain bounds the versions a read of one row walks: a run writes the
// whole row instead of a delta when the previous version's chain has
// maxChain versions already.
const maxChain = 4

// versionReader walks the cells of a packed row version.
type versionReader struct {
	full bool
	left int // cells still to read
	next int // the smallest index the next cell may have
	b    []byte
	p    int // the position in b of the next cell
}

// open starts reading value, a packed row version.
func (vr *versionReader) open(value []byte) error {
	if len(value) < 2 {
		return fmt.Errorf("%w: row version of %d bytes", ErrCorrupt, len(value))
	}
	h := value[0]
	if h != versionFull && h != versionDelta {
		return fmt.Errorf("%w: row version header %#x", ErrCorrupt, h)
	}
	m, k := binary.Uvarint(value[1:])
	if k <= 0 || m > uint64(len(value)) {
		return fmt.Errorf("%w: row version with %d cells", ErrCorrupt, m)
	}
	*vr = versionReader{full: h == versionFull, left: int(m), b: value, p: 1 + k}
	return nil
}

// nextCell returns the next cell of the version: its dictionary index and
// where its packed column value lies in the version; ok is false after the
// last.
func (vr *versionReader) nextCell() (idx, start, end int, ok bool, err error) {
	if vr.left == 0 {
		if vr.p != len(vr.b) {
			return 0, 0, 0, false, fmt.Errorf("%w: %d bytes after a row version", ErrCorrupt, len(vr.b)-vr.p)
		}
		return 0, 0, 0, false, nil
	}
	x, k := binary.Uvarint(vr.b[vr.p:])
	if k <= 0 || x > 1<<24 || int(x) < vr.next {
		return 0, 0, 0, false, fmt.Errorf("%w: column index in a row version", ErrCorrupt)
	}
	idx, vr.p = int(x), vr.p+k
	vr.next = idx + 1
	vr.left--
	l := columnValueLen(vr.b[vr.p:])
	if l < 0 {
		return 0, 0, 0, false, fmt.Errorf("%w: column value in a row version", ErrCorrupt)
	}
	start, vr.p = vr.p, vr.p+l
	return idx, start, vr.p, true, nil
}

// resolvedRow is one row resolved at one visibility from its chain (the
// walk in the file comment): the packed value of each column of the
// dictionary, copied out of the versions. Reused row after row.
type resolvedRow struct {
	n        int     // size of the dictionary
	off, end []int32 // column i is buf[off[i]:end[i]] once end[i] > 0
	buf      []byte  // owned, or the first version's value when lent
	owned    []byte  // the memory buf uses when owned
	lent     bool    // buf is the value of a cell whose memory is the store's
	borrow   bool    // the caller lets buf be the first version's value
	nset     int     // columns set, values or delete markers
	nvals    int     // columns set to a value
	chain    int     // versions applied
	complete bool    // the walk reached a full version or a row delete marker
	vr       versionReader
}

// reset readies st for a row of a dictionary of n columns.
func (st *resolvedRow) reset(n int) {
	st.n, st.nset, st.nvals, st.chain, st.complete, st.lent = n, 0, 0, 0, false, false
	if cap(st.off) < n {
		st.off, st.end = make([]int32, n), make([]int32, n)
	}
	st.off, st.end = st.off[:n], st.end[:n]
	clear(st.end)
	st.buf = st.owned[:0]
}

// own copies a lent first version into st's memory, before the store's
// memory of it is reused (the cursor moves on).
func (st *resolvedRow) own() {
	if st.lent {
		st.owned = append(st.owned[:0], st.buf...)
		st.buf, st.lent = st.owned, false
	}
}

// add applies c, the next raw cell of the row in store order (newest
// first), when vis sees it; it reports whether the walk is complete. Cells
// after a complete walk must not be added. With st.borrow set, the first
// version applied is not copied: st then holds c.Value until own is called
// or the row is done.
func (st *resolvedRow) add(c store.Cell, vis txn.Visibility) (bool, error) {
	if !vis.IsVisible(c.Timestamp) {
		return false, nil
	}
	switch c.Kind {
	case store.KindDeleteRow:
		st.complete = true
		return true, nil
	case store.KindPut:
	default:
		return false, fmt.Errorf("%w: %s cell in a data table", ErrCorrupt, c.Kind)
	}
	if err := st.vr.open(c.Value); err != nil {
		return false, err
	}
	lend := st.borrow && st.chain == 0
	if lend {
		st.buf, st.lent = c.Value, true
	}
	st.chain++
	for {
		idx, start, stop, ok, err := st.vr.nextCell()
		if err != nil {
			return false, err
		}
		if !ok {
			break
		}
		if idx >= st.n {
			return false, fmt.Errorf("%w: column %d of a dictionary of %d", ErrCorrupt, idx, st.n)
		}
		if st.end[idx] > 0 {
			continue
		}
		if lend {
			st.off[idx], st.end[idx] = int32(start), int32(stop)
		} else {
			st.off[idx] = int32(len(st.buf))
			st.buf = append(st.buf, c.Value[start:stop]...)
			st.end[idx] = int32(len(st.buf))
		}
		st.nset++
		if c.Value[start] != deleteColumn {
			st.nvals++
		}
	}
	if st.vr.full || st.nset == st.n {
		st.complete = true
	}
	return st.complete, nil
}

// present reports whether the row exists in the state walked so far.
func (st *resolvedRow) present() bool { return st.nvals > 0 }

// value returns the packed value of column i, nil when it has none.
func (st *resolvedRow) value(i int) []byte {
	if i >= st.n || st.end[i] == 0 || st.buf[st.off[i]] == deleteColumn {
		return nil
	}
	return st.buf[st.off[i]:st.end[i]:st.end[i]]
}

// resolveCells resolves a row's raw cells (store order) at vis into st.
func (st *resolvedRow) resolveCells(cells []store.Cell, vis txn.Visibility, n int) error {
	st.reset(n)
	for _, c := range cells {
		done, err := st.add(c, vis)
		if err != nil {
			return err
		}
		if done {
			break
		}
	}
	return nil
}

// versionReserve is the longest header of a row version: its kind and
// its count of cells.
const versionReserve = 1 + binary.MaxVarintLen64

// appendVersion appends a packed row version holding the cells idx
// (ascending dictionary indexes) with the packed values vals.
func appendVersion(dst []byte, full bool, idx []int, vals [][]byte) []byte {
	dst = appendVersionHeader(dst, full, len(idx))
	for j, i := range idx {
		dst = binary.AppendUvarint(dst, uint64(i))
		dst = append(dst, vals[j]...)
	}
	return dst
}

// appendVersionHeader appends the header of a row version of n cells.
func appendVersionHeader(dst []byte, full bool, n int) []byte {
	h := byte(versionDelta)
	if full {
		h = versionFull
	}
	dst = append(dst, h)
	return binary.AppendUvarint(dst, uint64(n))
}

// dictionary is a dataset's column dictionary (datasetConfig.Columns)
// with a name lookup.
type dictionary struct {
	names []string
	index map[string]int
}

func newDictionary(names []string) *dictionary {
	d := &dictionary{names: names, index: make(map[string]int, len(names))}
	for i, n := range names {
		d.index[n] = i
	}
	return d
}

// columnsOf returns the dictionary index of each column of s, in schema
// order, and the schema indexes sorted by dictionary index; ok is false
// when a column is missing from the dictionary.
func (d *dictionary) columnsOf(s Schema) (dict, order []int, ok bool) {
	dict = make([]int, len(s.Columns))
	for i, c := range s.Columns {
		x, found := d.index[c.Name]
		if !found {
			return nil, nil, false
		}
		dict[i] = x
	}
	order = make([]int, len(dict))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return dict[a] - dict[b] })
	return dict, order, true
}
