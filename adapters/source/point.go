package source

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// PointOpener is an optional Source capability: a read of many tables as
// of one moment of the source (a database snapshot), over up to
// PointRequest.Parallelism connections.
type PointOpener interface {
	// OpenPoint starts the point: every connection of the point is in a
	// read-only transaction that sees the same committed transactions.
	// The returned Point holds them until its Close; on error nothing is
	// left open.
	OpenPoint(ctx context.Context, req PointRequest) (Point, error)
}

// PointChecker is an optional PointOpener capability: a source whose
// point holds only some of the tables it lists, or that can see that a
// selection reads the adapter's own dataset, says so before a point is
// opened: when an adapter is saved, and again at the start of each run.
type PointChecker interface {
	// CheckPoint returns an *OptionError naming "resources" when req's
	// tables cannot be read at one point, or are req.Dataset itself
	// (TableRequest.DatasetCreated); other errors as Source.OpenTable's.
	CheckPoint(ctx context.Context, req PointCheck) error
}

// PointCheck is what PointChecker.CheckPoint checks: the selected tables
// (SelectTables) and the dataset the run feeds, with its creation time
// when it exists (zero otherwise), as TableRequest names them.
type PointCheck struct {
	Tables         []Resource
	Dataset        string
	DatasetCreated time.Time
}

// PointRequest asks for a point.
type PointRequest struct {
	// Tables is how many tables will be read at the point; no more
	// connections than that are opened.
	Tables int
	// Resources, when given, are the tables that will be read at the
	// point, as SelectTables resolved them. A source whose snapshot does
	// not keep a table's rows against a later TRUNCATE or rewrite
	// (PostgreSQL) locks them before its snapshot, as pg_dump does.
	Resources []Resource
	// Parallelism bounds the connections of the point (0 or less: 1).
	Parallelism int
	// Mode, when set, is the one mode to use: OpenPoint fails when the
	// source cannot give it (tests; an operator who forbids the read
	// lock asks for PointOneConnection). Empty: the
	// best mode the source allows.
	Mode PointMode
}

// PointMode is how a point was made consistent, for the run record.
type PointMode string

const (
	// PointExportedSnapshot: PostgreSQL, one transaction exports its
	// snapshot (pg_export_snapshot) and every other connection imports it
	// (SET TRANSACTION SNAPSHOT); the exporting transaction stays open
	// until the point closes.
	PointExportedSnapshot PointMode = "exported_snapshot"
	// PointReadLock: MySQL/MariaDB, FLUSH TABLES WITH READ LOCK held only
	// while the connections start their consistent snapshots.
	PointReadLock PointMode = "read_lock"
	// PointOneConnection: one connection, one consistent-snapshot
	// transaction, the tables read one after another.
	PointOneConnection PointMode = "one_connection"
	// PointOneTransaction: SQLite, one read transaction.
	PointOneTransaction PointMode = "one_transaction"
)

// PointInfo says how a point was made, for the run record.
type PointInfo struct {
	Mode PointMode `json:"mode"`
	// Reason says why Mode was chosen (why no better one applied).
	Reason string `json:"reason"`
	// Connections is how many connections hold the point: the most
	// tables that can be read at once.
	Connections int `json:"connections"`
	// Position names the source's moment when the source shows one (the
	// exported snapshot id); may be empty.
	Position string `json:"position,omitempty"`
}

// Point is an open database snapshot. OpenTable may be called from several
// goroutines; each reader is used by one.
type Point interface {
	// Info says how the point was made.
	Info() PointInfo
	// OpenTable opens a reader of one table at the point: rows as
	// Source.OpenTable gives them (key order, types, chunked memory),
	// the same optional capabilities (Checksummer). It waits for a free
	// connection of the point (at most Info().Connections readers are
	// open at once) until ctx ends. The reader's Close gives its
	// connection back to the point, whose transaction stays open.
	// req.Snapshot must be empty. Errors as Source.OpenTable's;
	// ErrPointClosed once the point is closed.
	OpenTable(ctx context.Context, req TableRequest) (TableReader, error)
	// Close closes the readers still open, ends every transaction of the
	// point and gives its connections back. It must not run while a
	// reader's Next does (cancel the readers' context and wait for them
	// first). Idempotent.
	Close() error
}

var (
	// ErrPointClosed: a Point's OpenTable after its Close.
	ErrPointClosed = errors.New("adapters: the point of the source is closed")
	// ErrPointMode: PointRequest.Mode names a mode the source cannot
	// give (the error says why).
	ErrPointMode = errors.New("adapters: the source cannot give this point mode")
)

// PointConns hands a point's connections (C: one connection with its
// transaction started at the point) to its readers, one reader per
// connection at a time, and ends them all at Close. The connectors'
// Points are built on it.
type PointConns[C any] struct {
	free   chan C
	end    func(C) error
	mu     sync.Mutex
	all    []C
	open   map[TableReader]struct{}
	closed bool
}

// NewPointConns holds conns; end ends one connection's transaction and
// gives it back (it is called once per connection, at Close).
func NewPointConns[C any](conns []C, end func(C) error) *PointConns[C] {
	p := &PointConns[C]{free: make(chan C, len(conns)), end: end, all: conns, open: map[TableReader]struct{}{}}
	for _, c := range conns {
		p.free <- c
	}
	return p
}

// Take waits for a free connection until ctx ends or the point closes.
func (p *PointConns[C]) Take(ctx context.Context) (C, error) {
	var zero C
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return zero, ErrPointClosed
	}
	select {
	case c, ok := <-p.free:
		p.mu.Lock()
		defer p.mu.Unlock()
		if !ok || p.closed {
			return zero, ErrPointClosed // Close ends c
		}
		return c, nil
	case <-ctx.Done():
		return zero, fmt.Errorf("waiting for a connection of the point: %w", ctx.Err())
	}
}

// Opened records a reader opened on a taken connection, for Close.
func (p *PointConns[C]) Opened(r TableReader) {
	p.mu.Lock()
	p.open[r] = struct{}{}
	p.mu.Unlock()
}

// Put gives a connection back, r being the reader that held it (nil when
// opening it failed).
func (p *PointConns[C]) Put(c C, r TableReader) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r != nil {
		delete(p.open, r)
	}
	if !p.closed {
		p.free <- c
	}
}

// Close closes the readers still open, then ends every connection.
func (p *PointConns[C]) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.free)
	var readers []TableReader
	for r := range p.open {
		readers = append(readers, r)
	}
	p.mu.Unlock()
	var errs []error
	for _, r := range readers {
		if err := r.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range p.all {
		if err := p.end(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PointConnections is how many connections a point of req opens: the
// parallelism, at least 1, at most the tables.
func PointConnections(req PointRequest) int {
	n := max(req.Parallelism, 1)
	if req.Tables > 0 {
		n = min(n, req.Tables)
	}
	return n
}
