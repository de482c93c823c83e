package mysql

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
		`CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB`,
		`CREATE TABLE ledger (id BIGINT AUTO_INCREMENT PRIMARY KEY, account INT NOT NULL, amount BIGINT NOT NULL) ENGINE=InnoDB`,
		`INSERT INTO accounts SELECT seq, 1000 FROM seq_1_to_50`,
	)
	return db
}

// transfer moves amount into account in one transaction touching both
// tables.
func transfer(ctx context.Context, db *sql.DB, account, amount int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance + ? WHERE id = ?`, amount, account); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (account, amount) VALUES (?, ?)`, account, amount); err != nil {
		return err
	}
	return tx.Commit()
}

// readTable opens name through open, sums integer column col, pausing
// every 50 rows when pause is set so that writers commit during the read.
func readTable(ctx context.Context, open func(context.Context, source.TableRequest) (source.TableReader, error), name, col string, pause time.Duration) (int64, error) {
	r, err := open(ctx, source.TableRequest{Resource: name, ChunkRows: 16})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	idx := -1
	for i, c := range r.Schema().Columns {
		if c.Name == col {
			idx = i
		}
	}
	if idx < 0 {
		return 0, errors.New("no column " + col)
	}
	var sum int64
	for rows := 1; r.Next(ctx); rows++ {
		sum += r.Values()[idx].Int
		if pause > 0 && rows%50 == 0 {
			time.Sleep(pause)
		}
	}
	return sum, r.Err()
}

// openTransactions counts the InnoDB transactions of sessions in database
// db. When want is 0 it waits up to 20s for them to end: a connection
// dropped by a cancelled query ends its transaction once the server sees
// the disconnect.
func openTransactions(t *testing.T, a *sql.DB, db string, want int) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var n int
		if err := a.QueryRow(`SELECT COUNT(*) FROM information_schema.INNODB_TRX x
			JOIN information_schema.PROCESSLIST p ON p.ID = x.trx_mysql_thread_id WHERE p.DB = ?`, db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == want || want != 0 || time.Now().After(deadline) {
			if n != want {
				rows, _ := a.Query(`SELECT p.ID, p.COMMAND, COALESCE(p.STATE,''), COALESCE(p.INFO,''), x.trx_state, x.trx_started FROM information_schema.INNODB_TRX x
					JOIN information_schema.PROCESSLIST p ON p.ID = x.trx_mysql_thread_id WHERE p.DB = ?`, db)
				for rows != nil && rows.Next() {
					var id, cmd, state, info, ts, started string
					rows.Scan(&id, &cmd, &state, &info, &ts, &started)
					t.Logf("session %s %s %q %q %s %s", id, cmd, state, info, ts, started)
				}
			}
			return n
		}
	}
}

// bankControl shows the bank invariant broken when accounts and ledger
// are read in two snapshots around a transfer: the check of runBank can
// fail.
func bankControl(t *testing.T, src source.Source, w *sql.DB) {
	t.Helper()
	ctx := context.Background()
	acc, err := readTable(ctx, src.OpenTable, "accounts", "balance", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := transfer(ctx, w, 1, 5); err != nil {
		t.Fatal(err)
	}
	led, err := readTable(ctx, src.OpenTable, "ledger", "amount", 0)
	if err != nil {
		t.Fatal(err)
	}
	if acc == bankTotal+led {
		t.Fatalf("control: tables read on separate snapshots around a transfer kept the invariant (%d, %d)", acc, led)
	}
}

// runBank opens points of mode while three writers move amounts, reads
// accounts and ledger of each in parallel and checks sum(accounts) =
// opening total + sum(ledger) at every point.
func runBank(t *testing.T, e testEnv, mode source.PointMode) {
	ctx := context.Background()
	db := newBank(t, e)
	src := e.openSource(t, db)
	w := e.admin(t, db)
	bankControl(t, src, w)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var transfers atomic.Int64
	for k := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(k); ; i += 3 {
				select {
				case <-stop:
					return
				default:
				}
				if err := transfer(ctx, w, 1+i%50, 1+i%7); err != nil {
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
		p, err := src.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 2, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		info := p.Info()
		if info.Mode != mode || info.Reason == "" {
			t.Fatalf("info %+v, want mode %s", info, mode)
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
			t.Fatalf("point %d (%+v): accounts %d, opening total %d + ledger %d", points, info, acc, bankTotal, led)
		}
	}
	stopWriters()
	if transfers.Load() < int64(points) {
		t.Fatalf("only %d transfers during %d points", transfers.Load(), points)
	}
	t.Logf("%s: %d points, %d transfers", mode, points, transfers.Load())
}

// TestMySQLPointBankReadLock: the bank invariant holds at every
// read_lock point under writers.
func TestMySQLPointBankReadLock(t *testing.T) { runBank(t, mysqlEnv(t), source.PointReadLock) }

// TestMySQLPointBankOneConnection: the same on one connection (the
// tables one after another in one snapshot).
func TestMySQLPointBankOneConnection(t *testing.T) {
	runBank(t, mysqlEnv(t), source.PointOneConnection)
}

// TestMySQLPointModes: the best mode is read_lock; a user without RELOAD
// gets one_connection, and the reason says why; a mode asked for that
// the server cannot give is ErrPointMode.
func TestMySQLPointModes(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := newBank(t, e)
	src := e.openSource(t, db)
	po := src.(source.PointOpener)
	p, err := po.OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	info := p.Info()
	if err := p.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	if info.Mode != source.PointReadLock || info.Connections != 2 || info.Reason == "" {
		t.Fatalf("auto mode: %+v", info)
	}
	if _, err := po.OpenPoint(ctx, source.PointRequest{Mode: source.PointExportedSnapshot}); !errors.Is(err, source.ErrPointMode) {
		t.Fatalf("exported_snapshot on mysql: %v", err)
	}

	// A user that may read but not lock.
	user := "snapstore_ro_" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	a := e.admin(t, "")
	for _, q := range []string{
		"CREATE USER '" + user + "'@'127.0.0.1' IDENTIFIED BY 'pw-ro'",
		"CREATE USER '" + user + "'@'localhost' IDENTIFIED BY 'pw-ro'",
		"GRANT SELECT ON " + quoteMySQLIdent(db) + ".* TO '" + user + "'@'127.0.0.1'",
		"GRANT SELECT ON " + quoteMySQLIdent(db) + ".* TO '" + user + "'@'localhost'",
	} {
		if _, err := a.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		a.Exec("DROP USER '" + user + "'@'127.0.0.1'")
		a.Exec("DROP USER '" + user + "'@'localhost'")
	})
	ro := e
	ro.User, ro.Password = user, "pw-ro"
	rsrc := ro.openSource(t, db)
	p, err = rsrc.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := readTable(ctx, p.OpenTable, "accounts", "balance", 0)
	info = p.Info()
	if err := p.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	if err != nil || acc != bankTotal {
		t.Fatalf("read at a one_connection point: %d, %v", acc, err)
	}
	if info.Mode != source.PointOneConnection || info.Connections != 1 ||
		!strings.Contains(info.Reason, "RELOAD") {
		t.Fatalf("a user without RELOAD: %+v", info)
	}
	if _, err := rsrc.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 2, Mode: source.PointReadLock}); !errors.Is(err, source.ErrPointMode) {
		t.Fatalf("read_lock without RELOAD: %v", err)
	}
	// RELOAD granted: the next point takes the lock. A session keeps the
	// global privileges it logged in with, so the refused lock's
	// connection must not be the one asked again.
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := a.Exec("GRANT RELOAD ON *.* TO '" + user + "'@'" + host + "'"); err != nil {
			t.Fatal(err)
		}
	}
	p, err = rsrc.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	info = p.Info()
	p.Close()
	if info.Mode != source.PointReadLock {
		t.Fatalf("the point after RELOAD was granted: %+v", info)
	}
}

// TestMySQLPointMaxOpen: a pool of max_open connections gives a
// read_lock point max_open-1 snapshots beside the lock's connection, and
// one_connection when that leaves one; it never waits for a connection
// it holds itself.
func TestMySQLPointMaxOpen(t *testing.T) {
	e := mysqlEnv(t)
	db := newBank(t, e)
	src := e.openSource(t, db)
	for _, tc := range []struct {
		maxOpen int
		mode    source.PointMode
		conns   int
	}{{3, source.PointReadLock, 2}, {2, source.PointOneConnection, 1}, {1, source.PointOneConnection, 1}} {
		src.(*mysqlSource).db.SetMaxOpenConns(tc.maxOpen)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a point that waits holds the lock: not long
		p, err := src.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 4})
		if err != nil {
			cancel()
			t.Fatalf("max_open %d: %v", tc.maxOpen, err)
		}
		acc, err := readTable(ctx, p.OpenTable, "accounts", "balance", 0)
		info := p.Info()
		p.Close()
		cancel()
		if err != nil || acc != bankTotal {
			t.Fatalf("max_open %d: read %d, %v", tc.maxOpen, acc, err)
		}
		if info.Mode != tc.mode || info.Connections != tc.conns {
			t.Fatalf("max_open %d: %+v, want %s over %d", tc.maxOpen, info, tc.mode, tc.conns)
		}
	}
	src.(*mysqlSource).db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a point that waits holds the lock: not long
	defer cancel()
	if _, err := src.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 2, Mode: source.PointReadLock}); !errors.Is(err, source.ErrPointMode) {
		t.Fatalf("read_lock with max_open 1: %v", err)
	}
}

// TestMySQLPointClose: a point holds one transaction per connection
// while open; Close ends them all, also with a reader left open and one
// whose read was cancelled mid-table; nothing stays in a transaction or
// taken from the pool.
func TestMySQLPointClose(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := newBank(t, e)
	e.exec(t, db, `INSERT INTO ledger (account, amount) SELECT seq % 50 + 1, 1 FROM seq_1_to_500`)
	src := e.openSource(t, db)
	a := e.admin(t, "")
	p, err := src.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 5, Parallelism: 3, Mode: source.PointReadLock})
	if err != nil {
		t.Fatal(err)
	}
	if n := openTransactions(t, a, db, 3); n != 3 {
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
	if err := p.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	if n := openTransactions(t, a, db, 0); n != 0 {
		t.Fatalf("%d transactions after Close", n)
	}
	if n := src.(*mysqlSource).db.Stats().InUse; n != 0 {
		t.Fatalf("%d connections in use after Close", n)
	}
	if _, err := p.OpenTable(ctx, source.TableRequest{Resource: "ledger"}); !errors.Is(err, source.ErrPointClosed) {
		t.Fatalf("OpenTable after Close: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := src.(source.PointOpener).OpenPoint(cctx, source.PointRequest{Tables: 5, Parallelism: 3}); err == nil {
		t.Fatal("a point opened with a cancelled context")
	}
	if n := openTransactions(t, a, db, 0); n != 0 {
		t.Fatalf("%d transactions after a cancelled OpenPoint", n)
	}
}

// TestMySQLSelectTables: include and exclude patterns over a real
// catalog; a connection without a database lists every schema.
func TestMySQLSelectTables(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "select")
	e.exec(t, db,
		`CREATE TABLE orders (id INT PRIMARY KEY)`,
		`CREATE TABLE order_lines (id INT PRIMARY KEY)`,
		`CREATE TABLE audit_log (id INT PRIMARY KEY)`,
		"CREATE TABLE `odd.name` (id INT PRIMARY KEY)",
		`CREATE VIEW order_ids AS SELECT id FROM orders`,
	)
	src := e.openSource(t, db)
	list, err := src.(source.ResourceLister).Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cat := source.Catalog{Resources: list, DefaultSchema: db, Quote: '`'}
	for _, tc := range []struct {
		sel  source.TableSelection
		want string
	}{
		{source.TableSelection{Exclude: []string{"audit_*"}}, "odd.name order_lines orders"},
		{source.TableSelection{Include: []string{db + ".order*"}}, "order_lines orders"},
		{source.TableSelection{Resources: []string{"order_ids", "`odd.name`"}}, "odd.name order_ids"},
	} {
		got, err := source.SelectTables(tc.sel, cat)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range got {
			if r.Schema != db {
				t.Fatalf("schema %q", r.Schema)
			}
			names = append(names, r.Name)
		}
		if s := strings.Join(names, " "); s != tc.want {
			t.Errorf("%+v: %q, want %q", tc.sel, s, tc.want)
		}
	}
	if _, err := source.SelectTables(source.TableSelection{Resources: []string{"ordres"}}, cat); !errors.Is(err, source.ErrResourceNotFound) {
		t.Fatalf("a missing resource: %v", err)
	}
}

// TestMySQLPointCloseAfterCanceledRead: a read canceled mid-query (a run
// failing on another table cancels the others) closes its connection;
// the point then ends without an error, the server having rolled back
// that connection's transaction when it closed.
func TestMySQLPointCloseAfterCanceledRead(t *testing.T) {
	e := mysqlEnv(t)
	db := newBank(t, e)
	src := e.openSource(t, db)
	p, err := src.(source.PointOpener).OpenPoint(context.Background(), source.PointRequest{Tables: 2, Parallelism: 2, Mode: source.PointReadLock})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := p.OpenTable(context.Background(), source.TableRequest{Resource: "accounts"})
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err = tr.(*mysqlTable).conn.ExecContext(ctx, "DO SLEEP(30)")
	cancel()
	if err == nil {
		t.Fatal("a query of 30 s ended within 200 ms without an error")
	}
	tr.Close()
	if err := p.Close(); err != nil {
		t.Errorf("closing the point after a canceled read: %v", err)
	}
}
