package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"net"
	"strconv"
	"testing"

	"github.com/snapstore/snapstore/internal/testenv"

	"github.com/go-sql-driver/mysql"

	"github.com/snapstore/snapstore/adapters/source"
)

// testEnv is the test MariaDB server (internal/testenv), with the
// fixtures this package's tests open on it.
type testEnv struct {
	Host, Port, User, Password string
}

// mysqlEnv returns the test server, or skips (internal/testenv).
func mysqlEnv(t testing.TB) testEnv {
	t.Helper()
	s := testenv.MySQL(t)
	return testEnv{Host: s.Host, Port: s.Port, User: s.User, Password: s.Password}
}

// admin opens a plain driver connection for setting up fixtures.
func (e testEnv) admin(t testing.TB, db string) *sql.DB {
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
func (e testEnv) tempDatabase(t testing.TB, prefix string) string {
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
func (e testEnv) exec(t testing.TB, db string, stmts ...string) {
	t.Helper()
	a := e.admin(t, db)
	for _, s := range stmts {
		if _, err := a.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// openSource opens a mysql Source on db through the connector.
func (e testEnv) openSource(t testing.TB, db string) source.Source {
	t.Helper()
	o := source.OptionValues{"host": e.Host, "user": e.User, "password": source.NewSecret(e.Password), "database": db}
	if e.Port != "" {
		port, err := strconv.ParseInt(e.Port, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		o["port"] = port
	}
	src, err := mysqlConnector{}.Open(context.Background(), source.SourceConfig{Name: "test", Options: o, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}
