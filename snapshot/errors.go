package snapshot

import (
	"errors"
	"fmt"
	"time"

	"github.com/snapstore/snapstore/records"
)

// Errors of package snapshot; check with errors.Is.
var (
	// ErrDatasetNotFound: no dataset of that name (never created, or
	// dropped).
	ErrDatasetNotFound = errors.New("snapshot: dataset not found")
	// ErrNoVersion: the dataset exists but nothing was committed yet.
	ErrNoVersion = errors.New("snapshot: dataset has no committed version")
	// ErrVersionNotKept: the version was collected by GC, rolled back, or
	// never committed; reads never turn it into an empty result.
	ErrVersionNotKept = errors.New("snapshot: version not kept")
	// ErrTagNotFound: no such tag on the dataset.
	ErrTagNotFound = errors.New("snapshot: tag not found")
	// ErrRowNotFound: no row with that key at the pinned version.
	ErrRowNotFound = errors.New("snapshot: row not found")
	// ErrRunInProgress: the dataset's writer slot is held by a run, GC,
	// rollback or drop (D8); retry later.
	ErrRunInProgress = errors.New("snapshot: a run of this dataset is already in progress")
	// ErrGuardRefused: Commit refused the run (0 rows, or too many
	// deletes); the run is aborted and the current version unchanged.
	ErrGuardRefused = errors.New("snapshot: commit guard refused the run")
	// ErrBadKey: a key value that is NULL, of the wrong kind, unparsable,
	// of the wrong count, or given twice in one run.
	ErrBadKey = errors.New("snapshot: bad key")
	// ErrDuplicateKey: a key given twice in one run (the error names the
	// keys with their column names); it is also an ErrBadKey.
	ErrDuplicateKey = fmt.Errorf("%w: key given twice", ErrBadKey)
	// ErrBadSchema: a schema without columns or key, with duplicate or
	// empty names, or a value whose kind is not its column's.
	ErrBadSchema = errors.New("snapshot: bad schema")
	// ErrKeyChanged: a run's key columns differ from the dataset's.
	ErrKeyChanged = errors.New("snapshot: key columns changed")
	// ErrRunClosed: Put or Commit after Commit or Abort.
	ErrRunClosed = errors.New("snapshot: run already committed or aborted")
	// ErrRecordNotFound: GetRecord of an absent record.
	ErrRecordNotFound = records.ErrNotFound
	// ErrBadPageToken: a page token that does not decode, or was made at
	// another version than the reader's.
	ErrBadPageToken = errors.New("snapshot: bad page token")
	// ErrInvalidArgument: any other bad input (names, limits, options).
	ErrInvalidArgument = errors.New("snapshot: invalid argument")
	// ErrClosed: the DB or the Reader is closed.
	ErrClosed = errors.New("snapshot: closed")
	// ErrNotCurrent is returned by Verify when the version named is no
	// longer the dataset's current one (a rollback or another run came
	// first).
	ErrNotCurrent = errors.New("snapshot: version is not the current one")
	// ErrCorrupt is returned when stored data or metadata cannot be
	// decoded; not worth retrying.
	ErrCorrupt = errors.New("snapshot: corrupt data")
	// ErrReadOnly: a write (BeginRun, GC, Rollback, Tag, Untag, SetConfig,
	// DropDataset, PutRecord, DeleteRecord) on a DB opened with
	// Options.ReadOnly; send it to a writer process (doc.go W2).
	ErrReadOnly = errors.New("snapshot: read-only: writes go to a writer process")
	// ErrSlotLost: the dataset's writer slot, held by this DB's run, GC or
	// drop, was taken by another process after it expired without renewal
	// (the store unreachable, or this process paused, for longer than
	// Options.SlotLease; doc.go W3). The operation stopped: a run's commit
	// was refused and nothing of it is visible. Retrying the operation is
	// safe.
	ErrSlotLost = errors.New("snapshot: writer slot lost")
	// ErrOutcomeUnknown: a metadata write failed in a way that may have
	// applied it or may apply it late (store.S9), and the row could not be
	// read back, or the writes kept failing, to learn which. The DB settles
	// the row when the store answers again (fenceRow) and, for a run,
	// keeps the dataset held until it learns the outcome (doc.go D9);
	// reads then show what happened.
	ErrOutcomeUnknown = errors.New("snapshot: outcome unknown")
	// ErrTableRequired: a read, run or diff that names no table, of a
	// dataset of named tables (tables.go); the error names its tables.
	ErrTableRequired = errors.New("snapshot: the dataset holds several tables: name one")
	// ErrTableNotFound: the version read holds no table of that name.
	ErrTableNotFound = errors.New("snapshot: table not found")
	// ErrTableMissing: a run of named tables lacks a table the current
	// version holds, and its options do not allow dropping tables
	// (TablesRunOptions.DropMissing); the error names the tables.
	ErrTableMissing = errors.New("snapshot: a table of the current version is missing from the run")
	// ErrTableReplaced: a diff of one table between two versions that
	// hold different tables of its name, the table dropped and added
	// again between them (a new table, with a new number and maybe
	// another key): their rows are not compared. DiffTables counts such
	// a table as TableReplaced.
	ErrTableReplaced = errors.New("snapshot: the table was dropped and added again between the versions")
)

// noVersionAt is the error of a read as of t that no kept version of
// dataset, created at created, answers: before the dataset was created no
// version existed (ErrNoVersion, a 404); after, either none had been
// committed yet or GC collected those, which the kept versions (kept,
// ascending) do not tell apart (ErrVersionNotKept, a 410), and the error
// says both.
func noVersionAt(dataset string, t, created time.Time, kept []*VersionInfo) error {
	const layout = "2006-01-02T15:04:05.999999Z"
	if t.Before(created) {
		return fmt.Errorf("%w: %s did not exist at %s: it was created at %s", ErrNoVersion, dataset, t.UTC().Format(layout), created.UTC().Format(layout))
	}
	if len(kept) == 0 {
		return fmt.Errorf("%w: %s has no kept version", ErrNoVersion, dataset)
	}
	return fmt.Errorf("%w: %s had no version at %s that is kept: none had been committed by then, or GC collected it; the oldest kept version, %d, was committed at %s",
		ErrVersionNotKept, dataset, t.UTC().Format(layout), kept[0].Version, kept[0].CommittedAt.UTC().Format(layout))
}

// versionNotKept is ErrVersionNotKept for version of dataset, worded so
// that it does not read as collected: a number above current was never
// committed (yet); below, it was never a version of this dataset (ids are
// shared by every dataset) or GC collected it, which the kept versions do
// not tell apart.
func versionNotKept(dataset string, version, current int64) error {
	if version > current {
		return fmt.Errorf("%w: %d is not a version of %s: never committed (the current version is %d)", ErrVersionNotKept, version, dataset, current)
	}
	return fmt.Errorf("%w: %d is not a kept version of %s (never committed, or collected by GC)", ErrVersionNotKept, version, dataset)
}
