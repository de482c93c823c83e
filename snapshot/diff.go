package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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
// ErrInvalidArgument (a version <= 0), ErrTableRequired (a dataset of
// named tables: diff one with TableDiff, or list them with DiffTables).
func (db *DB) Diff(ctx context.Context, dataset string, from, to int64) (DiffIterator, error) {
	return db.newDiff(ctx, dataset, "", false, from, to, false)
}

// TableDiff streams the changes of the table table of a dataset from
// version from to version to, as Diff; ErrTableNotFound when either
// version lacks the table (DiffTables counts a table added or dropped),
// ErrTableReplaced when the table was dropped and added again between
// them (DiffTables counts it as replaced).
func (db *DB) TableDiff(ctx context.Context, dataset, table string, from, to int64) (DiffIterator, error) {
	return db.newDiff(ctx, dataset, table, true, from, to, false)
}

// DiffCounts counts the changes from version from to version to, as Diff
// would stream them, without building rows.
func (db *DB) DiffCounts(ctx context.Context, dataset string, from, to int64) (DiffStats, error) {
	return db.diffCounts(ctx, dataset, "", false, from, to)
}

// TableDiffCounts counts the changes of one table, as TableDiff would
// stream them.
func (db *DB) TableDiffCounts(ctx context.Context, dataset, table string, from, to int64) (DiffStats, error) {
	return db.diffCounts(ctx, dataset, table, true, from, to)
}

func (db *DB) diffCounts(ctx context.Context, dataset, table string, qualified bool, from, to int64) (DiffStats, error) {
	d, err := db.newDiff(ctx, dataset, table, qualified, from, to, true)
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

// oneSidedTable is the error of a diff of a table that version holds
// and version lacks (added or dropped between them): it has no diff of
// its rows, and the error says where its changes are, rather than only
// that one version lacks it.
func oneSidedTable(dataset, table string, holds, lacks int64) error {
	return fmt.Errorf("%w: %q: version %d of %s holds the table, version %d does not (it was added or dropped between them): its rows at version %d are all its changes; the dataset's diff counts (stats_only) count it",
		ErrTableNotFound, table, holds, dataset, lacks, holds)
}

// replacedTable is the error of a diff of a table whose versions from
// and to hold different tables of its name (dropped and added again
// between them): their rows are not compared, and the error says what
// the dataset's diff counts of it.
func replacedTable(dataset, table string, from, to VersionInfo) error {
	return fmt.Errorf("%w: %q: version %d of %s holds a table of that name (%d rows keyed by %s), version %d another one (%d rows keyed by %s), not compared row by row; the dataset's diff counts (stats_only) count it as replaced: its rows at version %d deleted, those at version %d inserted",
		ErrTableReplaced, table, from.Version, dataset, from.Stats.Rows, strings.Join(from.Schema.Key, ", "),
		to.Version, to.Stats.Rows, strings.Join(to.Schema.Key, ", "), from.Version, to.Version)
}

// newDiff opens one raw scan of every partition up to the newer version,
// each row resolved at both versions (txn.V2, txn.V3), and where it can,
// the scans of the cells between the versions that name the only rows to
// resolve (diff_changed.go); two Readers pin the versions until Close.
// With countOnly the iterator classifies rows without building them
// (Change is not filled).
func (db *DB) newDiff(ctx context.Context, name, table string, qualified bool, from, to int64, countOnly bool) (*diffIter, error) {
	if from <= 0 || to <= 0 {
		return nil, fmt.Errorf("%w: versions must be positive", ErrInvalidArgument)
	}
	rf, err := db.openReader(ctx, name, table, qualified, At{Version: from})
	if err != nil {
		if !qualified && errors.Is(err, ErrTableRequired) {
			return nil, db.diffTableRequired(ctx, name, from, to, err)
		}
		if qualified && errors.Is(err, ErrTableNotFound) {
			if rt, err2 := db.openReader(ctx, name, table, qualified, At{Version: to}); err2 == nil {
				rt.Close()
				return nil, oneSidedTable(name, table, to, from)
			}
		}
		return nil, err
	}
	rt, err := db.openReader(ctx, name, table, qualified, At{Version: to})
	if err != nil {
		rf.Close()
		if qualified && errors.Is(err, ErrTableNotFound) {
			return nil, oneSidedTable(name, table, from, to)
		}
		return nil, err
	}
	if !slices.Equal(rf.tables, rt.tables) {
		err := replacedTable(name, table, rf.info, rt.info)
		rf.Close()
		rt.Close()
		return nil, err
	}
	hi := rf
	if to > from {
		hi = rt
	}
	// Every version up to the newer one: the older version's state may
	// lie under any number of newer row versions.
	m, err := openPartitions(ctx, db.st, rf.tables, store.ScanOptions{ReadOptions: hi.opts}, newRowReader)
	if err != nil {
		rf.Close()
		rt.Close()
		return nil, fmt.Errorf("snapshot: diffing %s %d..%d: %w", name, from, to, err)
	}
	d := &diffIter{from: rf, to: rt, m: m, countOnly: countOnly}
	// Only the rows with cells between the versions, where that is sound
	// (diff_changed.go).
	if d.cand, err = openChanged(ctx, db.st, rf.tables, rf.vis, rt.vis); err != nil {
		d.Close()
		return nil, fmt.Errorf("snapshot: diffing %s %d..%d: %w", name, from, to, err)
	}
	d.fromRB = newRowBuilder(rf.info.Schema, rf.dict, rf.keyIdx, rf.allIdx)
	d.toRB = newRowBuilder(rt.info.Schema, rt.dict, rt.keyIdx, rt.allIdx)
	d.n = max(rf.n, rt.n)
	// The dictionary only grows: the longer plan's names hold the other's.
	d.names = rf.names
	if len(rt.names) > len(d.names) {
		d.names = rt.names
	}
	d.names = d.names[:d.n:d.n]
	return d, nil
}

// diffTableRequired is the ErrTableRequired of an unqualified diff of a
// dataset of named tables: it names the tables of both versions, so that
// a table added or dropped between them is among the tables to name, not
// only those of version from (err, the reader's error, when either
// version cannot be described).
func (db *DB) diffTableRequired(ctx context.Context, name string, from, to int64, err error) error {
	vf, err1 := db.VersionInfo(ctx, name, from)
	vt, err2 := db.VersionInfo(ctx, name, to)
	if err1 != nil || err2 != nil {
		return err
	}
	names := append(vf.TableNames(), vt.TableNames()...)
	slices.Sort(names)
	return fmt.Errorf("%w: %s", ErrTableRequired, someTables(slices.Compact(names)))
}

// diffIter implements DiffIterator.
type diffIter struct {
	from, to     *Reader
	m            *mergedRows[*rowReader]
	cand         *changedRows // the rows to resolve; nil: every row of m
	fromRB, toRB *rowBuilder
	n            int      // columns of the dictionary
	names        []string // the dictionary's column names
	countOnly    bool
	stF, stT     resolvedRow
	tmp          resolvedRow // scratch of resolveMerged
	alloc        rowAlloc    // the memory of the rows of the changes
	op           ChangeOp
	change       Change
	err          error
	closed       bool
}

// changed lists the names of the columns whose value differs between the
// two states or that one side lacks (compared as stored); with first it
// stops at the first.
func (d *diffIter) changed(first bool) []string {
	var out []string
	for i := 0; i < d.n; i++ {
		if !bytes.Equal(d.stF.value(i), d.stT.value(i)) {
			out = append(out, d.names[i])
			if first {
				return out
			}
		}
	}
	return out
}

func (d *diffIter) Next() bool {
	if d.closed || d.err != nil {
		return false
	}
	for d.advance() {
		if d.err = resolveMerged(d.m, d.from.vis, d.n, &d.stF, &d.tmp); d.err != nil {
			return false
		}
		if d.err = resolveMerged(d.m, d.to.vis, d.n, &d.stT, &d.tmp); d.err != nil {
			return false
		}
		switch {
		case !d.stF.present() && !d.stT.present():
			continue
		case !d.stF.present():
			d.op = OpInsert
		case !d.stT.present():
			d.op = OpDelete
		case len(d.changed(true)) == 0:
			continue
		default:
			d.op = OpUpdate
		}
		if d.countOnly {
			return true
		}
		d.change = Change{Op: d.op}
		if d.change.Before, d.err = d.side(d.fromRB, &d.stF); d.err != nil {
			return false
		}
		if d.change.After, d.err = d.side(d.toRB, &d.stT); d.err != nil {
			return false
		}
		if d.op == OpUpdate {
			d.change.Changed = d.changedColumns()
		}
		return true
	}
	err := d.m.err()
	if err == nil && d.cand != nil {
		err = d.cand.err()
	}
	if err != nil {
		d.err = fmt.Errorf("snapshot: diffing %s: %w", d.from.ds.name, err)
	}
	return false
}

// advance moves m to the next row to resolve: the next row of the walk,
// or the next candidate of a time-bound diff.
func (d *diffIter) advance() bool {
	if d.cand != nil {
		return d.cand.next(d.m)
	}
	return d.m.next()
}

// changedColumns names the columns of an update that differ between the
// two sides, as Change.Changed orders them. It compares the stored
// encodings, so an update always names at least one column.
func (d *diffIter) changedColumns() []string {
	differ := map[string]bool{}
	for _, n := range d.changed(false) {
		differ[n] = true
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

// side builds one side of a change from its state, nil when the row is
// absent on that side, and sets the change's key from it.
func (d *diffIter) side(rb *rowBuilder, st *resolvedRow) (*Row, error) {
	if !st.present() {
		return nil, nil
	}
	row, err := rb.build(st, &d.alloc)
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
	if d.cand != nil {
		if err := d.cand.close(); err != nil && d.err == nil {
			d.err = err
		}
	}
	d.from.Close()
	d.to.Close()
	return d.err
}
