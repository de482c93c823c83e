package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/snapstore/snapstore/adapters/source"
)

// A point of a MySQL or MariaDB database (source.PointOpener). InnoDB has
// no way to hand one consistent snapshot to another session, so every
// connection starts its own (START TRANSACTION WITH CONSISTENT SNAPSHOT)
// and the point makes sure they start at one moment, in the best mode the
// server allows (after mydumper):
//
//   - read_lock: FLUSH TABLES WITH READ LOCK on one more connection, held
//     only while the connections start their snapshots (needs RELOAD;
//     blocks writes for that moment).
//   - one_connection: one connection, one snapshot, the tables read one
//     after another.
//
// mydumper's lock-free mode (start the snapshots, compare the binlog
// position each session shows, MariaDB's binlog_snapshot_file and
// binlog_snapshot_position, start again until they agree) is not used:
// on MariaDB 10.11 two snapshots showing one position were seen to differ
// by a committed transaction (a transfer in one table and not the other).
type mysqlPoint struct {
	src   *mysqlSource
	conns *source.PointConns[*sql.Conn]
	info  source.PointInfo
}

const (
	// readLockWait bounds the wait for FLUSH TABLES WITH READ LOCK
	// (lock_wait_timeout, seconds): a long query on the server makes the
	// lock wait, and every writer with it, so the point gives up early.
	readLockWait = 10
	// erSpecificAccessDenied: the user lacks a privilege (RELOAD).
	erSpecificAccessDenied = 1227
)

// OpenPoint implements source.PointOpener.
func (s *mysqlSource) OpenPoint(ctx context.Context, req source.PointRequest) (_ source.Point, err error) {
	defer func() { err = s.scrub(err) }()
	n := source.PointConnections(req)
	var why []string
	if n > 1 && req.Mode == "" || req.Mode == source.PointReadLock {
		// The lock's connection is one of the pool's too: a pool of
		// max_open connections leaves max_open-1 for the snapshots, and
		// asking for more would wait for itself forever.
		ln := n
		if m := s.db.Stats().MaxOpenConnections; m > 0 && ln >= m {
			ln = m - 1
		}
		var p *mysqlPoint
		var reason string
		if ln < 1 || ln == 1 && req.Mode == "" {
			reason = fmt.Sprintf("max_open %d leaves %d connection(s) beside the one of FLUSH TABLES WITH READ LOCK", s.db.Stats().MaxOpenConnections, ln)
		} else if p, reason, err = s.readLockPoint(ctx, ln); err != nil || p != nil {
			return p, err
		}
		if req.Mode != "" {
			return nil, fmt.Errorf("%w: %s (%s)", source.ErrPointMode, req.Mode, reason)
		}
		why = append(why, reason)
	}
	if req.Mode != "" && req.Mode != source.PointOneConnection {
		return nil, fmt.Errorf("%w: %s (mysql gives read_lock or one_connection)", source.ErrPointMode, req.Mode)
	}
	if n == 1 {
		why = append(why, "one connection asked for (parallelism 1 or one table)")
	} else if req.Mode == source.PointOneConnection {
		why = append(why, "one_connection asked for")
	}
	conns, err := s.pointConns(ctx, 1)
	if err != nil {
		return nil, err
	}
	if err := startSnapshot(ctx, conns[0]); err != nil {
		endPointConn(conns[0])
		return nil, err
	}
	return s.newPoint(conns, source.PointInfo{Mode: source.PointOneConnection, Reason: strings.Join(why, "; ")}), nil
}

// newPoint holds conns, each in its consistent snapshot.
func (s *mysqlSource) newPoint(conns []*sql.Conn, info source.PointInfo) *mysqlPoint {
	info.Connections = len(conns)
	return &mysqlPoint{src: s, conns: source.NewPointConns(conns, endPointConn), info: info}
}

// pointConns takes n connections of the pool, each with the session in
// UTC and REPEATABLE READ; on error none is left taken.
func (s *mysqlSource) pointConns(ctx context.Context, n int) ([]*sql.Conn, error) {
	var conns []*sql.Conn
	for range n {
		c, err := s.conn(ctx)
		if err == nil {
			err = execAll(ctx, c, "SET SESSION time_zone = '+00:00'", "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
			if err != nil {
				c.Close()
			}
		}
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// execAll runs statements on c in order.
func execAll(ctx context.Context, c *sql.Conn, stmts ...string) error {
	for _, q := range stmts {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, wrapMySQLErr(ctx, err))
		}
	}
	return nil
}

// startSnapshot starts c's read-only consistent snapshot.
func startSnapshot(ctx context.Context, c *sql.Conn) error {
	return execAll(ctx, c, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
}

// endPointConn ends a point connection's transaction and closes it: a
// point's connections are never given back to the pool. A session that
// held a consistent snapshot for a whole run is cheap to open again, and
// closing it ends whatever the server still holds for it: on MariaDB
// 10.11 a session whose point read failed on a missing table was seen
// with a read-only transaction still open after its ROLLBACK. A
// connection the driver already closed (a read canceled mid-query, as
// when another table fails the run) has nothing left to end: the server
// rolled its transaction back when it closed.
func endPointConn(c *sql.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, err := c.ExecContext(ctx, "ROLLBACK")
	cancel()
	c.Raw(func(any) error { return driverBadConn })
	c.Close()
	if err != nil && !errors.Is(err, sql.ErrConnDone) && !errors.Is(err, driver.ErrBadConn) {
		return fmt.Errorf("ending a read transaction of the point: %w", err)
	}
	return nil
}

// driverBadConn, returned from Conn.Raw, makes database/sql close the
// connection instead of pooling it.
var driverBadConn = driver.ErrBadConn

// readLockPoint makes a read_lock point of n connections. It returns nil
// and why, with no error, when the user may not take the lock or it was
// not granted within readLockWait.
func (s *mysqlSource) readLockPoint(ctx context.Context, n int) (*mysqlPoint, string, error) {
	lock, err := s.conn(ctx)
	if err != nil {
		return nil, "", err
	}
	refused := false
	defer func() {
		// UNLOCK TABLES as the lock's connection goes back; a broken one
		// is dropped, which releases the lock too. So is one that was
		// refused the lock: a session keeps the global privileges it
		// logged in with, and a RELOAD granted since would not reach the
		// next run that took it from the pool.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := execAll(uctx, lock, "UNLOCK TABLES", "SET SESSION lock_wait_timeout = DEFAULT"); err != nil || refused {
			lock.Raw(func(any) error { return driverBadConn })
		}
		cancel()
		lock.Close()
	}()
	if err := execAll(ctx, lock, fmt.Sprintf("SET SESSION lock_wait_timeout = %d", readLockWait)); err != nil {
		return nil, "", err
	}
	if _, err := lock.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		refused = true
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == erSpecificAccessDenied || me.Number == erDBAccessDenied) {
			return nil, "the user may not FLUSH TABLES WITH READ LOCK (no RELOAD privilege)", nil
		}
		return nil, fmt.Sprintf("FLUSH TABLES WITH READ LOCK failed: %v", s.scrub(err)), nil
	}
	// Writers wait while the lock is held: the snapshots' connections
	// are taken within readLockWait too, or the point gives up the lock
	// (other runs holding the pool's connections).
	cctx, cancel := context.WithTimeout(ctx, readLockWait*time.Second)
	defer cancel()
	conns, err := s.pointConns(cctx, n)
	if err != nil {
		if ctx.Err() == nil && cctx.Err() != nil {
			return nil, fmt.Sprintf("%d connections of the pool were not free within %ds of FLUSH TABLES WITH READ LOCK", n, readLockWait), nil
		}
		return nil, "", err
	}
	for _, c := range conns {
		if err := startSnapshot(ctx, c); err != nil {
			for _, c := range conns {
				endPointConn(c)
			}
			return nil, "", err
		}
	}
	return s.newPoint(conns, source.PointInfo{
		Mode:   source.PointReadLock,
		Reason: fmt.Sprintf("FLUSH TABLES WITH READ LOCK held while %d snapshots started", n),
	}), "", nil
}

// Info implements source.Point.
func (p *mysqlPoint) Info() source.PointInfo { return p.info }

// Close implements source.Point.
func (p *mysqlPoint) Close() error { return p.src.scrub(p.conns.Close()) }
