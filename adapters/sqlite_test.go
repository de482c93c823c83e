package adapters

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/snapstore/snapstore/api"
)

// newSQLiteFixture writes a small SQLite database and returns its path.
func newSQLiteFixture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "src.db")
	sqliteExec(t, path,
		`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price DECIMAL(8,2), added DATETIME, data BLOB, ratio REAL)`,
		`INSERT INTO items VALUES (1, 'apple', '1.50', '2026-01-02 03:04:05', x'00ff', 0.5), (2, 'pear', 2, NULL, NULL, NULL), (3, 'fig', '10.05', '2026-02-03', x'', 1e300)`,
		`CREATE TABLE "odd ""name""" ("k.1" TEXT NOT NULL, "K" INTEGER NOT NULL, v TEXT, UNIQUE ("k.1", "K"))`,
		`INSERT INTO "odd ""name""" VALUES ('a', 2, 'x'), ('a', 1, 'y'), ('b', 0, 'z')`,
		`CREATE TABLE nokey (a TEXT, b TEXT)`,
		`CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 5`,
	)
	return path
}

func sqliteExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// A sqlite connection whose path is not a database (a text file, a
// directory) lists no resources with ErrSourceUnavailable, never an
// unclassified error (which the server would answer with a 500).
func TestSQLiteNotADatabase(t *testing.T) {
	ctx := context.Background()
	ts := newStack(t, Options{Logger: testLogger()})
	text := t.TempDir() + "/text.db"
	if err := os.WriteFile(text, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"text": text, "dir": t.TempDir()} {
		if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: name, Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
			t.Fatal(err)
		}
		_, err := ts.svc.Resources(ctx, name)
		if !errors.Is(err, ErrSourceUnavailable) {
			t.Errorf("%s: resources: %v, want ErrSourceUnavailable", name, err)
		}
	}
}
