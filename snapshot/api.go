package snapshot

// This file holds the public surface of package snapshot that packages
// adapters and server build on; the bodies live in the other files.

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// Options configure a DB. Zero fields take the defaults given.
type Options struct {
	// Logger receives structured logs with keys dataset, version, txn; nil
	// discards.
	Logger *slog.Logger
	// Registerer registers the package's metrics (snapstore_snapshot_runs_total
	// by result, snapstore_snapshot_cells_written_total,
	// snapstore_snapshot_gc_cells_deleted_total,
	// snapstore_snapshot_commit_duration_seconds,
	// snapstore_snapshot_readers_open, and txn's gauges); nil registers
	// none. Close unregisters them, so a DB can be reopened with the same
	// Registerer.
	Registerer prometheus.Registerer
	// Partitions is the number of hash partitions of a new dataset's row-key
	// space; default 1. Fixed per dataset at creation.
	Partitions int
	// ReadOnly opens the DB of a process that reads a store written by
	// another one (doc.go S1, S2): Open writes nothing, every write
	// returns ErrReadOnly, and reads refresh the view per RefreshInterval.
	ReadOnly bool
	// RefreshInterval is, for a ReadOnly DB, how old its view of the
	// datasets and of the txn sets may be when a read (Datasets, Dataset,
	// Versions, VersionInfo, Reader, Diff) starts; an older view is
	// refreshed first (DB.Refresh). Default DefaultRefreshInterval (1 s);
	// negative: only explicit Refresh calls. Ignored by writer DBs.
	RefreshInterval time.Duration
	// WriterLease, when > 0, makes Open take the store's writer lease for
	// this long (renewed every third of it) and refuse with
	// ErrWriterLeaseHeld while another process holds it; writes fail with
	// ErrWriterLeaseLost once it is lost (doc.go S1, S3). 0 (default): no
	// lease, for stores only one process can open (store/pebble). Clocks
	// of the processes must agree to well within it.
	WriterLease time.Duration
	// now is the clock, injectable by tests; default time.Now.
	now func() time.Time
	// batchSize is the number of mutations per data batch, a test hook;
	// default batchSize (4096).
	batchSize int
	// hook, when set, is called at named points of a run and of GC, with a
	// count (rows put, batches applied); the crash test kills the process
	// there.
	hook func(point string, n int64)
}

// DB is the set of SNAPSHOT datasets kept in one store. Safe for concurrent
// use.
type DB struct {
	st      store.Store
	txm     *txn.Manager
	meta    string
	logger  *slog.Logger
	opts    Options
	metrics *metrics
	closed  atomic.Bool

	openReaders atomic.Int64

	// Sharing (shared.go). owner names this DB in the writer lease;
	// leaseUntil is the lease's expiry (Unix ns) as last renewed; leaseLost
	// is set for good when another owner took it; stopc and donec stop
	// and await the renewal loop. refreshMu serialises refreshes, and
	// refreshedAt is the start (Unix ns) of the last one.
	owner       string
	leaseUntil  atomic.Int64
	leaseLost   atomic.Bool
	stopc       chan struct{}
	donec       chan struct{}
	refreshMu   sync.Mutex
	refreshedAt atomic.Int64

	// mu guards datasets (the map, not the datasets).
	mu       sync.Mutex
	datasets map[string]*dataset
}

// Close closes the DB (not the store). Open runs are aborted, and the
// writer lease, if held, is released.
func (db *DB) Close() error { return db.closeImpl() }

// Refresh makes a ReadOnly DB see what the writer process committed,
// aborted, rolled back, tagged, collected or dropped since Open or the
// last refresh (doc.go S2): it rereads every dataset's metadata and the
// txn sets. Readers already open keep their pinned version (txn V4). On a
// writer DB it does nothing: its memory is the truth (S1).
func (db *DB) Refresh(ctx context.Context) error { return db.refresh(ctx) }

// ReadOnly reports whether the DB was opened read-only (Options.ReadOnly,
// or by its SharedStore): every write returns ErrReadOnly, so periodic
// work that writes (GC, scheduled runs) has nothing to do here.
func (db *DB) ReadOnly() bool { return db.opts.ReadOnly }

// Column is one column of a dataset's schema.
type Column struct {
	// Name is the source column name, case preserved.
	Name string `json:"name"`
	// Kind is how values are stored.
	Kind Kind `json:"kind"`
	// SourceType is the source's declared type, e.g. "decimal(5,2)",
	// informational.
	SourceType string `json:"source_type,omitempty"`
	// Nullable reports whether the source allows NULL.
	Nullable bool `json:"nullable"`
}

// Schema is the ordered column list of one version plus its key columns.
type Schema struct {
	Columns []Column `json:"columns"`
	// Key lists the names of the key columns in key order (a subset of
	// Columns).
	Key []string `json:"key"`
}

// Retention says which committed versions a dataset keeps (DESIGN 5): every
// version younger than TTL and at least the newest MinVersions; the current
// and tagged versions always.
type Retention struct {
	// TTL is the age, from commit time, up to which versions are kept; 0
	// means forever.
	TTL time.Duration `json:"ttl"`
	// MinVersions is the number of newest versions always kept; default 1
	// (the current version), values < 1 mean 1.
	MinVersions int `json:"min_versions"`
}

// Guard is a commit guard configuration.
type Guard struct {
	// AllowEmpty lets a run commit 0 rows.
	AllowEmpty bool `json:"allow_empty"`
	// MaxShrink is the largest fraction (0..1) of the current version's rows
	// a run may delete; default 0.5; 1 disables the check.
	MaxShrink float64 `json:"max_shrink"`
}

// SourceInfo records where a version came from.
type SourceInfo struct {
	Adapter    string `json:"adapter,omitempty"`
	Connection string `json:"connection,omitempty"`
	// Revision is the data connection's revision used by the run.
	Revision int64  `json:"connection_revision,omitempty"`
	Resource string `json:"resource,omitempty"`
	RunID    string `json:"run_id,omitempty"`
}

// RunStats counts what one run did.
//
// Rows counts the rows Put, Inserted/Updated/Unchanged classify them
// against the previous version, Deleted counts rows the source no longer
// has; BytesWritten is in bytes (row key + column + value + 8 per cell or
// marker written); doc.go D6.
type RunStats struct {
	Rows         int64 `json:"rows"`
	Inserted     int64 `json:"inserted"`
	Updated      int64 `json:"updated"`
	Deleted      int64 `json:"deleted"`
	Unchanged    int64 `json:"unchanged"`
	BytesWritten int64 `json:"bytes_written"`
	// Checksum is an order-independent checksum of the version's rows, as
	// 16 hex digits.
	Checksum string `json:"checksum"`
}

// VersionInfo describes one committed version.
type VersionInfo struct {
	Dataset     string     `json:"dataset"`
	Version     int64      `json:"version"`
	CommittedAt time.Time  `json:"committed_at"`
	Source      SourceInfo `json:"source"`
	Stats       RunStats   `json:"stats"`
	Schema      Schema     `json:"schema"`
	Tags        []string   `json:"tags,omitempty"`
	Current     bool       `json:"current"`
}

// DatasetInfo describes a dataset.
type DatasetInfo struct {
	Name       string    `json:"name"`
	CreatedAt  time.Time `json:"created_at"`
	Partitions int       `json:"partitions"`
	// Current is the current version, 0 when nothing was committed.
	Current     int64        `json:"current_version"`
	CurrentInfo *VersionInfo `json:"current,omitempty"`
	Retention   Retention    `json:"retention"`
	Guard       Guard        `json:"guard"`
	// Versions is the number of kept versions.
	Versions int `json:"versions"`
}

// DatasetConfig is what a run or an operator sets on a dataset.
type DatasetConfig struct {
	Name      string
	Retention Retention
	Guard     Guard
}

// RunOptions describe one run.
type RunOptions struct {
	// Schema is the schema of the rows the run will Put; Key must be set.
	Schema Schema
	Source SourceInfo
	// Force commits even when a guard would refuse.
	Force bool
}

// Run is one in-progress write of a dataset's next version. Not safe for
// concurrent use. See run.go.
type Run struct{ runState }

// BeginRun starts a run of cfg.Name (creating the dataset on first use and
// updating its retention and guard). ErrRunInProgress if one is running;
// ErrKeyChanged if opts.Schema.Key differs from the dataset's.
func (db *DB) BeginRun(ctx context.Context, cfg DatasetConfig, opts RunOptions) (*Run, error) {
	return db.beginRun(ctx, cfg, opts)
}

// TxnID returns the run's transaction id, the version it will commit.
func (r *Run) TxnID() int64 { return r.id }

// Put adds one source row, values aligned with RunOptions.Schema.Columns. The
// run copies what it keeps; vals may be reused after Put returns.
// ErrBadKey for a NULL key column. Rows may come in any order (ascending
// key order is fastest, doc.go D5); a key given twice is ErrBadKey: from
// Put when its first occurrence came before the source order first broke
// (phase A), else from Commit, which then aborts the run. After ErrBadKey, ErrBadSchema or
// ErrInvalidArgument from Put the run goes on without the row; after any
// other error it can only be aborted.
func (r *Run) Put(ctx context.Context, vals []Value) error { return r.put(ctx, vals) }

// Stats returns the counts so far (live progress). Unlike the other
// methods of Run it may be called from any goroutine; while Put runs the
// counts lag by up to 1024 rows, after Commit or Abort they are final (a
// run's final Deleted count is known only at Commit).
func (r *Run) Stats() RunStats { return r.liveStats() }

// Commit finishes the run: writes delete markers for rows not seen, checks
// the guards, and makes the run's id the dataset's current version in one
// atomic durable metadata write. On any error the run is aborted and the
// current version is unchanged.
func (r *Run) Commit(ctx context.Context) (VersionInfo, error) {
	return r.commit(ctx)
}

// Abort ends the run without committing; its transaction becomes invalid.
// Safe to call after Commit (no-op).
func (r *Run) Abort(ctx context.Context, reason string) error { return r.abort(ctx, reason) }

// At selects the version a reader is pinned to. The zero At means the
// current version. At most one field may be set.
type At struct {
	// Version is a kept version (a transaction id).
	Version int64
	// AsOf selects the newest kept version committed at or before it.
	AsOf time.Time
	// Tag selects the version a tag names.
	Tag string
}

// Row is one row as read.
type Row struct {
	// Key holds the key column values in key order.
	Key []Value
	// Columns names the returned columns, in schema order. The slice may be
	// shared by the rows of one read: do not modify it.
	Columns []string
	// Values aligns with Columns.
	Values []Value
}

// Reader reads one dataset at one pinned version. It keeps that version from
// being collected until Close. Safe for concurrent use. See reader.go.
type Reader struct{ readerState }

// Reader pins a version of dataset: at.Version, the newest kept version
// committed at or before at.AsOf, the version tagged at.Tag, or the
// current one. Errors: ErrDatasetNotFound, ErrNoVersion, ErrVersionNotKept
// (collected by GC, rolled back, never committed, or nothing kept as of
// the time), ErrTagNotFound, ErrInvalidArgument (more than one field of at
// set, a negative version).
func (db *DB) Reader(ctx context.Context, dataset string, at At) (*Reader, error) {
	if err := db.maybeRefresh(ctx); err != nil {
		return nil, err
	}
	return db.reader(ctx, dataset, at)
}

// Version describes the pinned version.
func (r *Reader) Version() VersionInfo { return r.info }

// Close unpins the version.
func (r *Reader) Close() error { return r.close() }

// ParseKey converts the text of each key column (as given in a URL path
// segment) to typed key values using the pinned schema. ErrBadKey when the
// count or a value does not fit.
func (r *Reader) ParseKey(parts []string) ([]Value, error) { return r.parseKey(parts) }

// Get reads one row. columns selects columns by name (nil means all).
// ErrRowNotFound when absent at the pinned version.
func (r *Reader) Get(ctx context.Context, key []Value, columns []string) (Row, error) {
	return r.get(ctx, key, columns)
}

// ScanOptions select rows of an ordered scan. Start, End and Prefix are key
// prefixes (the first n key columns).
type ScanOptions struct {
	Start []Value // first key included
	End   []Value // first key excluded
	// Prefix restricts the scan to keys starting with these values.
	Prefix []Value
	// Columns selects columns by name; nil means all.
	Columns []string
	// Limit is the most rows returned; 0 means no limit.
	Limit int
	// PageToken continues a previous scan; it carries the pinned version,
	// which must equal the reader's.
	PageToken string
}

// RowIterator walks rows in row key order. Not safe for concurrent use;
// must be closed.
type RowIterator interface {
	// Next advances to the next row; false at the end, at the limit, or
	// on error (see Err).
	Next() bool
	// Row returns the current row; its Values own their bytes.
	Row() Row
	// NextPageToken returns a token resuming after the last row returned
	// when the scan stopped at its limit with rows left, or "" when the
	// range is exhausted.
	NextPageToken() string
	// Err returns the error that stopped the scan, if any.
	Err() error
	// Close releases the scan and returns Err.
	Close() error
}

// Scan starts an ordered scan at the pinned version.
func (r *Reader) Scan(ctx context.Context, opts ScanOptions) (RowIterator, error) {
	return r.scan(ctx, opts)
}

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
	if err := db.maybeRefresh(ctx); err != nil {
		return nil, err
	}
	return db.diff(ctx, dataset, from, to)
}

// DiffCounts counts the changes from version from to version to, as Diff
// would stream them, without building rows.
func (db *DB) DiffCounts(ctx context.Context, dataset string, from, to int64) (DiffStats, error) {
	return db.diffCounts(ctx, dataset, from, to)
}

// Datasets lists every dataset, by name.
func (db *DB) Datasets(ctx context.Context) ([]DatasetInfo, error) {
	if err := db.maybeRefresh(ctx); err != nil {
		return nil, err
	}
	return db.datasetsImpl()
}

// Dataset describes one dataset. ErrDatasetNotFound.
func (db *DB) Dataset(ctx context.Context, name string) (DatasetInfo, error) {
	if err := db.maybeRefresh(ctx); err != nil {
		return DatasetInfo{}, err
	}
	return db.datasetImpl(name)
}

// Versions lists the kept versions of a dataset, newest first.
func (db *DB) Versions(ctx context.Context, dataset string) ([]VersionInfo, error) {
	if err := db.maybeRefresh(ctx); err != nil {
		return nil, err
	}
	return db.versionsImpl(dataset)
}

// VersionInfo describes one kept version. ErrVersionNotKept.
func (db *DB) VersionInfo(ctx context.Context, dataset string, version int64) (VersionInfo, error) {
	if err := db.maybeRefresh(ctx); err != nil {
		return VersionInfo{}, err
	}
	return db.versionInfoImpl(dataset, version)
}

// SetConfig updates a dataset's retention and guard.
func (db *DB) SetConfig(ctx context.Context, cfg DatasetConfig) error {
	return db.setConfigImpl(ctx, cfg)
}

// DropDataset deletes a dataset, all its versions and cells, and prunes
// its invalid transactions. ErrRunInProgress while a run, GC or rollback
// holds it; ErrDatasetNotFound. Readers still open get ErrDatasetNotFound.
func (db *DB) DropDataset(ctx context.Context, name string) error { return db.dropImpl(ctx, name) }

// Tag names a kept version; tagged versions are exempt from GC. Re-tagging
// moves the tag.
func (db *DB) Tag(ctx context.Context, dataset, tag string, version int64) error {
	return db.tagImpl(ctx, dataset, tag, version)
}

// Untag removes a tag. ErrTagNotFound.
func (db *DB) Untag(ctx context.Context, dataset, tag string) error {
	return db.untagImpl(ctx, dataset, tag)
}

// Rollback makes an older kept version current again, in one durable
// metadata write; the versions after it (kept ones, and expired ones whose
// cells may still be visible, doc.go G7) become invalid transactions, so
// no later read or run sees their cells, and tags on them are removed.
// Readers already open keep what they pinned. Errors: ErrDatasetNotFound,
// ErrVersionNotKept, ErrRunInProgress (a run, GC or drop holds the
// dataset).
func (db *DB) Rollback(ctx context.Context, dataset string, to int64) (VersionInfo, error) {
	return db.rollbackImpl(ctx, dataset, to)
}

// GCReport says what a garbage collection did or, dry, would do.
type GCReport struct {
	Dataset string `json:"dataset"`
	DryRun  bool   `json:"dry_run"`
	// VersionsExpired lists the versions retention expired, ascending.
	VersionsExpired []int64 `json:"versions_expired"`
	// CellsDeleted counts cell versions and markers removed.
	CellsDeleted int64 `json:"cells_deleted"`
	// BytesReclaimed estimates the bytes removed: row key + column +
	// value + 8 per cell, before storage compression.
	BytesReclaimed int64 `json:"bytes_reclaimed"`
	// InvalidTxnsPruned counts invalid transactions pruned (txn I6).
	InvalidTxnsPruned int `json:"invalid_txns_pruned"`
}

// GC applies retention to a dataset and deletes exactly the cells no kept
// version can see plus the cells of its invalid transactions, then prunes
// the invalid set (DESIGN 5; doc.go G1-G7 with a worked example). Versions
// pinned by open Readers keep their cells. With dryRun nothing changes and
// the report says what would be deleted. Memory is bounded by one row's
// history. Errors: ErrDatasetNotFound, ErrRunInProgress (a run holds the
// dataset; GC never waits for it).
func (db *DB) GC(ctx context.Context, dataset string, dryRun bool) (GCReport, error) {
	return db.gc(ctx, dataset, dryRun)
}

// Record is a named document kept in the metadata table for packages above
// snapshot (data connections, adapters, run records), which never touch
// storage keys themselves.
type Record struct {
	Kind  string
	Name  string
	Value []byte
}

// PutRecord writes (creates or replaces) a record durably.
func (db *DB) PutRecord(ctx context.Context, kind, name string, value []byte) error {
	return db.putRecordImpl(ctx, kind, name, value)
}

// GetRecord reads a record. ErrRecordNotFound.
func (db *DB) GetRecord(ctx context.Context, kind, name string) ([]byte, error) {
	return db.getRecordImpl(ctx, kind, name)
}

// ListRecords lists the records of a kind in name order.
func (db *DB) ListRecords(ctx context.Context, kind string) ([]Record, error) {
	return db.listRecordsImpl(ctx, kind)
}

// DeleteRecord deletes a record; deleting an absent one is a no-op.
func (db *DB) DeleteRecord(ctx context.Context, kind, name string) error {
	return db.deleteRecordImpl(ctx, kind, name)
}
