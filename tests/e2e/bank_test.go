package e2e

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the bank's writers
)

// The bank: accounts, a ledger, orders and their lines. Every transfer is
// one source transaction that moves money between two accounts, adds an
// amount to one, and records that amount in the ledger; every order is
// inserted with its lines in one transaction. Whatever the moment, the
// source holds sum(accounts) == bankOpening + sum(ledger), and every line
// has its order. A version read at one point of the source holds them too.
const (
	bankAccounts = 20
	bankOpening  = bankAccounts * 1000
	bankVersions = 20 // committed versions per source, at least
)

// bankSource is the source database of one bank test.
type bankSource struct {
	name string
	db   *sql.DB
	conn map[string]any // the data connection's definition
}

var bankSchema = []string{
	"CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL)",
	"CREATE TABLE ledger (id BIGINT PRIMARY KEY, account INT NOT NULL, amount BIGINT NOT NULL)",
	"CREATE TABLE orders (id BIGINT PRIMARY KEY, customer INT NOT NULL)",
	"CREATE TABLE order_lines (id BIGINT PRIMARY KEY, order_id BIGINT NOT NULL, qty INT NOT NULL)",
}

// TestBankMariaDB and TestBankPostgres run the bank test on each source.
func TestBankMariaDB(t *testing.T) {
	e := getMySQLEnv(t)
	name := fmt.Sprintf("e2e_bank_%d", os.Getpid())
	root := e.open(t, "")
	for _, s := range []string{"DROP DATABASE IF EXISTS `" + name + "`", "CREATE DATABASE `" + name + "`"} {
		if _, err := root.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { root.Exec("DROP DATABASE IF EXISTS `" + name + "`") })
	src := bankSource{name: "mariadb", db: e.open(t, name), conn: map[string]any{"name": "bank", "type": "mysql", "options": map[string]any{
		"host": e.Host, "port": atoi(t, e.Port), "user": e.User, "password": "env:" + pwEnv, "database": name}}}
	runBank(t, src, e.Password)
}

func TestBankPostgres(t *testing.T) {
	e := getPostgresEnv(t)
	name := fmt.Sprintf("e2e_bank_%d", os.Getpid())
	admin := e.connect(t, "postgres")
	e.exec(t, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)", "CREATE DATABASE "+name)
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	db, err := sql.Open("pgx", fmt.Sprintf("host=%s port=%s user=%s password=%s dbname=%s sslmode=disable", e.Host, e.Port, e.User, e.Password, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	src := bankSource{name: "postgres", db: db, conn: map[string]any{"name": "bank", "type": "postgres", "options": map[string]any{
		"host": e.Host, "port": atoi(t, e.Port), "user": e.User, "password": "env:" + pwEnv, "database": name, "sslmode": "disable"}}}
	runBank(t, src, e.Password)
}

// bankWriters are the writers of one bank test.
type bankWriters struct {
	src       bankSource
	ledgerID  atomic.Int64
	orderID   atomic.Int64
	lineID    atomic.Int64
	transfers atomic.Int64
	orders    atomic.Int64
	retries   atomic.Int64
}

// transfer moves an amount between two accounts and adds amount to one,
// recorded in the ledger: one transaction. Returns false when the source
// refused it (a deadlock, a serialization failure), nothing written.
func (w *bankWriters) transfer(rng *rand.Rand, amount int64) error {
	a, b := 1+rng.IntN(bankAccounts), 1+rng.IntN(bankAccounts)
	move := int64(1 + rng.IntN(100))
	tx, err := w.src.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmts := []struct {
		q    string
		args []any
	}{
		{"UPDATE accounts SET balance = balance - " + strconv.FormatInt(move, 10) + " WHERE id = " + strconv.Itoa(a), nil},
		{"UPDATE accounts SET balance = balance + " + strconv.FormatInt(move+amount, 10) + " WHERE id = " + strconv.Itoa(b), nil},
		{fmt.Sprintf("INSERT INTO ledger (id, account, amount) VALUES (%d, %d, %d)", w.ledgerID.Add(1), b, amount), nil},
	}
	for _, s := range stmts {
		if _, err := tx.Exec(s.q); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	w.transfers.Add(1)
	return nil
}

// order inserts an order and its lines: one transaction.
func (w *bankWriters) order(rng *rand.Rand) error {
	tx, err := w.src.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	id := w.orderID.Add(1)
	if _, err := tx.Exec(fmt.Sprintf("INSERT INTO orders (id, customer) VALUES (%d, %d)", id, rng.IntN(1000))); err != nil {
		return err
	}
	for range 1 + rng.IntN(3) {
		if _, err := tx.Exec(fmt.Sprintf("INSERT INTO order_lines (id, order_id, qty) VALUES (%d, %d, %d)", w.lineID.Add(1), id, 1+rng.IntN(9))); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	w.orders.Add(1)
	return nil
}

// run writes until ctx ends: transfers on one goroutine, orders on
// another; an error of the source is counted and retried.
func (w *bankWriters) run(ctx context.Context, t *testing.T) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i, f := range []func(*rand.Rand) error{
		func(rng *rand.Rand) error { return w.transfer(rng, int64(rng.IntN(101)-50)) },
		w.order,
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			for ctx.Err() == nil {
				if err := f(rng); err != nil {
					if w.retries.Add(1) > 1000 {
						t.Errorf("writer %d: %v", i, err)
						return
					}
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	return &wg
}

// bankTables are a version's tables of the bank by their short names.
type bankTables map[string][]map[string]json.RawMessage

// readBankVersion reads every table of version v of dataset over HTTP
// (NDJSON scans of the table-qualified routes).
func readBankVersion(t *testing.T, p *proc, dataset string, v int64) bankTables {
	t.Helper()
	var list struct {
		Version int64 `json:"version"`
		Tables  []struct {
			Name string `json:"name"`
		} `json:"tables"`
	}
	p.jsonCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/%s/tables?version=%d", dataset, v), nil, &list)
	out := bankTables{}
	for _, tb := range list.Tables {
		path := fmt.Sprintf("/v1/datasets/%s/tables/%s/rows?version=%d", dataset, url.PathEscape(tb.Name), v)
		out[tb.Name[strings.LastIndexByte(tb.Name, '.')+1:]] = readNDJSON(t, p, path, v)
	}
	return out
}

// readNDJSON reads the rows of an NDJSON scan at version v (0: any).
func readNDJSON(t *testing.T, p *proc, path string, v int64) []map[string]json.RawMessage {
	t.Helper()
	r := p.mustCall(t, http.StatusOK, "GET", path, nil, "Accept", "application/x-ndjson")
	if got := r.header.Get("Snapstore-Version"); v != 0 && got != strconv.FormatInt(v, 10) {
		t.Errorf("%s: read at version %s, want %d", path, got, v)
	}
	var rows []map[string]json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var row map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		rows = append(rows, row)
	}
	return rows
}

// intOf reads an integer column served as a number or as a string.
func intOf(t *testing.T, v json.RawMessage) int64 {
	t.Helper()
	s := strings.Trim(string(v), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("integer %s: %v", v, err)
	}
	return n
}

// bankInvariants checks the bank's invariants on tables, and returns what
// breaks them ("" when they hold) and the figures.
func bankInvariants(t *testing.T, accounts, ledger, orders, lines []map[string]json.RawMessage) string {
	t.Helper()
	var balance, booked int64
	for _, r := range accounts {
		balance += intOf(t, r["balance"])
	}
	for _, r := range ledger {
		booked += intOf(t, r["amount"])
	}
	have := map[int64]bool{}
	for _, r := range orders {
		have[intOf(t, r["id"])] = true
	}
	orphans := 0
	for _, r := range lines {
		if !have[intOf(t, r["order_id"])] {
			orphans++
		}
	}
	var broken []string
	if len(accounts) != bankAccounts || balance != bankOpening+booked {
		broken = append(broken, fmt.Sprintf("%d accounts hold %d, the opening %d plus the ledger's %d (%d entries) is %d", len(accounts), balance, bankOpening, booked, len(ledger), bankOpening+booked))
	}
	if orphans > 0 {
		broken = append(broken, fmt.Sprintf("%d of %d order lines have no order (%d orders)", orphans, len(lines), len(orders)))
	}
	return strings.Join(broken, "; ")
}

// runBank is the bank test on one source: runs of one adapter of the four
// tables while the writers write, every committed version read back whole
// and checked; then the control, which reads the tables at separate
// moments and must find the invariants broken.
func runBank(t *testing.T, src bankSource, password string) {
	start := time.Now()
	for _, s := range bankSchema {
		if _, err := src.db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for i := 1; i <= bankAccounts; i++ {
		if _, err := src.db.Exec(fmt.Sprintf("INSERT INTO accounts (id, balance) VALUES (%d, 1000)", i)); err != nil {
			t.Fatal(err)
		}
	}
	p := startServer(t, password)
	p.jsonCall(t, http.StatusCreated, "POST", "/v1/connections", src.conn, nil)
	p.createAdapter(t, map[string]any{"name": "bank", "connection": "bank", "include": []string{"accounts", "ledger", "orders", "order_lines"},
		"guard": map[string]any{"allow_empty": true}})

	w := &bankWriters{src: src}
	ctx, stop := context.WithCancel(context.Background())
	wg := w.run(ctx, t)
	var committed []int64
	var point map[string]any
	runs := 0
	for len(committed) < bankVersions && time.Since(start) < 5*time.Minute {
		r := p.mustCall(t, http.StatusOK, "POST", "/v1/adapters/bank/runs?wait=true", nil)
		var rec struct {
			runRecord
			Point  map[string]any `json:"point"`
			Tables []struct {
				Name     string `json:"name"`
				RowsRead int64  `json:"rows_read"`
			} `json:"tables"`
		}
		if err := json.Unmarshal(r.body, &rec); err != nil {
			t.Fatal(err)
		}
		runs++
		if rec.Status != "succeeded" {
			stop()
			wg.Wait()
			t.Fatalf("run %d: %s %s: %s", runs, rec.Status, rec.Code, rec.Error)
		}
		if len(rec.Tables) != 4 || rec.Point == nil {
			t.Errorf("run %d: tables %+v, point %v", runs, rec.Tables, rec.Point)
		}
		point = rec.Point
		if !rec.Verified {
			committed = append(committed, rec.Version)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()
	if len(committed) < bankVersions {
		t.Fatalf("%d versions committed in %d runs, want %d", len(committed), runs, bankVersions)
	}
	// Every committed version, read back whole, holds the invariants.
	checks := 0
	var lastRows int
	for _, v := range committed {
		tb := readBankVersion(t, p, "bank", v)
		if broken := bankInvariants(t, tb["accounts"], tb["ledger"], tb["orders"], tb["order_lines"]); broken != "" {
			t.Errorf("version %d: %s", v, broken)
		}
		checks += 2
		lastRows = len(tb["ledger"]) + len(tb["orders"]) + len(tb["order_lines"]) + len(tb["accounts"])
	}
	// The last run, with the writers stopped, holds the source's figures.
	last := p.mustRun(t, "bank")
	tb := readBankVersion(t, p, "bank", last.Version)
	var srcLedger, srcLines int
	src.db.QueryRow("SELECT COUNT(*) FROM ledger").Scan(&srcLedger)
	src.db.QueryRow("SELECT COUNT(*) FROM order_lines").Scan(&srcLines)
	if len(tb["ledger"]) != srcLedger || len(tb["order_lines"]) != srcLines || srcLedger != int(w.transfers.Load()) {
		t.Errorf("after the writers stopped: %d ledger entries and %d lines read, the source has %d and %d, %d transfers made",
			len(tb["ledger"]), len(tb["order_lines"]), srcLedger, srcLines, w.transfers.Load())
	}
	t.Logf("%s: %d runs, %d versions committed, %d transfers and %d orders written (%d retried), %d invariant checks on %d versions, all held; the last version held %d rows; point %v; %s",
		src.name, runs, len(committed), w.transfers.Load(), w.orders.Load(), w.retries.Load(), checks, len(committed), lastRows, point, time.Since(start).Round(time.Millisecond))

	// The control: four adapters of one table each, run one after the
	// other with a transfer and an order written in between, read the
	// tables at separate moments; the invariants must break.
	for _, tbl := range []string{"accounts", "ledger", "orders", "order_lines"} {
		p.createAdapter(t, map[string]any{"name": "ctl_" + tbl, "connection": "bank", "resource": tbl, "guard": map[string]any{"allow_empty": true}})
	}
	rng := rand.New(rand.NewPCG(7, 7))
	p.mustRun(t, "ctl_accounts")
	if err := w.transfer(rng, 37); err != nil {
		t.Fatal(err)
	}
	p.mustRun(t, "ctl_ledger")
	p.mustRun(t, "ctl_orders")
	if err := w.order(rng); err != nil {
		t.Fatal(err)
	}
	p.mustRun(t, "ctl_order_lines")
	rows := map[string][]map[string]json.RawMessage{}
	for _, tbl := range []string{"accounts", "ledger", "orders", "order_lines"} {
		rows[tbl] = readNDJSON(t, p, "/v1/datasets/ctl_"+tbl+"/rows", 0)
	}
	broken := bankInvariants(t, rows["accounts"], rows["ledger"], rows["orders"], rows["order_lines"])
	if !strings.Contains(broken, "accounts hold") || !strings.Contains(broken, "have no order") {
		t.Errorf("the control read the tables at separate moments and found the invariants %q; want both broken", broken)
	}
	t.Logf("%s control (tables read at separate moments): %s", src.name, broken)
	// The same moment, as one adapter of the four tables: whole again.
	again := p.mustRun(t, "bank")
	tb = readBankVersion(t, p, "bank", again.Version)
	if broken := bankInvariants(t, tb["accounts"], tb["ledger"], tb["orders"], tb["order_lines"]); broken != "" {
		t.Errorf("version %d after the control: %s", again.Version, broken)
	}
}
