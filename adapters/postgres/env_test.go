package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"testing"

	"github.com/snapstore/snapstore/internal/testenv"

	"github.com/jackc/pgx/v5"

	"github.com/snapstore/snapstore/adapters/source"
)

// testEnv is the test PostgreSQL server (internal/testenv), with the
// fixtures this package's tests open on it.
type testEnv struct {
	Host, Port, User, Password string
}

// postgresEnv returns the test server, or skips (internal/testenv).
func postgresEnv(t testing.TB) testEnv {
	t.Helper()
	s := testenv.Postgres(t)
	return testEnv{Host: s.Host, Port: s.Port, User: s.User, Password: s.Password}
}

// connect opens a plain pgx connection to db for fixtures.
func (e testEnv) connect(t testing.TB, db string) *pgx.Conn {
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

// tempDatabase creates a uniquely named database and drops it at cleanup.
func (e testEnv) tempDatabase(t testing.TB, prefix string) string {
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

// exec runs statements in database db.
func (e testEnv) exec(t testing.TB, db string, stmts ...string) {
	t.Helper()
	c := e.connect(t, db)
	for _, s := range stmts {
		if _, err := c.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// openSource opens a postgres Source on db through the connector.
func (e testEnv) openSource(t testing.TB, db string) source.Source {
	t.Helper()
	o := source.OptionValues{"host": e.Host, "user": e.User, "password": source.NewSecret(e.Password), "sslmode": "disable", "database": db}
	if e.Port != "" {
		port, err := strconv.ParseInt(e.Port, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		o["port"] = port
	}
	src, err := postgresConnector{}.Open(context.Background(), source.SourceConfig{Name: "test", Options: o, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}
