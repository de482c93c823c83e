package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/snapstore/snapstore/adapters/source"
)

// sqlitePoint is a point of a SQLite database (source.PointOpener): one
// read transaction on one connection, which reads the tables one after
// another. SQLite gives no way to share a read transaction between
// connections, and a file read by one process gains little from more.
type sqlitePoint struct {
	src   *sqliteSource
	conns *source.PointConns[*sql.Tx]
	conn  *sql.Conn
}

// OpenPoint implements source.PointOpener: BEGIN, then a read of the
// schema, which starts the transaction's read (SQLite begins a deferred
// transaction's snapshot at its first read, not at BEGIN).
func (s *sqliteSource) OpenPoint(ctx context.Context, req source.PointRequest) (_ source.Point, err error) {
	if req.Mode != "" && req.Mode != source.PointOneTransaction {
		return nil, fmt.Errorf("%w: %s (sqlite reads a point in one read transaction)", source.ErrPointMode, req.Mode)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, s.openError(ctx, err)
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err == nil {
		var n int64
		err = tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_schema").Scan(&n)
		if err != nil {
			tx.Rollback()
		}
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("starting a read transaction on %q: %w", s.name, s.wrap(err))
	}
	p := &sqlitePoint{src: s, conn: conn}
	p.conns = source.NewPointConns([]*sql.Tx{tx}, func(tx *sql.Tx) error {
		err := tx.Rollback()
		if errors.Is(err, sql.ErrTxDone) {
			err = nil
		}
		if cerr := conn.Close(); cerr != nil && !errors.Is(cerr, sql.ErrConnDone) {
			err = errors.Join(err, cerr)
		}
		return err
	})
	return p, nil
}

// Info implements source.Point.
func (p *sqlitePoint) Info() source.PointInfo {
	return source.PointInfo{Mode: source.PointOneTransaction, Reason: "sqlite: one read transaction over every table", Connections: 1}
}

// OpenTable implements source.Point: the table read inside the point's
// transaction once the previous reader is closed.
func (p *sqlitePoint) OpenTable(ctx context.Context, req source.TableRequest) (_ source.TableReader, err error) {
	if err := source.NoSharedSnapshot(req); err != nil {
		return nil, err
	}
	tx, err := p.conns.Take(ctx)
	if err != nil {
		return nil, err
	}
	t := &sqliteTable{src: p.src, tx: tx}
	t.release = func() { p.conns.Put(tx, t) }
	p.conns.Opened(t)
	if err := t.describe(ctx, req); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Close implements source.Point.
func (p *sqlitePoint) Close() error { return p.conns.Close() }
