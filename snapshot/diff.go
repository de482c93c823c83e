package snapshot

import (
	"bytes"
	"context"
	"fmt"

	"github.com/snapstore/snapstore/store"
)

// ChangeOp is the kind of a diff entry.
type ChangeOp string

// The change kinds.
const (
	// OpInsert: the row is absent at from, present at to.
	OpInsert ChangeOp = "insert"
	// OpUpdate: present at both, with a different column set or value.
	OpUpdate ChangeOp = "update"
	// OpDelete: present at from, absent at to.
	OpDelete ChangeOp = "delete"
)

// Change is one row's difference between two versions.
type Change struct {
	// Op is the kind of change.
	Op ChangeOp
	// Key holds the key column values in key order.
	Key    []Value
	Before *Row // nil for insert
	After  *Row // nil for delete
	// Changed names, for an update, the columns whose value differs
	// between the versions or that one version lacks (a column added or
	// dropped): the to version's columns in schema order, then those only
	// the from version has. Never empty for an update; nil otherwise.
	Changed []string
}

// DiffStats counts a diff.
type DiffStats struct {
	From     int64 `json:"from"`
	To       int64 `json:"to"`
	Inserted int64 `json:"inserted"`
	Updated  int64 `json:"updated"`
	Deleted  int64 `json:"deleted"`
}

// DiffIterator streams changes in row key order; must be closed.
type DiffIterator interface {
	// Next advances to the next changed row; false at the end or on error.
	Next() bool
	// Change returns the current change.
	Change() Change
	// Err returns the error that stopped the diff, if any.
	Err() error
	// Close releases the diff (and the versions it pinned) and returns Err.
	Close() error
}

// Diff streams the changes from version from to version to (both kept;
// from > to gives the reverse changes), in row key order: insert, delete,
// or update when any column value or the column set differs. It pins both
// versions until Close. Errors: ErrDatasetNotFound, ErrVersionNotKept,
// ErrInvalidArgument (a version <= 0).
func (db *DB) Diff(ctx context.Context, dataset string, from, to int64) (DiffIterator, error) {
	return db.newDiff(ctx, dataset, from, to, false)
}

// DiffCounts counts the changes from version from to version to, as Diff
// would stream them, without building rows.
func (db *DB) DiffCounts(ctx context.Context, dataset string, from, to int64) (DiffStats, error) {
	d, err := db.newDiff(ctx, dataset, from, to, true)
	if err != nil {
		return DiffStats{}, err
	}
	st := DiffStats{From: from, To: to}
	for d.Next() {
		switch d.op {
		case OpInsert:
			st.Inserted++
		case OpUpdate:
			st.Updated++
		case OpDelete:
			st.Deleted++
		}
	}
	if err := d.Close(); err != nil {
		return DiffStats{}, err
	}
	return st, nil
}

// newDiff opens one raw scan of every partition up to the newer version,
// each row resolved at both versions (txn.V2, txn.V3); two Readers pin the
// versions until Close. With countOnly the iterator classifies rows
// without building them (Change is not filled).
func (db *DB) newDiff(ctx context.Context, name string, from, to int64, countOnly bool) (*diffIter, error) {
	if from <= 0 || to <= 0 {
		return nil, fmt.Errorf("%w: versions must be positive", ErrInvalidArgument)
	}
	rf, err := db.Reader(ctx, name, At{Version: from})
	if err != nil {
		return nil, err
	}
	rt, err := db.Reader(ctx, name, At{Version: to})
	if err != nil {
		rf.Close()
		return nil, err
	}
	hi := rf
	if to > from {
		hi = rt
	}
	// Every version up to the newer one: the older version's state may
	// lie under any number of newer cells.
	o := hi.opts
	o.MaxVersions = 0
	m, err := openMerged(ctx, db.st, name, rf.parts, store.ScanOptions{ReadOptions: o})
	if err != nil {
		rf.Close()
		rt.Close()
		return nil, fmt.Errorf("snapshot: diffing %s %d..%d: %w", name, from, to, err)
	}
	d := &diffIter{from: rf, to: rt, m: m, countOnly: countOnly}
	_, fromIdx, _ := rf.columnSelection(nil)
	_, toIdx, _ := rt.columnSelection(nil)
	d.fromRB = newRowBuilder(rf.info.Schema, rf.keyIdx, fromIdx)
	d.toRB = newRowBuilder(rt.info.Schema, rt.keyIdx, toIdx)
	return d, nil
}

// diffIter implements DiffIterator.
type diffIter struct {
	from, to     *Reader
	m            *mergedRows
	fromRB, toRB *rowBuilder
	countOnly    bool
	resF, resT   []resolvedCol
	op           ChangeOp
	change       Change
	err          error
	closed       bool
}

func sameResolved(a, b []resolvedCol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].name, b[i].name) || !bytes.Equal(a[i].value, b[i].value) {
			return false
		}
	}
	return true
}

func (d *diffIter) Next() bool {
	if d.closed || d.err != nil {
		return false
	}
	for d.m.next() {
		if d.resF, d.err = d.m.resolve(d.from.vis, d.resF[:0]); d.err != nil {
			return false
		}
		if d.resT, d.err = d.m.resolve(d.to.vis, d.resT[:0]); d.err != nil {
			return false
		}
		switch {
		case len(d.resF) == 0 && len(d.resT) == 0:
			continue
		case len(d.resF) == 0:
			d.op = OpInsert
		case len(d.resT) == 0:
			d.op = OpDelete
		case sameResolved(d.resF, d.resT):
			continue
		default:
			d.op = OpUpdate
		}
		if d.countOnly {
			return true
		}
		d.change = Change{Op: d.op}
		if d.change.Before, d.err = d.side(d.fromRB, d.resF); d.err != nil {
			return false
		}
		if d.change.After, d.err = d.side(d.toRB, d.resT); d.err != nil {
			return false
		}
		if d.op == OpUpdate {
			d.change.Changed = d.changedColumns()
		}
		return true
	}
	if err := d.m.err(); err != nil {
		d.err = fmt.Errorf("snapshot: diffing %s: %w", d.from.ds.name, err)
	}
	return false
}

// changedColumns names the columns of an update that differ between
// d.resF and d.resT (both in column name order), as Change.Changed orders
// them. It compares the stored encodings, as sameResolved does, so an
// update always names at least one column.
func (d *diffIter) changedColumns() []string {
	differ := map[string]bool{}
	f, t := d.resF, d.resT
	for len(f) > 0 || len(t) > 0 {
		switch c := compareNames(f, t); {
		case c < 0:
			differ[string(f[0].name)] = true
			f = f[1:]
		case c > 0:
			differ[string(t[0].name)] = true
			t = t[1:]
		default:
			if !bytes.Equal(f[0].value, t[0].value) {
				differ[string(f[0].name)] = true
			}
			f, t = f[1:], t[1:]
		}
	}
	out := make([]string, 0, len(differ))
	for _, names := range [][]string{d.toRB.names, d.fromRB.names} {
		for _, n := range names {
			if differ[n] {
				out = append(out, n)
				delete(differ, n)
			}
		}
	}
	return out
}

// compareNames orders the heads of two resolved column lists by name; an
// empty list sorts after any name.
func compareNames(a, b []resolvedCol) int {
	switch {
	case len(a) == 0:
		return 1
	case len(b) == 0:
		return -1
	}
	return bytes.Compare(a[0].name, b[0].name)
}

// side builds one side of a change from its resolved columns, nil when
// the row is absent on that side, and sets the change's key from it.
func (d *diffIter) side(rb *rowBuilder, res []resolvedCol) (*Row, error) {
	if len(res) == 0 {
		return nil, nil
	}
	row, err := rb.build(res)
	if err != nil {
		return nil, err
	}
	d.change.Key = row.Key
	return &row, nil
}

func (d *diffIter) Change() Change { return d.change }

func (d *diffIter) Err() error { return d.err }

func (d *diffIter) Close() error {
	if d.closed {
		return d.err
	}
	d.closed = true
	if err := d.m.close(); err != nil && d.err == nil {
		d.err = err
	}
	d.from.Close()
	d.to.Close()
	return d.err
}
