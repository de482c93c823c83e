package source

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// Connector is one connection type ("mysql", "postgres", "sqlite"),
// registered by name with Register, after database/sql's sql.Register and
// driver.Driver. The required interface is small; a Connector may also
// implement ReadOptioner and FileChecker, and a Source the optional capabilities Tester,
// ResourceLister, IdleCloser and PointOpener, found by type assertion (as
// database/sql finds driver.Pinger).
type Connector interface {
	// Options declares the options the type accepts; anything else is
	// rejected with an *OptionError naming the key.
	Options() []OptionDef
	// Validate checks option combinations that single options cannot
	// (for example "dsn" with "host"); it returns *OptionError values with
	// unprefixed keys, joined. Secrets are not resolved yet.
	Validate(opts OptionValues) error
	// Open opens a handle. cfg.Options have their secrets resolved. ctx is
	// for dialling only (database/sql's Connector rule); a lazy pool may
	// not dial at all.
	Open(ctx context.Context, cfg SourceConfig) (Source, error)
}

// ReadOptioner is an optional Connector capability: options an adapter
// gives for its own read of its resource (the adapter's source_options),
// beside the options of its data connection, which all its adapters
// share: for a snapstore dataset, which columns and which key range a
// derived copy reads. An adapter of a type without it takes no
// source_options.
type ReadOptioner interface {
	// ReadOptions declares the options; anything else is rejected with an
	// *OptionError naming the key.
	ReadOptions() []OptionDef
	// ValidateRead checks combinations single options cannot, as
	// Connector.Validate does; checks that need the resource (a column
	// that exists) are OpenTable's.
	ValidateRead(opts OptionValues) error
}

// FileChecker is an optional Connector capability: whether the file a
// file option (OptionDef.File) names holds what the option wants, told
// from its content (a SQLite database's header). The adapters ask it of
// a connection defined through the API before Open, where a file that
// cannot be used must be refused with the same error whatever it holds.
type FileChecker interface {
	// CheckFile reads the file of option key from r (a regular file, open
	// for reading) and returns an error saying why it cannot be used.
	CheckFile(key string, r io.Reader) error
}

// SourceConfig is what Connector.Open gets.
type SourceConfig struct {
	// Name is the data connection's name, for logs.
	Name string
	// Options are typed, with secrets resolved (Secret values; call
	// Reveal only to hand them to a driver).
	Options OptionValues
	// Pool holds the pool limits of a pooled connection.
	Pool PoolOptions
	// Logger is never nil.
	Logger *slog.Logger
}

// Source is an open data connection handle: a pool, or one connection for a
// single-use connection. Safe for concurrent use.
type Source interface {
	// OpenTable starts a consistent read of one table or view. The reader
	// holds one pinned connection and one read-only transaction until
	// Close. Errors: ErrResourceNotFound, ErrNoKey, ErrUnsupportedType,
	// ErrSourceUnavailable, ErrSourceAuth (wrapped).
	OpenTable(ctx context.Context, req TableRequest) (TableReader, error)
	// Close closes the handle; readers still open keep working until
	// their own Close only when the type says so (the service never
	// closes a Source while a reader is open).
	Close() error
}

// Tester is an optional Source capability: a connection test. A failed
// test is a TestResult with OK false and Cause set.
type Tester interface {
	Test(ctx context.Context) TestResult
}

// ResourceLister is an optional Source capability: the tables and views
// reachable through the connection.
type ResourceLister interface {
	Resources(ctx context.Context) ([]Resource, error)
}

// DefaultSchemaer is an optional Source capability: the schema in which
// a table named without one is looked up first (PostgreSQL's
// current_schema()), as a TableRequest's Resource is resolved, so that a
// selection's resources (Catalog.DefaultSchema) mean the tables resource
// would. A source whose listed resources share one schema needs none.
type DefaultSchemaer interface {
	DefaultSchema(ctx context.Context) (string, error)
}

// IdleCloser is an optional Source capability: close idle pooled
// connections now (called when a connection is replaced or dropped while
// runs still hold it).
type IdleCloser interface {
	CloseIdle()
}

// TableRequest asks for one table.
type TableRequest struct {
	// Resource is "table", "schema.table", or quoted parts as the source
	// type quotes identifiers ("`my.db`.`t`" for MySQL).
	Resource string
	// KeyColumns, when set, are the row key columns (they must exist and
	// be unique and not NULL; duplicates fail the run). When empty the key
	// is the primary key, else the first unique key over NOT NULL
	// columns, else ErrNoKey.
	KeyColumns []string
	// ChunkRows is the keyset-pagination chunk size in rows; 0 means the
	// connection's chunk_rows option or 5000.
	ChunkRows int
	// Options are the adapter's read options (ReadOptioner), parsed and
	// validated; nil when it gives none. OpenTable reports one that does
	// not fit the resource as an *OptionError naming its key.
	Options OptionValues
	// Snapshot, when set, is a token from the ExportSnapshot of a reader of
	// the same Source that is still open (SnapshotSharer): this read sees
	// the same point in time. Only sources whose readers are
	// SnapshotSharers take it; others fail.
	Snapshot string
	// Dataset is the dataset the read feeds (the adapter's), and
	// DatasetCreated its creation time when it exists: a source that is
	// itself a snapstore dataset refuses to read that very dataset (a
	// dataset cannot be its own source).
	Dataset        string
	DatasetCreated time.Time
}

// TableReader streams the rows of one table in key order, as
// []snapshot.Value aligned with Schema().Columns. Not safe for concurrent
// use; must be closed.
type TableReader interface {
	// Schema is the table's schema, Key set.
	Schema() snapshot.Schema
	// Table describes the table read (schema, name, type, estimated rows).
	Table() Resource
	// Next advances to the next row; false at the end or on error.
	Next(ctx context.Context) bool
	// Values returns the current row. The slice and the Bytes of its
	// values belong to the reader and are valid only until the next Next.
	Values() []snapshot.Value
	// Err returns the error that stopped Next, if any.
	Err() error
	// Close ends the read transaction and returns the connection.
	Close() error
}

// SnapshotSharer is an optional TableReader capability: ExportSnapshot
// returns a token naming the reader's point in time, and a
// TableRequest.Snapshot of that token makes another OpenTable of the same
// Source read at the same point (P1), while the exporting reader stays
// open. A run that reads with several connections opens the first reader
// and passes its token to the others.
type SnapshotSharer interface {
	ExportSnapshot(ctx context.Context) (string, error)
}

// NoSharedSnapshot refuses a TableRequest.Snapshot in the OpenTable of a
// source whose readers are not SnapshotSharers.
func NoSharedSnapshot(req TableRequest) error {
	if req.Snapshot != "" {
		return fmt.Errorf("adapters: this connection type cannot read in a shared snapshot (%q)", req.Snapshot)
	}
	return nil
}

// Checksummer is an optional TableReader capability: checksums computed by
// the source inside the read's consistent snapshot, and reads of key
// ranges, for a table whose key order the source and snapstore agree on.
// A key is given as its values in key column order.
type Checksummer interface {
	// ChecksumSignature names the table's shape and the checksum
	// expression; digests of another signature are not compared.
	ChecksumSignature() string
	// Chunkable reports whether the key allows chunk checksums and range
	// reads, and when not, why (RangesRefused, KeyOrderRefused, ...): the
	// run record's reason for reading the table in full.
	Chunkable() (ok bool, why string)
	// ChunkChecksum returns the rows and the checksum of the keys after lo
	// (nil: from the first) up to hi included (nil: to the last).
	ChunkChecksum(ctx context.Context, lo, hi []snapshot.Value) (int64, uint64, error)
	// ReadRange makes Next read the keys after lo up to hi included.
	ReadRange(lo, hi []snapshot.Value)
}

// DiffReader is an optional TableReader capability of a source that keeps
// versions of its own (a snapstore dataset): the changes from an earlier
// version of the same source to the version the reader reads, which a run
// applies to its dataset's current version when that is a copy of the
// earlier one, instead of reading every row.
type DiffReader interface {
	// ReadDiff opens the changes from the version from names, the resource
	// (Table().Name) a run recorded for its current version, or for a
	// table read at a point the point's position (PointInfo.Position) a
	// run of several tables recorded, whose checksum (the table's) is
	// fromChecksum. ok is false, with no error, when the source
	// cannot give them: from names another dataset, another derivation or
	// a version no longer kept, or that version's schema or checksum
	// differs (the caller then reads in full). A derived reader's changes
	// are derived too: keys outside its range left out, its columns only.
	ReadDiff(ctx context.Context, from, fromChecksum string) (c Changes, ok bool, err error)
	// Checksum is the checksum of the version the reader reads
	// (snapshot.RunStats.Checksum): what the current version with the
	// changes applied must have; "" when the reader reads a derivation of
	// it (some columns, a key range: the adapter's read options), whose
	// checksum only the run computes, so the result is not compared.
	Checksum() string
}

// Changes streams the changes of a DiffReader in key order. Not safe for
// concurrent use; must be closed.
type Changes interface {
	// Next advances to the next change; false at the end or on error.
	Next(ctx context.Context) bool
	// Key returns the current change's key values, in key order.
	Key() []snapshot.Value
	// Deleted reports whether the change deletes its key; else Values is
	// the row after it (an insert or an update), aligned with the
	// reader's schema.
	Deleted() bool
	// Values returns the row after the change; valid until the next Next.
	Values() []snapshot.Value
	// Err returns the error that stopped Next, if any.
	Err() error
	// Close ends the stream.
	Close() error
}
