package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapstore/snapstore/adapters/source"
)

// pgPoint is a point of a PostgreSQL database (source.PointOpener), as
// pg_dump's parallel mode makes one: the first connection's REPEATABLE
// READ transaction exports its snapshot (pg_export_snapshot), every other
// connection imports it (SET TRANSACTION SNAPSHOT) in its own REPEATABLE
// READ, READ ONLY transaction, so all see the same committed
// transactions. The exporting transaction is one of the point's and ends
// only at Close, after the last read: an exported snapshot can be
// imported only while it stays open.
//
// TRUNCATE and the forms of ALTER TABLE that rewrite a table are not
// MVCC-safe: a snapshot taken before one sees the table empty. So, as
// pg_dump does, the exporting transaction first locks the point's tables
// in ACCESS SHARE mode, before its snapshot is taken, and holds the locks
// until Close: such a command committed before the lock is in the
// snapshot, one after it waits for the point to end. Its wait makes the
// other connections' locks of that table wait too, so their reads give up
// after lock_timeout rather than wait for a point that waits for them.
type pgPoint struct {
	src   *postgresSource
	conns *source.PointConns[*pgxpool.Conn]
	info  source.PointInfo
}

// OpenPoint implements source.PointOpener.
func (s *postgresSource) OpenPoint(ctx context.Context, req source.PointRequest) (_ source.Point, err error) {
	if req.Mode != "" && req.Mode != source.PointExportedSnapshot {
		return nil, fmt.Errorf("%w: %s (postgres shares one exported snapshot)", source.ErrPointMode, req.Mode)
	}
	n := source.PointConnections(req)
	var conns []*pgxpool.Conn
	defer func() {
		if err != nil {
			for _, c := range conns {
				endPointConn(c)
			}
			err = s.scrub(err)
		}
	}()
	var id string
	locked := false // the first connection locked the tables
	for i := range n {
		c, err := s.acquire(ctx)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
		var lock []string
		if i == 0 {
			if lock, err = lockStatements(ctx, c, req.Resources); err != nil {
				return nil, err
			}
			locked = len(lock) > 0
		} else if locked {
			// A DDL queued behind the first connection's locks makes
			// this connection's lock of that table wait for the point,
			// which waits for this read: a wait PostgreSQL cannot see as
			// a deadlock (pg_dump's workers lock with NOWAIT for it).
			lock = []string{"SET LOCAL lock_timeout = '" + pointLockTimeout + "'"}
		}
		if err := beginRead(ctx, c, id, lock...); err != nil {
			return nil, err
		}
		if i == 0 {
			if err := c.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&id); err != nil {
				return nil, fmt.Errorf("exporting the snapshot: %w", wrapPostgresErr(ctx, err))
			}
			if !pgSnapshotID.MatchString(id) {
				return nil, fmt.Errorf("adapters: pg_export_snapshot gave %q, not a snapshot id", id)
			}
		}
	}
	return &pgPoint{
		src:   s,
		conns: source.NewPointConns(conns, endPointConn),
		info: source.PointInfo{
			Mode:        source.PointExportedSnapshot,
			Reason:      fmt.Sprintf("postgres: snapshot %s exported by one transaction, imported by %d more", id, n-1),
			Connections: n,
			Position:    id,
		},
	}, nil
}

// pointLockTimeout bounds the wait for the point's table locks, as
// lock_wait_timeout bounds MySQL's read lock: a DDL holding or waiting for
// one of the tables fails the run instead of holding it. A variable for
// the tests.
var pointLockTimeout = "10s"

// lockStatements are the statements that lock the tables of rs (those a
// LOCK TABLE takes: tables and partitioned tables) in ACCESS SHARE mode
// for the rest of the transaction; none when rs holds none. The names are
// quoted by the server (format %I), read outside any transaction.
func lockStatements(ctx context.Context, c *pgxpool.Conn, rs []source.Resource) ([]string, error) {
	var schemas, names []string
	for _, r := range rs {
		if r.Type == "table" {
			schemas, names = append(schemas, r.Schema), append(names, r.Name)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	rows, err := c.Query(ctx, `SELECT format('%I.%I', n.nspname, c.relname)
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		JOIN unnest($1::text[], $2::text[]) AS t(s, r) ON t.s = n.nspname AND t.r = c.relname
		WHERE c.relkind IN ('r', 'p')`, schemas, names)
	if err != nil {
		return nil, fmt.Errorf("finding the tables to lock: %w", wrapPostgresErr(ctx, err))
	}
	quoted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("finding the tables to lock: %w", wrapPostgresErr(ctx, err))
	}
	if len(quoted) == 0 {
		return nil, nil
	}
	return []string{
		"SET LOCAL lock_timeout = '" + pointLockTimeout + "'",
		"LOCK TABLE " + strings.Join(quoted, ", ") + " IN ACCESS SHARE MODE",
		"SET LOCAL lock_timeout TO DEFAULT",
	}, nil
}

// endPointConn ends a point connection's transaction and gives it back
// to the pool (pgxpool destroys one left broken).
func endPointConn(c *pgxpool.Conn) error {
	var err error
	if !c.Conn().IsClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = c.Exec(ctx, "ROLLBACK")
		cancel()
		if err != nil {
			err = fmt.Errorf("ending a read transaction of the point: %w", err)
		}
	}
	c.Release()
	return err
}

// Info implements source.Point.
func (p *pgPoint) Info() source.PointInfo { return p.info }

// OpenTable implements source.Point: the table described and read inside
// a free connection's transaction.
func (p *pgPoint) OpenTable(ctx context.Context, req source.TableRequest) (_ source.TableReader, err error) {
	if req.Snapshot != "" {
		return nil, errors.New("adapters: a reader of a point reads the point's snapshot; TableRequest.Snapshot must be empty")
	}
	c, err := p.conns.Take(ctx)
	if err != nil {
		return nil, err
	}
	t := &pgTable{src: p.src, conn: c}
	t.release = func() { p.conns.Put(c, t) }
	p.conns.Opened(t)
	if err := t.open(ctx, req); err != nil {
		t.Close()
		return nil, p.src.scrub(err)
	}
	return t, nil
}

// Close implements source.Point.
func (p *pgPoint) Close() error { return p.src.scrub(p.conns.Close()) }
