package store

import (
	"bytes"
	"context"
	"fmt"
	"math"
)

// CellKind says what a cell is: a value or a delete marker.
type CellKind uint8

const (
	// KindPut is a cell carrying a value.
	KindPut CellKind = 1
	// KindDeleteColumn is a column delete marker (HBase DELETE_COLUMNS): it
	// masks the versions of its column with timestamp <= its own.
	KindDeleteColumn CellKind = 2
	// KindDeleteRow is a row delete marker (HBase DELETE_FAMILY): it masks
	// every column of its row with timestamp <= its own. It is stored and
	// returned with an empty Column.
	KindDeleteRow CellKind = 3
)

// String returns "put", "delete-column" or "delete-row".
func (k CellKind) String() string {
	switch k {
	case KindPut:
		return "put"
	case KindDeleteColumn:
		return "delete-column"
	case KindDeleteRow:
		return "delete-row"
	}
	return "unknown"
}

// MaxTimestamp is the largest timestamp a cell may carry.
const MaxTimestamp = math.MaxInt64

// Cell is one version of one column of one row, or a delete marker.
//
// Slices in a Cell returned by a read belong to the caller unless the method
// says otherwise (Iterator.Cell).
type Cell struct {
	// Row is the row key; never empty.
	Row []byte
	// Column is the column name (HBase qualifier); empty for KindDeleteRow.
	Column []byte
	// Timestamp is the version, >= 0; snapstore stores transaction ids here.
	Timestamp int64
	// Kind is KindPut or a delete marker kind.
	Kind CellKind
	// Value is the cell's value for KindPut, nil for markers. An empty value
	// is a value, distinct from a marker.
	Value []byte
}

// TimeRange selects versions with Min <= timestamp < Max, HBase's half-open
// [min, max) range. The zero value is replaced by AllTime. Max ==
// MaxTimestamp means no upper bound, so a cell at MaxTimestamp is selected
// (HBase's TimeRange.allTime does the same).
//
// A scan with a lower bound (Min > 0) reads the cells written in a span of
// transactions, and a backend may serve it without reading the rest:
// store/pebble skips the SSTables and blocks whose recorded timestamps all
// fall outside the range (block-property filters, as CockroachDB's
// time-bound iterators), store/hbase passes the range to the region
// servers (TScan's timeRange). Such skipping may be coarse inside the
// backend, but what a read returns is exactly the versions in range, never
// more and never fewer, so the cost of a narrow range is about the cells
// in it rather than the table.
type TimeRange struct {
	Min, Max int64
}

// AllTime selects every version.
var AllTime = TimeRange{Min: 0, Max: MaxTimestamp}

// IsZero reports whether r is the zero value.
func (r TimeRange) IsZero() bool { return r.Min == 0 && r.Max == 0 }

// ReadOptions select which versions of a row's columns a read returns.
type ReadOptions struct {
	// TimeRange limits versions; zero means AllTime.
	TimeRange TimeRange
	// MaxVersions is the number of newest versions returned per column
	// (delete markers count as versions, a row delete marker is its own
	// column ""); <= 0 means all.
	MaxVersions int
	// Columns, when non-empty, restricts the read to these columns (row
	// delete markers are always returned).
	Columns [][]byte
}

// ScanOptions are ReadOptions plus the row range of a scan.
type ScanOptions struct {
	ReadOptions
	// Start is the first row key included; nil means the start of the table.
	Start []byte
	// End is the first row key excluded; nil means the end of the table.
	End []byte
}

// Mutation is one change in a Batch.
type Mutation struct {
	// Op says what to do.
	Op MutationOp
	// Cell is the coordinate (and value for OpPut). For OpPut its Kind says
	// whether a value or a delete marker is written.
	Cell Cell
}

// MutationOp is the kind of a Mutation.
type MutationOp uint8

const (
	// OpPut writes Cell (a value or a delete marker) at its coordinate,
	// replacing whatever was there (S4).
	OpPut MutationOp = 1
	// OpDeleteVersion physically removes the single version of (Row, Column,
	// Timestamp), whatever its kind (HBase DELETE_COLUMN, exact version).
	// Used only by garbage collection. Deleting an absent version is a no-op.
	OpDeleteVersion MutationOp = 2
)

// Batch is an ordered list of mutations applied atomically to one table (S1).
// A Batch is not safe for concurrent use; it may be reused after Reset.
type Batch struct {
	// Table names the table the batch applies to.
	Table string
	// Mutations are applied in order.
	Mutations []Mutation
	// Sync asks Apply to make the batch durable before returning (S2).
	Sync bool
}

// Put appends a value cell. The slices are retained until Apply returns.
func (b *Batch) Put(row, column []byte, ts int64, value []byte) {
	b.Mutations = append(b.Mutations, Mutation{Op: OpPut, Cell: Cell{Row: row, Column: column, Timestamp: ts, Kind: KindPut, Value: value}})
}

// DeleteColumn appends a column delete marker at ts.
func (b *Batch) DeleteColumn(row, column []byte, ts int64) {
	b.Mutations = append(b.Mutations, Mutation{Op: OpPut, Cell: Cell{Row: row, Column: column, Timestamp: ts, Kind: KindDeleteColumn}})
}

// DeleteRow appends a row delete marker at ts.
func (b *Batch) DeleteRow(row []byte, ts int64) {
	b.Mutations = append(b.Mutations, Mutation{Op: OpPut, Cell: Cell{Row: row, Timestamp: ts, Kind: KindDeleteRow}})
}

// DeleteVersion appends the physical removal of one version (any kind).
func (b *Batch) DeleteVersion(row, column []byte, ts int64) {
	b.Mutations = append(b.Mutations, Mutation{Op: OpDeleteVersion, Cell: Cell{Row: row, Column: column, Timestamp: ts}})
}

// Len is the number of mutations in the batch.
func (b *Batch) Len() int { return len(b.Mutations) }

// Reset empties the batch, keeping Table and capacity.
func (b *Batch) Reset() { b.Mutations = b.Mutations[:0]; b.Sync = false }

// Store is a set of named versioned cell tables.
//
// Implementations are safe for concurrent use. Every method that does I/O
// takes a context first and returns ctx.Err() (wrapped) when it is done
// before the work is. After Close every method returns ErrClosed.
type Store interface {
	// Apply applies b atomically (S1), durably if b.Sync (S2). An empty
	// batch is a no-op. Errors: ErrInvalidArgument for a bad mutation (no
	// part of the batch is applied), ErrUnavailable, ErrClosed.
	Apply(ctx context.Context, b *Batch) error
	// Get returns the cells of one row selected by opts, in S5 order, raw
	// (markers included, nothing masked). A missing row gives (nil, nil).
	Get(ctx context.Context, table string, row []byte, opts ReadOptions) ([]Cell, error)
	// VisitRow reads what Get returns, without copying it: fn is called
	// with each cell in turn until it returns false. The slices of a Cell
	// are valid only during its call (fn copies what it keeps), and fn
	// must not call the store. A missing row calls fn never. Errors as
	// Get's.
	VisitRow(ctx context.Context, table string, row []byte, opts ReadOptions, fn func(Cell) bool) error
	// Scan returns an iterator over the cells of the rows in [opts.Start,
	// opts.End) selected by opts, in S5 order, raw. The iterator reads a
	// consistent view taken when Scan is called (S3). It must be closed.
	// Errors: ErrInvalidArgument for an empty table, a bad time range or
	// Start > End (both non-nil); ErrClosed.
	Scan(ctx context.Context, table string, opts ScanOptions) (Iterator, error)
	// DeleteRange physically removes every cell of the rows in [start, end)
	// of table (nil bounds mean the table's ends); used to drop a dataset.
	// It is atomic and durable when it returns. start == end deletes
	// nothing; start > end (both non-nil) is ErrInvalidArgument.
	DeleteRange(ctx context.Context, table string, start, end []byte) error
	// MutateRow applies b, whose mutations all name one row, atomically
	// and durably whatever b.Sync says (S6): HBase's mutateRow. An empty
	// batch is a no-op. Errors: ErrInvalidArgument (a bad mutation, or
	// mutations of more than one row; nothing applied), ErrUnavailable (the
	// outcome is unknown: S9), ErrClosed.
	MutateRow(ctx context.Context, b *Batch) error
	// CheckAndMutate applies b as MutateRow does, if and only if check holds
	// on b's row, atomically with the check (S7), and reports whether it
	// applied: HBase's checkAndMutate with CompareOperator EQUAL. b must
	// hold at least one mutation. Errors as MutateRow's; after an error
	// the outcome is unknown (S9).
	CheckAndMutate(ctx context.Context, b *Batch, check Check) (applied bool, err error)
	// Increment adds delta to the counter (table, row, column) and returns
	// its new value, atomically and durably (S8): HBase's increment. delta
	// 0 reads the counter. Errors: ErrInvalidArgument (empty table or row),
	// ErrUnavailable (the outcome is unknown: S9), ErrClosed.
	Increment(ctx context.Context, table string, row, column []byte, delta int64) (int64, error)
	// Sync makes every batch applied before it durable (S2).
	Sync(ctx context.Context) error
	// Close releases the store. Iterators still open become invalid.
	Close() error
}

// Check is the condition of CheckAndMutate (S7), on the row its batch
// mutates: the newest version of Column, whatever its timestamp, must be a
// put of exactly Value, or, when Value is nil, Column must have no cell at
// all. A delete marker as the newest version matches neither. An empty
// non-nil Value expects an empty value, which is not absence.
type Check struct {
	// Column is the column compared; "" is the row delete marker column.
	Column []byte
	// Value is the expected value; nil means absent.
	Value []byte
}

// Absent reports whether the check is for the column's absence.
func (c Check) Absent() bool { return c.Value == nil }

// Iterator walks cells in S5 order. It is not safe for concurrent use. The
// slices of the Cell returned by Cell are valid only until the next call to
// Next or Close; copy them to keep them. Errors are kept behind Err, as in
// Pebble's Iterator.
type Iterator interface {
	// Next advances to the next cell and reports whether there is one. The
	// first call moves to the first cell.
	Next() bool
	// Cell returns the current cell; see the ownership note above.
	Cell() Cell
	// SeekRow positions the iterator so that the next call to Next returns
	// the first cell of the first row >= row within the scan's range. Used
	// to skip rows without reading them (merge joins, paging).
	SeekRow(row []byte)
	// Err returns the error that stopped iteration, if any.
	Err() error
	// Close releases the iterator and returns Err.
	Close() error
}

// Loader is an optional capability of a Store: writing many cells of one
// table faster than batches of Apply, for a range that has none of them
// yet (a first run). store/pebble builds SSTables and ingests them, which
// skips the WAL, the memtables and the compactions that would otherwise
// move the cells down. A backend without a faster path does not implement
// it; callers then use Apply.
type Loader interface {
	// Load starts loading cells into table. Errors: ErrInvalidArgument
	// for an empty table, ErrClosed.
	Load(ctx context.Context, table string) (Load, error)
	// FlushLoads flushes several loads of this Loader at once, as Flush
	// on each would, in one step: store/pebble ingests all their SSTables
	// together (one manifest update instead of one per load), so a run
	// of many small tables pays that fixed cost once. The loads' cells
	// must not overlap (loads of different tables). ErrInvalidArgument
	// for a load of another Loader.
	FlushLoads(ctx context.Context, loads []Load) error
}

// Load is one load of a Loader. Cells are added in S5 order, each
// coordinate after the one before (between two Flushes); what was added is
// invisible to reads until Flush, which makes it visible and durable at
// once (S1, S2), as an Apply with Sync would. Writing a coordinate that
// exists replaces it (S4). Not safe for concurrent use.
type Load interface {
	// Add appends one cell (a value or a delete marker). The slices are
	// not retained. ErrInvalidArgument for a bad cell or one out of
	// order; the load is then failed (every later call returns the error).
	Add(c Cell) error
	// Flush makes every cell added so far visible and durable.
	Flush(ctx context.Context) error
	// Seal ends the load's adds and frees what it buffers (store/pebble
	// finishes its SSTable): its cells stay invisible until a Flush or a
	// FlushLoads; an Add after it fails (ErrClosed).
	Seal() error
	// Close ends the load; cells added since the last Flush are dropped.
	// Close is safe to call twice.
	Close() error
}

// Validate checks a mutation's shape; backends call it before applying a
// batch so that every backend rejects the same input with
// ErrInvalidArgument.
func (m *Mutation) Validate() error {
	c := &m.Cell
	switch {
	case len(c.Row) == 0:
		return invalid("empty row key")
	case c.Timestamp < 0:
		return invalid("negative timestamp")
	}
	switch m.Op {
	case OpPut:
		switch c.Kind {
		case KindPut, KindDeleteColumn:
		case KindDeleteRow:
			if len(c.Column) != 0 {
				return invalid("row delete marker with a column")
			}
		default:
			return invalid("unknown cell kind")
		}
	case OpDeleteVersion:
	default:
		return invalid("unknown mutation op")
	}
	return nil
}

// CheckRowBatch validates b for MutateRow and CheckAndMutate: a table, and
// valid mutations that all name one row, which it returns (nil for an empty
// batch). Backends call it so that every backend refuses the same input
// with ErrInvalidArgument.
func CheckRowBatch(b *Batch) ([]byte, error) {
	if b == nil {
		return nil, invalid("nil batch")
	}
	if err := CheckTable(b.Table); err != nil {
		return nil, err
	}
	var row []byte
	for i := range b.Mutations {
		m := &b.Mutations[i]
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("mutation %d: %w", i, err)
		}
		if i == 0 {
			row = m.Cell.Row
		} else if !bytes.Equal(m.Cell.Row, row) {
			return nil, fmt.Errorf("mutation %d: %w", i, invalid("a row mutation names a second row"))
		}
	}
	return row, nil
}

// CheckTable returns ErrInvalidArgument for an empty table name.
func CheckTable(table string) error {
	if table == "" {
		return invalid("empty table name")
	}
	return nil
}

// Normalize returns opts with a zero TimeRange replaced by AllTime, or
// ErrInvalidArgument when the range is inverted.
func (o ReadOptions) Normalize() (ReadOptions, error) {
	if o.TimeRange.IsZero() {
		o.TimeRange = AllTime
	}
	if o.TimeRange.Min < 0 || o.TimeRange.Max < o.TimeRange.Min {
		return o, invalid("bad time range")
	}
	return o, nil
}

type invalidError string

func (e invalidError) Error() string { return "store: invalid argument: " + string(e) }
func (e invalidError) Unwrap() error { return ErrInvalidArgument }

func invalid(msg string) error { return invalidError(msg) }
