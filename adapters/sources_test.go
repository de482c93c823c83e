package adapters

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/testenv"
)

// sourceEnv is one real source server the connection, adapter and pull
// suites run against: MariaDB (scripts/mariadb.sh) or PostgreSQL
// (scripts/postgres.sh). Suites that hold for every SQL source take a
// sourceEnv and run once per server (forEachSource), as etcd runs one table
// through two paths.
type sourceEnv interface {
	// typ is the connection type, "mysql" or "postgres".
	typ() string
	// tempDatabase creates a uniquely named database, dropped at cleanup.
	tempDatabase(t testing.TB, prefix string) string
	// exec runs statements in database db.
	exec(t testing.TB, db string, stmts ...string)
	// queryStrings runs query (two columns: key text, value text or NULL)
	// in db, in UTC.
	queryStrings(t testing.TB, db, query string) map[string]string
	// options are connection options for db, the password as an env:
	// reference; literalOptions give it as a literal.
	options(t testing.TB, db string) map[string]any
	literalOptions(db string) map[string]any
	// quote quotes an identifier.
	quote(s string) string
	// dialect rewrites the portable DDL of the suites: types that are
	// spelled differently.
	dialect(sql string) string
	// longTable creates a database with table big (id, v) of n rows.
	longTable(t testing.TB, n int) string
	// terminate ends every other session of the test user in db (the
	// source goes away mid-read).
	terminate(t testing.TB, db string)
	// serverName is what a connection test's server_version starts with.
	serverName() string
}

// forEachSource runs f once per source server, as subtests named for the
// connection type; a server whose variables are unset is skipped there.
func forEachSource(t *testing.T, f func(t *testing.T, e sourceEnv)) {
	t.Helper()
	for _, typ := range []string{"mysql", "postgres"} {
		t.Run(typ, func(t *testing.T) {
			var e sourceEnv
			if typ == "mysql" {
				e = mysqlEnv(t)
			} else {
				e = postgresEnv(t)
			}
			f(t, e)
		})
	}
}

// connSpec is a connection of e's type to db with extra options.
func connSpec(t testing.TB, e sourceEnv, name, db string, extra map[string]any) api.Connection {
	o := e.options(t, db)
	for k, v := range extra {
		o[k] = v
	}
	return api.Connection{Name: name, Type: e.typ(), Options: o}
}

// openEnvSource opens a Source of e's type on db with extra options.
func openEnvSource(t testing.TB, e sourceEnv, db string, extra map[string]any) Source {
	t.Helper()
	o := e.options(t, db)
	for k, v := range extra {
		o[k] = v
	}
	src, err := openTestSource(context.Background(), e.typ(), SharingShared, o)
	if err != nil {
		t.Fatal(noteErr(err))
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// The mysql side of sourceEnv (env_test.go has the rest).

func (e mysqlTestEnv) typ() string             { return "mysql" }
func (e mysqlTestEnv) quote(s string) string   { return quoteMySQLIdent(s) }
func (e mysqlTestEnv) dialect(s string) string { return s }
func (e mysqlTestEnv) serverName() string      { return "" }
func (e mysqlTestEnv) queryStrings(t testing.TB, db, query string) map[string]string {
	return sourceStrings(t.(*testing.T), e, db, query)
}
func (e mysqlTestEnv) longTable(t testing.TB, n int) string { return longTable(t.(*testing.T), e, n) }
func (e mysqlTestEnv) terminate(t testing.TB, db string) {
	t.Helper()
	a := e.admin(t, "")
	rows, err := a.Query("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", db)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		a.Exec(fmt.Sprintf("KILL %d", id))
	}
}

// postgresTestEnv is the test PostgreSQL with the suites' helpers.
type postgresTestEnv struct {
	testenv.PostgresServer
}

// postgresEnv returns the test PostgreSQL or skips (testenv.Postgres).
func postgresEnv(t testing.TB) postgresTestEnv {
	t.Helper()
	return postgresTestEnv{testenv.Postgres(t)}
}

func (e postgresTestEnv) typ() string           { return "postgres" }
func (e postgresTestEnv) quote(s string) string { return quotePostgresIdent(s) }
func (e postgresTestEnv) serverName() string    { return "PostgreSQL" }

// dialect spells the suites' MySQL types as PostgreSQL's.
func (e postgresTestEnv) dialect(s string) string {
	return mysqlToPostgres.Replace(s)
}

var mysqlToPostgres = strings.NewReplacer(
	"DROP PRIMARY KEY", "DROP CONSTRAINT t_pkey", "MODIFY COLUMN c VARCHAR(20) NULL", "ALTER COLUMN c TYPE VARCHAR(20)",
	"`", `"`)

func (e postgresTestEnv) options(t testing.TB, db string) map[string]any {
	t.Setenv("SNAPSTORE_TEST_PW_REF_PG", e.Password)
	o := map[string]any{"host": e.Host, "port": e.Port, "user": e.User, "password": "env:SNAPSTORE_TEST_PW_REF_PG", "sslmode": "disable"}
	if db != "" {
		o["database"] = db
	}
	return o
}

func (e postgresTestEnv) literalOptions(db string) map[string]any {
	o := map[string]any{"host": e.Host, "port": e.Port, "user": e.User, "password": e.Password, "sslmode": "disable"}
	if db != "" {
		o["database"] = db
	}
	return o
}

// connect opens a plain pgx connection to db for fixtures.
func (e postgresTestEnv) connect(t testing.TB, db string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%s sslmode=disable", e.Host, e.Port))
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Password, cfg.Database = e.User, e.Password, db
	if db == "" {
		cfg.Database = "postgres"
	}
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (e postgresTestEnv) tempDatabase(t testing.TB, prefix string) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	name := "snapstore_t_" + prefix + "_" + hex.EncodeToString(b[:])
	a := e.connect(t, "")
	if _, err := a.Exec(context.Background(), "CREATE DATABASE "+quotePostgresIdent(name)+" TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := a.Exec(context.Background(), "DROP DATABASE IF EXISTS "+quotePostgresIdent(name)+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	return name
}

func (e postgresTestEnv) exec(t testing.TB, db string, stmts ...string) {
	t.Helper()
	a := e.connect(t, db)
	for _, s := range stmts {
		if _, err := a.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func (e postgresTestEnv) queryStrings(t testing.TB, db, query string) map[string]string {
	t.Helper()
	a := e.connect(t, db)
	ctx := context.Background()
	if _, err := a.Exec(ctx, "SET TIME ZONE 'UTC'"); err != nil {
		t.Fatal(err)
	}
	rows, err := a.Query(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k string
		var v *string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		if v == nil {
			out[k] = "NULL"
		} else {
			out[k] = *v
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (e postgresTestEnv) longTable(t testing.TB, n int) string {
	db := e.tempDatabase(t, "long")
	e.exec(t, db, "CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(40))",
		fmt.Sprintf("INSERT INTO big SELECT g, 'row ' || g FROM generate_series(1, %d) g", n), "ANALYZE big")
	return db
}

func (e postgresTestEnv) terminate(t testing.TB, db string) {
	t.Helper()
	e.exec(t, "", fmt.Sprintf("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '%s' AND pid <> pg_backend_pid()", db))
}
