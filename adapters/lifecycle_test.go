package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// blockAt makes runs of adapter pause after row n until release is closed
// (or the run's context ends); reached is closed when the pause begins.
type blockAt struct {
	adapter string
	n       int64
	reached chan struct{}
	release chan struct{}
}

func newBlock(ts *testStack, adapter string, n int64) *blockAt {
	b := &blockAt{adapter: adapter, n: n, reached: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	ts.svc.testHookRow = func(ctx context.Context, a string, i int64) {
		if a != b.adapter || i != b.n {
			return
		}
		fired := false
		once.Do(func() { fired = true })
		if !fired {
			return
		}
		close(b.reached)
		select {
		case <-b.release:
		case <-ctx.Done():
		}
	}
	return b
}

func longTable(t *testing.T, e mysqlTestEnv, rows int) string {
	db := e.tempDatabase(t, "long")
	e.exec(t, db, "CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(40))",
		fmt.Sprintf("INSERT INTO big SELECT seq, CONCAT('row ', seq) FROM seq_1_to_%d", rows))
	return db
}

// TestReplaceAndDropDuringPull: a pull started on revision 1 finishes on
// it while the connection is replaced; the next run uses revision 2; a
// drop lets the running pull finish and later runs fail clearly.
func TestReplaceAndDropDuringPull(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := longTable(t, e, 3000)
	ts := newStack(t, Options{})
	svc := ts.svc
	if _, err := svc.CreateConnection(ctx, mysqlConnSpec(t, e, "m", db, map[string]any{"chunk_rows": 100})); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateAdapter(ctx, AdapterSpec{Name: "long", Connection: "m", Resource: "big"}); err != nil {
		t.Fatal(err)
	}
	b := newBlock(ts, "long", 150)
	rec, err := svc.StartRunWith(ctx, "long", RunOptions{Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	<-b.reached
	if _, err := svc.StartRunWith(ctx, "long", RunOptions{Trigger: "api"}); !errors.Is(err, ErrRunInProgress) || !strings.Contains(err.Error(), rec.ID) {
		t.Fatalf("second start: %v", err)
	}
	live, err := svc.GetRun(ctx, rec.ID)
	if err != nil || live.Status != RunRunning || live.TxnID == 0 || live.RowsEstimated == 0 {
		t.Fatalf("live record %+v %v", live, err)
	}
	svc.mu.Lock()
	old := svc.conns.api["m"].h
	svc.mu.Unlock()
	if _, _, err := svc.PutConnection(ctx, mysqlConnSpec(t, e, "m", db, map[string]any{"chunk_rows": 1000})); err != nil {
		t.Fatal(err)
	}
	old.mu.Lock()
	if !old.retired || old.refs != 1 || old.src == nil {
		t.Errorf("old handle while the run holds it: retired=%v refs=%d open=%v", old.retired, old.refs, old.src != nil)
	}
	old.mu.Unlock()
	close(b.release)
	end, err := svc.WaitRun(ctx, rec.ID)
	if err != nil || end.Status != RunSucceeded || end.RowsRead != 3000 {
		t.Fatalf("run across replace: %+v %v", end, err)
	}
	vi, err := ts.db.VersionInfo(ctx, "long", end.Version)
	if err != nil || vi.Source.Revision != 1 {
		t.Fatalf("version source %+v %v", vi.Source, err)
	}
	old.mu.Lock()
	if old.src != nil || old.refs != 0 {
		t.Errorf("old handle not closed after its last run: refs=%d", old.refs)
	}
	old.mu.Unlock()
	r2 := ts.runWait(t, "long")
	mustSucceed(t, r2)
	if vi, _ := ts.db.VersionInfo(ctx, "long", r2.Version); vi.Source.Revision != 2 || r2.Stats.Unchanged != 3000 {
		t.Fatalf("second run: revision %d stats %+v", vi.Source.Revision, r2.Stats)
	}
	// Drop while a pull runs: it finishes; the next run fails.
	e.exec(t, db, "UPDATE big SET v = 'changed' WHERE id <= 10")
	b = newBlock(ts, "long", 150)
	rec, err = svc.StartRunWith(ctx, "long", RunOptions{Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	<-b.reached
	if err := svc.DropConnection(ctx, "m", false); !errors.Is(err, ErrConnectionInUse) {
		t.Fatalf("drop without force: %v", err)
	}
	if err := svc.DropConnection(ctx, "m", true); err != nil {
		t.Fatal(err)
	}
	close(b.release)
	end, _ = svc.WaitRun(ctx, rec.ID)
	if end.Status != RunSucceeded || end.Stats.Updated != 10 {
		t.Fatalf("run across drop: %+v", end)
	}
	r4 := ts.runWait(t, "long")
	if r4.Status != RunFailed || !strings.Contains(r4.Error, `data connection "m" does not exist`) {
		t.Fatalf("run after drop: %+v", r4)
	}
}

// TestCloseAbortsRunningRun: Close stops a running pull, its version is
// never committed, and Close returns.
func TestCloseAbortsRunningRun(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := longTable(t, e, 500)
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, mysqlConnSpec(t, e, "m", db, map[string]any{"chunk_rows": 100})); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "long", Connection: "m", Resource: "big"}); err != nil {
		t.Fatal(err)
	}
	first := ts.runWait(t, "long")
	mustSucceed(t, first)
	e.exec(t, db, "DELETE FROM big WHERE id > 400")
	b := newBlock(ts, "long", 50)
	rec, err := ts.svc.StartRunWith(ctx, "long", RunOptions{Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	<-b.reached
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := ts.svc.Close(cctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.StartRunWith(ctx, "long", RunOptions{Trigger: "api"}); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("start after close: %v", err)
	}
	got, err := ts.svc.GetRun(ctx, rec.ID)
	if err != nil || got.Status != RunAborted || !strings.Contains(got.Error, "shutting down") {
		t.Fatalf("aborted run record %+v %v", got, err)
	}
	// One cause, said once (e2e.md #1), and a stable code.
	if strings.Count(got.Error, "context canceled") > 1 || strings.Count(got.Error, "shutting down") > 1 || got.Code != "aborted" {
		t.Errorf("aborted run: code %q, error %q", got.Code, got.Error)
	}
	t.Logf("aborted run error: %s", got.Error)
	cur, rows := readAll(t, ts.db, "long")
	if cur.Version != first.Version || len(rows) != 500 {
		t.Fatalf("current version %d with %d rows, want %d with 500", cur.Version, len(rows), first.Version)
	}
	// A restart keeps the record aborted, and the service starts clean.
	ts.close()
	ts = openStack(t, ts.dir, Options{})
	got, err = ts.svc.GetRun(ctx, rec.ID)
	if err != nil || got.Status != RunAborted {
		t.Fatalf("after restart %+v %v", got, err)
	}
}

// TestConnectionTestCauses classifies failed connection tests.
func TestConnectionTestCauses(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	ts := newStack(t, Options{})
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // never answers the handshake
		}
	}()
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte(testFilePassword+"\n"), 0o600)
	t.Setenv("SNAPSTORE_TEST_FILE_PW", testFilePassword)
	cases := []struct {
		name  string
		opts  map[string]any
		cause string
	}{
		{"ok", e.literalOptions("sakila"), ""},
		{"auth", map[string]any{"host": e.Host, "port": e.Port, "user": e.User, "password": "file:" + pwFile}, "auth"},
		{"authenv", map[string]any{"host": e.Host, "port": e.Port, "user": e.User, "password": "env:SNAPSTORE_TEST_FILE_PW"}, "auth"},
		{"unknowndb", e.literalOptions("no_such_db_snapstore"), "unknown_database"},
		{"unreachable", map[string]any{"host": "127.0.0.1", "port": closedPort, "user": "u", "password": e.Password}, "unreachable"},
		{"timeout", map[string]any{"host": "127.0.0.1", "port": silent.Addr().(*net.TCPAddr).Port, "user": "u", "password": e.Password, "connect_timeout": "300ms"}, "timeout"},
		{"config", map[string]any{"host": e.Host, "user": e.User, "password": "env:SNAPSTORE_TEST_UNSET_VARIABLE"}, "config"},
		{"dsn", map[string]any{"dsn": fmt.Sprintf("%s:%s@tcp(%s:%s)/sakila", e.User, e.Password, e.Host, e.Port)}, ""},
		{"socket", map[string]any{"socket": e.Socket, "user": e.User, "password": e.Password}, ""},
		{"dsnauth", map[string]any{"dsn": fmt.Sprintf("%s:%s@tcp(%s:%s)/sakila", e.User, testFilePassword, e.Host, e.Port)}, "auth"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "socket" && e.Socket == "" {
				t.Skip("SNAPSTORE_TEST_MYSQL_SOCKET unset")
			}
			if _, _, err := ts.svc.PutConnection(ctx, ConnectionSpec{Name: tc.name, Type: "mysql", Options: tc.opts}); err != nil {
				t.Fatal(noteErr(err))
			}
			res, err := ts.svc.TestConnection(ctx, tc.name)
			if err != nil {
				t.Fatal(noteErr(err))
			}
			b, _ := json.Marshal(res)
			noteText(string(b))
			c, _ := ts.svc.GetConnection(ctx, tc.name)
			b, _ = json.Marshal(c)
			noteText(string(b))
			if tc.cause == "" {
				if !res.OK || !strings.Contains(res.ServerVersion, "MariaDB") {
					t.Fatalf("test %+v", res)
				}
				return
			}
			if res.OK || res.Cause != tc.cause {
				t.Fatalf("test %+v, want cause %s", res, tc.cause)
			}
		})
	}
	if _, err := ts.svc.TestConnection(ctx, "nope"); !errors.Is(err, ErrConnectionNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	// A pull through a connection with a wrong password fails with
	// ErrSourceAuth in its error text, never the password.
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "a", Connection: "dsnauth", Resource: "actor"}); err != nil {
		t.Fatal(err)
	}
	rec := ts.runWait(t, "a")
	if rec.Status != RunFailed || !strings.Contains(rec.Error, "refused the credentials") {
		t.Fatalf("run with bad password: %+v", rec)
	}
}

// TestSecretRendering: Secret never prints its text.
func TestSecretRendering(t *testing.T) {
	s := newSecret(testFilePassword)
	var sb strings.Builder
	l := slog.New(slog.NewTextHandler(&sb, nil))
	l.Info("x", "secret", s, "group", slog.GroupValue(slog.Any("p", s)))
	b, _ := json.Marshal(map[string]any{"p": s})
	texts := []string{
		fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x %X %d", s, s, s, s, s, s, s, s),
		fmt.Sprintf("%v %+v", struct{ P Secret }{s}, &struct{ P Secret }{s}), sb.String(), string(b),
	}
	for _, txt := range texts {
		noteText(txt)
		if strings.Contains(txt, testFilePassword) || strings.Contains(txt, hexOf(testFilePassword)) {
			t.Errorf("secret printed: %s", txt)
		}
	}
	if s.Reveal() != testFilePassword || newSecret("").String() != "" {
		t.Fatal("Reveal or empty String wrong")
	}
}

func hexOf(s string) string { return fmt.Sprintf("%x", []byte(s)) }

// TestSecretsNeverShown drives literal secrets (password and a DSN) through
// every reporting path: responses, run records, test results, metrics and
// logs, and checks the password appears in none (TestMain checks the whole
// suite's logs and errors again at the end).
func TestSecretsNeverShown(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	var logs strings.Builder
	logger := slog.New(slog.NewJSONHandler(&lockedBuilder{b: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := newStack(t, Options{Registerer: reg, Logger: logger})
	dsn := fmt.Sprintf("%s:%s@tcp(%s:%s)/sakila", e.User, e.Password, e.Host, e.Port)
	badDSN := fmt.Sprintf("%s:%s@tcp(%s:%s)/sakila?bogus_param=%%", e.User, e.Password, e.Host, e.Port)
	var texts []string
	add := func(v any, err error) {
		b, _ := json.Marshal(v)
		texts = append(texts, string(b))
		if err != nil {
			texts = append(texts, err.Error(), fmt.Sprintf("%+v %#v", err, err))
		}
	}
	add(ts.svc.CreateConnection(ctx, ConnectionSpec{Name: "lit", Type: "mysql", Sharing: SharingPooled, Options: map[string]any{
		"host": e.Host, "port": e.Port, "user": e.User, "password": e.Password, "database": "sakila", "max_open": 1}}))
	add(ts.svc.CreateConnection(ctx, ConnectionSpec{Name: "dsn", Type: "mysql", Options: map[string]any{"dsn": dsn}}))
	c, err := ts.svc.CreateConnection(ctx, ConnectionSpec{Name: "baddsn", Type: "mysql", Options: map[string]any{"dsn": badDSN}})
	if !errors.Is(err, ErrBadOption) {
		t.Errorf("literal bad DSN accepted: %v", err)
	}
	add(c, err)
	// By reference it is only resolved, and refused, when opened.
	t.Setenv("SNAPSTORE_TEST_BAD_DSN", badDSN)
	add(ts.svc.CreateConnection(ctx, ConnectionSpec{Name: "baddsn", Type: "mysql", Options: map[string]any{"dsn": "env:SNAPSTORE_TEST_BAD_DSN"}}))
	add(ts.svc.CreateConnection(ctx, ConnectionSpec{Name: "badopt", Type: "mysql", Options: map[string]any{"user": e.User, "password": 42, "pasword": e.Password}}))
	add(ts.svc.ListConnections(), nil)
	for _, n := range []string{"lit", "dsn", "baddsn"} {
		add(ts.svc.GetConnection(ctx, n))
		add(ts.svc.TestConnection(ctx, n))
		add(ts.svc.Resources(ctx, n))
		add(ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "a-" + n, Connection: n, Resource: "language"}))
		rec := ts.runWait(t, "a-"+n)
		add(rec, nil)
		if n != "baddsn" {
			mustSucceed(t, rec)
		} else if rec.Status != RunFailed {
			t.Errorf("run through a bad DSN: %+v", rec)
		}
	}
	add(ts.svc.ListRuns(ctx, "", 0))
	add(ts.svc.ListAdapters(), nil)
	mfs, _ := reg.Gather()
	add(mfs, nil)
	texts = append(texts, logs.String())
	for _, txt := range texts {
		noteText(txt)
		if strings.Contains(txt, e.Password) {
			t.Errorf("password in %s", txt)
		}
	}
	if !strings.Contains(strings.Join(texts, "\n"), "options.pasword") {
		t.Errorf("bad option key not named")
	}
}

type lockedBuilder struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestTableReaderCancel: a cancelled context stops a read with the
// context's error.
func TestTableReaderCancel(t *testing.T) {
	e := mysqlEnv(t)
	db := longTable(t, e, 1000)
	src := e.openSource(t, db, map[string]any{"chunk_rows": 100})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr, err := src.OpenTable(ctx, TableRequest{Resource: "big"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	n := 0
	for tr.Next(ctx) {
		if n++; n == 150 {
			cancel()
		}
	}
	if n >= 1000 || !errors.Is(tr.Err(), context.Canceled) {
		t.Fatalf("read %d rows after cancel, err %v", n, noteErr(tr.Err()))
	}
}

// TestDSNFromConfigWithAwkwardCredentials: a user name and password full
// of DSN syntax (@ : / ? & = % quotes) connect, because the DSN is built
// with mysql.Config, never concatenated; and they never show.
func TestDSNFromConfigWithAwkwardCredentials(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "creds")
	user := "snap@x:y/" + db[len(db)-8:]
	pw := `p@ss:w/rd?&=%` + "`'\"" + testFilePassword
	a := e.admin(t, "")
	quoted := func(s string) string { return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'" }
	for _, s := range []string{
		"CREATE USER " + quoted(user) + "@'%' IDENTIFIED BY " + quoted(pw),
		"GRANT SELECT ON " + quoteMySQLIdent(db) + ".* TO " + quoted(user) + "@'%'",
	} {
		if _, err := a.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { a.Exec("DROP USER " + quoted(user) + "@'%'") })
	e.exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)")
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, ConnectionSpec{Name: "weird", Type: "mysql", Options: map[string]any{
		"host": e.Host, "port": e.Port, "user": user, "password": pw, "database": db}}); err != nil {
		t.Fatal(noteErr(err))
	}
	res, err := ts.svc.TestConnection(ctx, "weird")
	if err != nil || !res.OK {
		t.Fatalf("test %+v %v", res, noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "t", Connection: "weird", Resource: "t"}); err != nil {
		t.Fatal(err)
	}
	rec := ts.runWait(t, "t")
	mustSucceed(t, rec)
	if rec.RowsRead != 2 {
		t.Fatalf("rows %d", rec.RowsRead)
	}
	c, _ := ts.svc.GetConnection(ctx, "weird")
	b, _ := json.Marshal(c)
	if strings.Contains(string(b), testFilePassword) {
		t.Fatalf("password shown: %s", b)
	}
	noteText(string(b))
}

// TestSourceLostMidRead: the source server drops the reading connection
// mid-run (KILL, as a MariaDB stop does); the run fails with
// source_unavailable and an error naming the data connection and saying
// the server went away (e2e.md #2).
func TestSourceLostMidRead(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := longTable(t, e, 500)
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, mysqlConnSpec(t, e, "priv", db, map[string]any{"chunk_rows": 100})); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "big", Connection: "priv", Resource: "big"}); err != nil {
		t.Fatal(err)
	}
	b := newBlock(ts, "big", 50)
	rec, err := ts.svc.StartRunWith(ctx, "big", RunOptions{Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	<-b.reached
	admin := e.admin(t, db)
	rows, err := admin.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()", db)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) == 0 {
		t.Fatal("no reading connection found")
	}
	for _, id := range ids {
		if _, err := admin.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err != nil {
			t.Logf("KILL %d: %v", id, err)
		}
	}
	close(b.release)
	end, err := ts.svc.WaitRun(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lost source: code %s, error %s", end.Code, end.Error)
	if end.Status != RunFailed || end.Code != "source_unavailable" || !strings.Contains(end.Error, `data connection "priv"`) || !strings.Contains(end.Error, "went away") {
		t.Fatalf("run after the source dropped it: %+v", end)
	}
}
