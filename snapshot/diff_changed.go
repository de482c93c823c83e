package snapshot

// Time-bound diffs. A row's state at a version is resolved from its cells
// at or below that version (txn.V2, txn.V3), and every cell carries the
// transaction that wrote it as its timestamp. So between two versions lo <
// hi, a row with no cell (row version, column or row delete marker)
// stamped in (lo, hi] resolves alike at both, provided the two views
// exclude the same transactions at or below lo: the cells below lo are
// the same and are read the same way. A diff then needs only the rows that
// have a cell in (lo, hi], found by scans with that time range, which the
// stores serve without reading the rest (store.TimeRange: Pebble's
// block-property filters, HBase's scan time range), as CockroachDB's
// incremental backups read only what changed since the last one. Each
// such candidate row is then read whole, every version up to hi, and
// resolved at both versions exactly as the full walk would.
//
// Rows whose cells in (lo, hi] change nothing (a run's cells of an aborted
// transaction, a row reverted, versions between lo and hi) are candidates
// that resolve alike and give no change. GC keeps every cell either kept
// version sees (G2; both are pinned), so what it removed in between was
// seen by neither. A row whose partition key moved it (partition_key.go)
// is resolved in the partitions where it has cells in the range: any
// other partition holding it resolves alike at both versions, and if it
// holds the row visibly then no partition of the range can at either.
//
// Where the two views exclude different transactions at or below lo (a
// transaction that ended between the two Readers took their views; with
// one writer per dataset, only another dataset's can), the diff walks
// every row (diff.go).

import (
	"bytes"
	"context"
	"slices"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// changedRows yields the rows of a time-bound diff: the candidates found by
// scans of (lo, hi], each positioned on in the full walk's readers.
type changedRows struct {
	cand *mergedRows[*rowReader] // the partitions' cells in (lo, hi]
}

// openChanged opens the candidate scans of a diff between the versions of
// from and to over tables, the data tables of the partitions of one
// table of a dataset, or returns nil when the diff must walk every row
// (the package comment above).
func openChanged(ctx context.Context, st store.Store, tables []string, from, to txn.Visibility) (*changedRows, error) {
	lo, hi := min(from.ReadPointer, to.ReadPointer), max(from.ReadPointer, to.ReadPointer)
	if !sameExclusions(from, to, lo) {
		return nil, nil
	}
	opts := store.ScanOptions{ReadOptions: store.ReadOptions{TimeRange: store.TimeRange{Min: lo + 1, Max: hi + 1}}}
	cand, err := openPartitions(ctx, st, tables, opts, newRowReader)
	if err != nil {
		return nil, err
	}
	return &changedRows{cand: cand}, nil
}

// sameExclusions reports whether a and b exclude the same transactions at
// or below lo.
func sameExclusions(a, b txn.Visibility, lo int64) bool {
	below := func(v txn.Visibility) []int64 {
		x := v.Excluded()
		return x[:v.ExcludedAtOrBelow(lo)]
	}
	return slices.Equal(below(a), below(b))
}

// next positions m, the full walk's readers, on the next candidate row:
// m.group holds the partitions where it has cells in the range. False at
// the end of the candidates or on an error of theirs (err).
func (c *changedRows) next(m *mergedRows[*rowReader]) bool {
	for c.cand.next() {
		key := c.cand.src().row()
		m.group = m.group[:0]
		for _, i := range c.cand.group {
			if m.srcs[i].reach(key) {
				m.group = append(m.group, i)
			}
		}
		if len(m.group) > 0 {
			return true
		}
		// The full walk's view lacks the candidate: GC removed its
		// cells in between (an invalid transaction's, which no version
		// sees), or a reader failed, which stops the diff.
		if m.err() != nil {
			return false
		}
	}
	return false
}

func (c *changedRows) err() error   { return c.cand.err() }
func (c *changedRows) close() error { return c.cand.close() }

// reach positions rr on row key, when its partition holds it, and reports
// whether it does. key is after every row reach was given before, and rr
// has only been moved by reach: it steps to key when key is the row it
// stands before, and seeks to it otherwise.
func (rr *rowReader) reach(key []byte) bool {
	if rr.cur != nil {
		switch c := bytes.Compare(rr.cur, key); {
		case c == 0:
			return true
		case c > 0:
			return false
		}
	}
	switch {
	case rr.has:
		switch c := bytes.Compare(rr.it.Cell().Row, key); {
		case c == 0:
			return rr.next()
		case c > 0:
			return false
		}
	case rr.done && rr.cur != nil:
		// The partition has no row after cur.
		return false
	}
	rr.it.SeekRow(key)
	rr.has, rr.done = false, false
	return rr.next() && bytes.Equal(rr.cur, key)
}
