package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snapstore/snapstore/adapters/source"
)

// bankTotal is the opening total of the bank fixture: 50 accounts of 1000.
const bankTotal = 50 * 1000

// newBank creates the bank fixture in a fresh database: accounts, and a
// ledger row for every amount moved in.
func newBank(t *testing.T, e testEnv) string {
	t.Helper()
	db := e.tempDatabase(t, "bank")
	e.exec(t, db,
		`CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL)`,
		`CREATE TABLE ledger (id bigserial PRIMARY KEY, account int NOT NULL, amount bigint NOT NULL)`,
		`INSERT INTO accounts SELECT i, 1000 FROM generate_series(1, 50) i`,
	)
	return db
}

// transfer moves amount into account in one transaction touching both
// tables.
func transfer(ctx context.Context, c *pgx.Conn, account, amount int64) error {
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE accounts SET balance = balance + $1 WHERE id = $2`, amount, account); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO ledger (account, amount) VALUES ($1, $2)`, account, amount)
		return err
	})
}

// sumColumn reads every row of r and sums column col (an integer),
// pausing after each row when pause is set so that writers commit
// during the read.
func sumColumn(ctx context.Context, r source.TableReader, col string, pause time.Duration) (sum int64, rows int, err error) {
	idx := -1
	for i, c := range r.Schema().Columns {
		if c.Name == col {
			idx = i
		}
	}
	if idx < 0 {
		return 0, 0, errors.New("no column " + col)
	}
	for r.Next(ctx) {
		sum += r.Values()[idx].Int
		rows++
		if pause > 0 && rows%50 == 0 {
			time.Sleep(pause)
		}
	}
	return sum, rows, r.Err()
}

// readTable opens name through open, sums col and closes the reader.
func readTable(ctx context.Context, open func(context.Context, source.TableRequest) (source.TableReader, error), name, col string, pause time.Duration) (int64, error) {
	r, err := open(ctx, source.TableRequest{Resource: name, ChunkRows: 16})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	sum, _, err := sumColumn(ctx, r, col, pause)
	return sum, err
}

// openTransactions counts the sessions of database db inside a
// transaction, but the asking one.
func openTransactions(t *testing.T, c *pgx.Conn, db string) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = $1 AND xact_start IS NOT NULL AND pid <> pg_backend_pid()`, db).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPostgresPointBank: while writers move amounts (each transfer one
// transaction over accounts and ledger), every point reads both tables in
// parallel on two connections with the invariant sum(accounts) = opening
// total + sum(ledger); the same check catches the tables read in two
// snapshots around a transfer.
func TestPostgresPointBank(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := newBank(t, e)
	src := e.openSource(t, db)

	// The control: two snapshots, a transfer between them.
	acc, err := readTable(ctx, src.OpenTable, "accounts", "balance", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := transfer(ctx, e.connect(t, db), 1, 5); err != nil {
		t.Fatal(err)
	}
	led, err := readTable(ctx, src.OpenTable, "ledger", "amount", 0)
	if err != nil {
		t.Fatal(err)
	}
	if acc == bankTotal+led {
		t.Fatalf("control: tables read on separate snapshots around a transfer kept the invariant (%d, %d)", acc, led)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var transfers atomic.Int64
	for w := range 3 {
		c := e.connect(t, db)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(w); ; i += 3 {
				select {
				case <-stop:
					return
				default:
				}
				if err := transfer(ctx, c, 1+i%50, 1+i%7); err != nil {
					t.Error(err)
					return
				}
				transfers.Add(1)
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriters()
	points := 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) || points < 20; points++ {
		p, err := src.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 2})
		if err != nil {
			t.Fatal(err)
		}
		if info := p.Info(); info.Mode != source.PointExportedSnapshot || info.Connections != 2 || info.Position == "" {
			t.Fatalf("info %+v", info)
		}
		var acc, led int64
		var accErr, ledErr error
		var rw sync.WaitGroup
		rw.Add(2)
		go func() {
			defer rw.Done()
			acc, accErr = readTable(ctx, p.OpenTable, "accounts", "balance", time.Millisecond)
		}()
		go func() {
			defer rw.Done()
			led, ledErr = readTable(ctx, p.OpenTable, "ledger", "amount", time.Millisecond)
		}()
		rw.Wait()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(accErr, ledErr); err != nil {
			t.Fatal(err)
		}
		if acc != bankTotal+led {
			t.Fatalf("point %d: accounts %d, opening total %d + ledger %d", points, acc, bankTotal, led)
		}
	}
	stopWriters()
	if transfers.Load() < int64(points) {
		t.Fatalf("only %d transfers during %d points", transfers.Load(), points)
	}
	t.Logf("%d points, %d transfers", points, transfers.Load())
}

// TestPostgresPointClose: a point holds one transaction per connection
// while open; Close ends them all, also with a reader left open and after
// its read was cancelled mid-table; nothing is left in a transaction or
// acquired from the pool.
func TestPostgresPointClose(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := newBank(t, e)
	e.exec(t, db, `INSERT INTO ledger (account, amount) SELECT i % 50 + 1, 1 FROM generate_series(1, 500) i`)
	src := e.openSource(t, db)
	admin := e.connect(t, db)
	po := src.(source.PointOpener)
	if _, err := po.OpenPoint(ctx, source.PointRequest{Mode: source.PointReadLock}); !errors.Is(err, source.ErrPointMode) {
		t.Fatalf("read_lock on postgres: %v", err)
	}

	p, err := po.OpenPoint(ctx, source.PointRequest{Tables: 5, Parallelism: 3})
	if err != nil {
		t.Fatal(err)
	}
	if n := openTransactions(t, admin, db); n != 3 {
		t.Fatalf("%d transactions while a point of 3 connections is open", n)
	}
	if _, err := p.OpenTable(ctx, source.TableRequest{Resource: "nosuch"}); !errors.Is(err, source.ErrResourceNotFound) {
		t.Fatalf("a missing table: %v", err)
	}
	left, err := p.OpenTable(ctx, source.TableRequest{Resource: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if !left.Next(ctx) {
		t.Fatal(left.Err())
	}
	rctx, cancel := context.WithCancel(ctx)
	r, err := p.OpenTable(rctx, source.TableRequest{Resource: "ledger", ChunkRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next(rctx) {
		t.Fatal(r.Err())
	}
	cancel()
	for r.Next(rctx) {
	}
	if !errors.Is(r.Err(), context.Canceled) {
		t.Fatalf("a cancelled read: %v", r.Err())
	}
	p.Close() // the cancelled connection's ROLLBACK may fail; it is dropped
	if n := openTransactions(t, admin, db); n != 0 {
		t.Fatalf("%d transactions after Close", n)
	}
	if n := src.(*postgresSource).pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections still acquired after Close", n)
	}
	if _, err := p.OpenTable(ctx, source.TableRequest{Resource: "ledger"}); !errors.Is(err, source.ErrPointClosed) {
		t.Fatalf("OpenTable after Close: %v", err)
	}

	// A point whose opening is cancelled leaves nothing open either.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := po.OpenPoint(cctx, source.PointRequest{Tables: 5, Parallelism: 3}); err == nil {
		t.Fatal("a point opened with a cancelled context")
	}
	if n := openTransactions(t, admin, db); n != 0 {
		t.Fatalf("%d transactions after a cancelled OpenPoint", n)
	}
}

// TestPostgresSelectTables: include and exclude patterns over a real
// catalog of two schemas.
func TestPostgresSelectTables(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "select")
	e.exec(t, db,
		`CREATE TABLE orders (id int PRIMARY KEY)`,
		`CREATE TABLE order_lines (id int PRIMARY KEY)`,
		`CREATE TABLE audit_log (id int PRIMARY KEY)`,
		`CREATE VIEW order_ids AS SELECT id FROM orders`,
		`CREATE SCHEMA sales`,
		`CREATE TABLE sales.orders (id int PRIMARY KEY)`,
		`CREATE TABLE sales.audit_2024 (id int PRIMARY KEY)`,
		`CREATE SCHEMA "public.archive"`,
		`CREATE TABLE "public.archive".orders (id int PRIMARY KEY)`,
	)
	src := e.openSource(t, db)
	list, err := src.(source.ResourceLister).Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cat := source.Catalog{Resources: list, DefaultSchema: "public", Quote: '"'}
	for _, tc := range []struct {
		sel  source.TableSelection
		want string
	}{
		{source.TableSelection{Include: []string{"public.*"}, Exclude: []string{"audit_*"}}, "public.order_lines public.orders"},
		{source.TableSelection{Exclude: []string{"audit_*"}}, "public.order_lines public.orders public.archive.orders sales.orders"},
		{source.TableSelection{Include: []string{"public.*"}}, "public.audit_log public.order_lines public.orders"},
		{source.TableSelection{Include: []string{"public.archive.*"}}, "public.archive.orders"},
		{source.TableSelection{Resources: []string{"orders", "order_ids", "sales.orders"}}, "public.order_ids public.orders sales.orders"},
	} {
		got, err := source.SelectTables(tc.sel, cat)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range got {
			names = append(names, r.Schema+"."+r.Name)
		}
		if s := strings.Join(names, " "); s != tc.want {
			t.Errorf("%+v: %q, want %q", tc.sel, s, tc.want)
		}
	}
	_, err = source.SelectTables(source.TableSelection{Resources: []string{"orders", "ordres"}}, cat)
	if !errors.Is(err, source.ErrResourceNotFound) || !strings.Contains(err.Error(), `"ordres"`) {
		t.Fatalf("a missing resource: %v", err)
	}
}

// TestPostgresPointTruncate: TRUNCATE is not MVCC-safe, so a point locks
// its tables before its snapshot: a TRUNCATE of a table the point has not
// read yet waits for the point to close, and the point reads the table's
// rows; without the lock the read would find the table empty.
func TestPostgresPointTruncate(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := newBank(t, e)
	src := e.openSource(t, db)
	p, err := src.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 1, Resources: []source.Resource{
		{Schema: "public", Name: "accounts", Type: "table"}, {Schema: "public", Name: "ledger", Type: "table"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	truncated := make(chan error, 1)
	go func() {
		_, err := e.connect(t, db).Exec(ctx, `TRUNCATE accounts`)
		truncated <- err
	}()
	select {
	case err := <-truncated:
		t.Fatalf("TRUNCATE ended while the point was open (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	sum, err := readTable(ctx, p.OpenTable, "accounts", "balance", 0)
	if err != nil {
		t.Fatal(err)
	}
	if sum != bankTotal {
		t.Fatalf("accounts at the point sum to %d, want %d", sum, bankTotal)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-truncated; err != nil {
		t.Fatalf("TRUNCATE after the point closed: %v", err)
	}
}

// TestPostgresPointLockTimeout: a table locked by a DDL's transaction
// fails the point after lock_timeout, with an error that says so without
// the statement naming every table.
func TestPostgresPointLockTimeout(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := newBank(t, e)
	src := e.openSource(t, db)
	defer func(old string) { pointLockTimeout = old }(pointLockTimeout)
	pointLockTimeout = "200ms"
	tx, err := e.connect(t, db).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE ledger IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	_, err = src.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 2, Resources: []source.Resource{
		{Schema: "public", Name: "accounts", Type: "table"}, {Schema: "public", Name: "ledger", Type: "table"}}})
	if err == nil || !strings.Contains(err.Error(), "lock_timeout 200ms") || strings.Contains(err.Error(), "LOCK TABLE") {
		t.Fatalf("a point of a locked table: %v, want the lock_timeout named and no statement", err)
	}
}

// TestPostgresPointDDLQueued: a DDL that queues for a table's ACCESS
// EXCLUSIVE lock behind the point's ACCESS SHARE makes every later lock
// of that table wait for the point, a reader of the point on another
// connection too, which the point waits for: a wait PostgreSQL cannot
// see as a deadlock (pg_dump's parallel mode meets it too). The reader
// gives up after lock_timeout instead of waiting for ever.
func TestPostgresPointDDLQueued(t *testing.T) {
	e := postgresEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db := newBank(t, e)
	src := e.openSource(t, db)
	defer func(old string) { pointLockTimeout = old }(pointLockTimeout)
	pointLockTimeout = "300ms"
	p, err := src.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 2, Resources: []source.Resource{
		{Schema: "public", Name: "accounts", Type: "table"}, {Schema: "public", Name: "ledger", Type: "table"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// accounts on the first connection, the one that holds the locks.
	acc, err := p.OpenTable(ctx, source.TableRequest{Resource: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	ddl := make(chan error, 1)
	go func() {
		_, err := e.connect(t, db).Exec(ctx, `ALTER TABLE ledger ADD COLUMN note text`)
		ddl <- err
	}()
	time.Sleep(300 * time.Millisecond)
	// ledger on the second connection, behind the queued DDL.
	start := time.Now()
	_, err = readTable(ctx, p.OpenTable, "ledger", "amount", 0)
	if err == nil || !strings.Contains(err.Error(), "lock timeout") || time.Since(start) > 10*time.Second {
		t.Fatalf("a read behind a queued DDL: %v after %s, want a lock timeout", err, time.Since(start))
	}
	acc.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-ddl; err != nil {
		t.Fatalf("the DDL after the point closed: %v", err)
	}
}
