package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
)

// bankTotal is the opening total of the bank fixture: 20 accounts of 1000.
const bankTotal = 20 * 1000

// newBank writes the bank fixture in WAL mode (readers and one writer at
// once): accounts, and a ledger row for every amount moved in.
func newBank(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bank.db")
	sqliteExec(t, path,
		`PRAGMA journal_mode=WAL`,
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL)`,
		`CREATE TABLE ledger (id INTEGER PRIMARY KEY, account INTEGER NOT NULL, amount BIGINT NOT NULL)`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 20) INSERT INTO accounts SELECT i, 1000 FROM n`,
	)
	return path
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

// sumColumn reads every row of r and sums column col (an integer).
func sumColumn(ctx context.Context, r source.TableReader, col string) (sum int64, rows int, err error) {
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
	}
	return sum, rows, r.Err()
}

// readBank reads accounts then ledger through open and returns the two
// sums.
func readBank(ctx context.Context, open func(string) (source.TableReader, error)) (accounts, ledger int64, err error) {
	r, err := open("accounts")
	if err != nil {
		return 0, 0, err
	}
	accounts, _, err = sumColumn(ctx, r, "balance")
	r.Close()
	if err != nil {
		return 0, 0, err
	}
	r, err = open("ledger")
	if err != nil {
		return 0, 0, err
	}
	ledger, _, err = sumColumn(ctx, r, "amount")
	r.Close()
	return accounts, ledger, err
}

// TestSQLitePointBank: while a writer moves amounts (each transfer one
// transaction over accounts and ledger), every point reads both tables
// with the invariant sum(accounts) = opening total + sum(ledger); the
// same check catches the tables read in two transactions around a
// transfer.
func TestSQLitePointBank(t *testing.T) {
	ctx := context.Background()
	path := newBank(t)
	src, err := sqliteConnector{}.Open(ctx, source.SourceConfig{Name: "bank", Options: source.OptionValues{"path": path}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	w, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)

	// The control: two snapshots, a transfer between them.
	r, err := src.OpenTable(ctx, source.TableRequest{Resource: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	acc, _, err := sumColumn(ctx, r, "balance")
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := transfer(ctx, w, 1, 5); err != nil {
		t.Fatal(err)
	}
	r, err = src.OpenTable(ctx, source.TableRequest{Resource: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	led, _, err := sumColumn(ctx, r, "amount")
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if acc == bankTotal+led {
		t.Fatalf("control: tables read on separate snapshots around a transfer kept the invariant (%d, %d)", acc, led)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var transfers atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := transfer(ctx, w, 1+i%20, 1+i%7); err != nil {
				t.Error(err)
				return
			}
			transfers.Add(1)
		}
	}()
	points := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) || points < 10; points++ {
		p, err := src.(source.PointOpener).OpenPoint(ctx, source.PointRequest{Tables: 2, Parallelism: 4})
		if err != nil {
			t.Fatal(err)
		}
		if info := p.Info(); info.Mode != source.PointOneTransaction || info.Connections != 1 {
			t.Fatalf("info %+v", info)
		}
		before := transfers.Load()
		acc, led, err := readBank(ctx, func(name string) (source.TableReader, error) {
			r, err := p.OpenTable(ctx, source.TableRequest{Resource: name, ChunkRows: 7})
			if err == nil {
				time.Sleep(5 * time.Millisecond) // let transfers commit between the tables
			}
			return r, err
		})
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if acc != bankTotal+led {
			t.Fatalf("point %d: accounts %d, opening total %d + ledger %d", points, acc, bankTotal, led)
		}
		if transfers.Load() == before {
			time.Sleep(time.Millisecond)
		}
	}
	close(stop)
	wg.Wait()
	if transfers.Load() < int64(points) {
		t.Fatalf("only %d transfers during %d points", transfers.Load(), points)
	}
	t.Logf("%d points, %d transfers", points, transfers.Load())
}

// TestSQLitePointClose: a point hands its one transaction to one reader
// at a time, refuses other modes, closes a reader left open and ends the
// transaction (a writer's checkpoint can then truncate the WAL).
func TestSQLitePointClose(t *testing.T) {
	ctx := context.Background()
	path := newBank(t)
	src, err := sqliteConnector{}.Open(ctx, source.SourceConfig{Name: "bank", Options: source.OptionValues{"path": path}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	po := src.(source.PointOpener)
	if _, err := po.OpenPoint(ctx, source.PointRequest{Mode: source.PointReadLock}); !errors.Is(err, source.ErrPointMode) {
		t.Fatalf("read_lock on sqlite: %v", err)
	}
	p, err := po.OpenPoint(ctx, source.PointRequest{Tables: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.OpenTable(ctx, source.TableRequest{Resource: "nosuch"}); !errors.Is(err, source.ErrResourceNotFound) {
		t.Fatalf("a missing table: %v", err)
	}
	r, err := p.OpenTable(ctx, source.TableRequest{Resource: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := p.OpenTable(short, source.TableRequest{Resource: "ledger"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second reader while the first is open: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if r.Next(ctx) {
		t.Fatal("a reader of a closed point reads")
	}
	if _, err := p.OpenTable(ctx, source.TableRequest{Resource: "ledger"}); !errors.Is(err, source.ErrPointClosed) {
		t.Fatalf("OpenTable after Close: %v", err)
	}
	if st := src.(*sqliteSource).db.Stats(); st.InUse != 0 {
		t.Fatalf("%d connections in use after Close", st.InUse)
	}
}
