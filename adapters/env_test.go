package adapters

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/snapstore/snapstore/internal/testenv"
	"go.uber.org/goleak"
)

// The secrets check (N4): every log line written through testLogger
// and every error passed to noteErr is kept here, and TestMain fails the
// run when the test password appears anywhere in it.
var (
	leakMu  sync.Mutex
	leakBuf bytes.Buffer
)

type lockedWriter struct{}

func (lockedWriter) Write(p []byte) (int, error) {
	leakMu.Lock()
	defer leakMu.Unlock()
	return leakBuf.Write(p)
}

// testLogger returns a logger whose lines the secrets check reads.
func testLogger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(lockedWriter{}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// noteErr records an error's text (and its %+v and %#v forms) for the
// secrets check and returns it.
func noteErr(err error) error {
	if err != nil {
		leakMu.Lock()
		fmt.Fprintf(&leakBuf, "%s\n%+v\n%#v\n", err.Error(), err, err)
		leakMu.Unlock()
	}
	return err
}

// noteText records any text (response bodies, marshalled records).
func noteText(s string) {
	leakMu.Lock()
	leakBuf.WriteString(s + "\n")
	leakMu.Unlock()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		// Every pool, run, scheduler loop and reader must be gone.
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	if my, ok := testenv.LookupMySQL(); ok && my.Password != "" && code == 0 {
		leakMu.Lock()
		text := leakBuf.String()
		leakMu.Unlock()
		secrets := []string{my.Password, testFilePassword}
		if pg, ok := testenv.LookupPostgres(); ok && pg.Password != "" {
			secrets = append(secrets, pg.Password)
		}
		for _, secret := range secrets {
			if i := strings.Index(text, secret); i >= 0 {
				lo := max(0, i-200)
				fmt.Fprintf(os.Stderr, "SECRET LEAK: a test password appears in collected logs/errors:\n...%s...\n", text[lo:min(len(text), i+len(secret)+50)])
				code = 1
			}
		}
		if code == 0 {
			fmt.Fprintf(os.Stderr, "secrets check: %d bytes of logs, errors and responses scanned, no test password found\n", len(text))
		}
	}
	os.Exit(code)
}

// testFilePassword is a second secret, served through file: and env:
// references only.
const testFilePassword = "file-secret-7f3a9c"

// mysqlTestEnv is the test MariaDB with the suites' helpers.
type mysqlTestEnv struct {
	testenv.MySQLServer
}

// mysqlEnv returns the test MariaDB or skips (testenv.MySQL).
func mysqlEnv(t testing.TB) mysqlTestEnv {
	t.Helper()
	return mysqlTestEnv{testenv.MySQL(t)}
}

// options returns mysql connection options for database db, the password
// given by an env: reference (so it is never in a spec).
func (e mysqlTestEnv) options(t testing.TB, db string) map[string]any {
	t.Setenv("SNAPSTORE_TEST_PW_REF", e.Password)
	o := map[string]any{"host": e.Host, "user": e.User, "password": "env:SNAPSTORE_TEST_PW_REF"}
	if e.Port != "" {
		o["port"] = e.Port
	}
	if db != "" {
		o["database"] = db
	}
	return o
}

// literalOptions gives the password as a literal option.
func (e mysqlTestEnv) literalOptions(db string) map[string]any {
	o := map[string]any{"host": e.Host, "user": e.User, "password": e.Password, "port": e.Port}
	if db != "" {
		o["database"] = db
	}
	return o
}

// admin opens a plain driver connection for setting up fixtures.
func (e mysqlTestEnv) admin(t testing.TB, db string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net = e.User, e.Password, "tcp"
	cfg.Addr = net.JoinHostPort(e.Host, e.Port)
	cfg.DBName = db
	cfg.MultiStatements = true
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := sql.OpenDB(c)
	t.Cleanup(func() { d.Close() })
	return d
}

// tempDatabase creates a uniquely named database and drops it at cleanup.
func (e mysqlTestEnv) tempDatabase(t testing.TB, prefix string) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	name := "snapstore_t_" + prefix + "_" + hex.EncodeToString(b[:])
	a := e.admin(t, "")
	if _, err := a.Exec("CREATE DATABASE " + quoteMySQLIdent(name) + " CHARACTER SET utf8mb4"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := a.Exec("DROP DATABASE IF EXISTS " + quoteMySQLIdent(name)); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	return name
}

// exec runs statements in database db.
func (e mysqlTestEnv) exec(t testing.TB, db string, stmts ...string) {
	t.Helper()
	a := e.admin(t, db)
	for _, s := range stmts {
		if _, err := a.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// openSource opens a mysql Source on db with extra options.
func (e mysqlTestEnv) openSource(t testing.TB, db string, extra map[string]any) Source {
	t.Helper()
	o := e.options(t, db)
	for k, v := range extra {
		o[k] = v
	}
	src, err := openTestSource(context.Background(), "mysql", SharingShared, o)
	if err != nil {
		t.Fatal(noteErr(err))
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// openTestSource parses, validates, resolves and opens like the registry.
func openTestSource(ctx context.Context, typ string, sharing Sharing, raw map[string]any) (Source, error) {
	c, err := lookupConnector(typ)
	if err != nil {
		return nil, err
	}
	o, pool, err := parseOptions("options.", c.Options(), sharing, raw)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(o); err != nil {
		return nil, err
	}
	r, err := resolveSecrets(ctx, testLogger(), "options.", o, nil)
	if err != nil {
		return nil, err
	}
	return c.Open(ctx, SourceConfig{Name: "test", Options: r, Pool: pool, Logger: testLogger()})
}

// quoteMySQLIdent and quotePostgresIdent quote the identifiers of the
// fixtures' SQL.
func quoteMySQLIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func quotePostgresIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// chunkQueries returns the chunk queries a keyset table reader sent and
// its query of the chunks after the first (source.Keyset), read through
// reflection: they are the reader's state, not its API.
func chunkQueries(tr TableReader) (int, string) {
	k := reflect.ValueOf(tr).Elem().FieldByName("Keyset")
	return int(k.FieldByName("Queries").Int()), k.FieldByName("next").String()
}
