package adapters

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/snapstore/snapstore/snapshot"
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

func TestSQLiteSource(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	src, err := openTestSource(ctx, "sqlite", SharingShared, map[string]any{"path": path, "chunk_rows": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res, err := src.(ResourceLister).Resources(ctx)
	if err != nil || len(res) != 4 || res[0].Name != "cheap" || res[0].Type != "view" || res[1].Name != "items" || res[1].EstimatedRows != 3 {
		t.Fatalf("resources %+v %v", res, err)
	}
	if tr := src.(Tester).Test(ctx); !tr.OK {
		t.Fatalf("test %+v", tr)
	}
	read := func(req TableRequest) ([][]snapshot.Value, snapshot.Schema, error) {
		tr, err := src.OpenTable(ctx, req)
		if err != nil {
			return nil, snapshot.Schema{}, err
		}
		defer tr.Close()
		var rows [][]snapshot.Value
		for tr.Next(ctx) {
			row := make([]snapshot.Value, len(tr.Values()))
			for i, v := range tr.Values() {
				v.Bytes = append([]byte(nil), v.Bytes...)
				row[i] = v
			}
			rows = append(rows, row)
		}
		return rows, tr.Schema(), tr.Err()
	}
	rows, sch, err := read(TableRequest{Resource: "items"})
	if err != nil || len(rows) != 3 {
		t.Fatalf("items: %d rows, %v", len(rows), err)
	}
	wantKinds := []snapshot.Kind{snapshot.KindInt, snapshot.KindString, snapshot.KindDecimal, snapshot.KindDateTime, snapshot.KindBytes, snapshot.KindFloat}
	for i, c := range sch.Columns {
		if c.Kind != wantKinds[i] {
			t.Errorf("column %s kind %d, want %d", c.Name, c.Kind, wantKinds[i])
		}
	}
	if got := stringsOf(rows[0]); got != `int 1, kind 5 "apple" (nil=false), kind 4 "1.5" (nil=false), kind 8 "2026-01-02 03:04:05" (nil=false), kind 6 hex 00ff, float 0.5` {
		t.Errorf("row 1: %s", got)
	}
	if got := stringsOf(rows[1]); got != `int 2, kind 5 "pear" (nil=false), kind 4 "2" (nil=false), NULL, NULL, NULL` {
		t.Errorf("row 2: %s", got)
	}
	// Composite unique key over quoted identifiers, paged one row per chunk.
	rows, sch, err = read(TableRequest{Resource: `"odd ""name"""`})
	if err != nil || len(rows) != 3 || len(sch.Key) != 2 || sch.Key[0] != "k.1" || sch.Key[1] != "K" {
		t.Fatalf("odd: %v %+v %v", len(rows), sch, err)
	}
	if string(rows[0][2].Bytes) != "y" || string(rows[1][2].Bytes) != "x" || string(rows[2][2].Bytes) != "z" {
		t.Errorf("odd order: %s | %s | %s", stringsOf(rows[0]), stringsOf(rows[1]), stringsOf(rows[2]))
	}
	if _, _, err := read(TableRequest{Resource: "nokey"}); !errors.Is(err, ErrNoKey) {
		t.Errorf("nokey: %v", err)
	}
	sqliteExec(t, path, `INSERT INTO nokey VALUES ('a', '1'), ('b', '2'), ('b', '3')`)
	if _, _, err := read(TableRequest{Resource: "nokey", KeyColumns: []string{"a"}}); !errors.Is(err, ErrNoKey) {
		t.Errorf("duplicate explicit key across chunks: %v", err)
	}
	rows, _, err = read(TableRequest{Resource: "nokey", KeyColumns: []string{"a", "b"}})
	if err != nil || len(rows) != 3 {
		t.Errorf("explicit composite key: %d %v", len(rows), err)
	}
	rows, _, err = read(TableRequest{Resource: "cheap", KeyColumns: []string{"id"}})
	if err != nil || len(rows) != 2 {
		t.Errorf("view: %d %v", len(rows), err)
	}
	if _, _, err := read(TableRequest{Resource: "missing"}); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("missing: %v", err)
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
		if _, err := ts.svc.CreateConnection(ctx, ConnectionSpec{Name: name, Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
			t.Fatal(err)
		}
		_, err := ts.svc.Resources(ctx, name)
		if !errors.Is(err, ErrSourceUnavailable) {
			t.Errorf("%s: resources: %v, want ErrSourceUnavailable", name, err)
		}
	}
}
