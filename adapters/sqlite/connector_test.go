package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// TestSQLiteReadOnly: the connection a read holds cannot write.
func TestSQLiteReadOnly(t *testing.T) {
	ctx := context.Background()
	src, err := sqliteConnector{}.Open(ctx, source.SourceConfig{Name: "test", Options: source.OptionValues{"path": newSQLiteFixture(t)}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tr, err := src.OpenTable(ctx, source.TableRequest{Resource: "items"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.(*sqliteTable).tx.ExecContext(ctx, "DELETE FROM items"); err == nil {
		t.Errorf("a write through the sqlite connection succeeded")
	}
}

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

func sqliteExec(t testing.TB, path string, stmts ...string) {
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
	src, err := sqliteConnector{}.Open(ctx, source.SourceConfig{Name: "test", Options: source.OptionValues{"path": path, "chunk_rows": int64(1)}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res, err := src.(source.ResourceLister).Resources(ctx)
	if err != nil || len(res) != 4 || res[0].Name != "cheap" || res[0].Type != "view" || res[1].Name != "items" || res[1].EstimatedRows != 3 {
		t.Fatalf("resources %+v %v", res, err)
	}
	// Each table with the key a run would choose: the primary key, a
	// unique index over NOT NULL columns, none.
	for i, want := range []string{"", "id", "", "k.1,K"} {
		if got := strings.Join(res[i].Key, ","); got != want {
			t.Errorf("resource %s key %q, want %q", res[i].Name, got, want)
		}
	}
	if tr := src.(source.Tester).Test(ctx); !tr.OK {
		t.Fatalf("test %+v", tr)
	}
	read := func(req source.TableRequest) ([][]snapshot.Value, snapshot.Schema, error) {
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
	rows, sch, err := read(source.TableRequest{Resource: "items"})
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
	rows, sch, err = read(source.TableRequest{Resource: `"odd ""name"""`})
	if err != nil || len(rows) != 3 || len(sch.Key) != 2 || sch.Key[0] != "k.1" || sch.Key[1] != "K" {
		t.Fatalf("odd: %v %+v %v", len(rows), sch, err)
	}
	if string(rows[0][2].Bytes) != "y" || string(rows[1][2].Bytes) != "x" || string(rows[2][2].Bytes) != "z" {
		t.Errorf("odd order: %s | %s | %s", stringsOf(rows[0]), stringsOf(rows[1]), stringsOf(rows[2]))
	}
	// The name as resources list it, quote characters and all.
	if rows, _, err := read(source.TableRequest{Resource: res[3].Name}); err != nil || len(rows) != 3 {
		t.Errorf("%s as listed: %d rows, %v", res[3].Name, len(rows), err)
	}
	if rows, _, err := read(source.TableRequest{Resource: "main." + res[3].Name}); err != nil || len(rows) != 3 {
		t.Errorf("main.%s: %d rows, %v", res[3].Name, len(rows), err)
	}
	if _, _, err := read(source.TableRequest{Resource: "nokey"}); !errors.Is(err, source.ErrNoKey) {
		t.Errorf("nokey: %v", err)
	}
	sqliteExec(t, path, `INSERT INTO nokey VALUES ('a', '1'), ('b', '2'), ('b', '3')`)
	if _, _, err := read(source.TableRequest{Resource: "nokey", KeyColumns: []string{"a"}}); !errors.Is(err, source.ErrNoKey) {
		t.Errorf("duplicate explicit key across chunks: %v", err)
	}
	rows, _, err = read(source.TableRequest{Resource: "nokey", KeyColumns: []string{"a", "b"}})
	if err != nil || len(rows) != 3 {
		t.Errorf("explicit composite key: %d %v", len(rows), err)
	}
	rows, _, err = read(source.TableRequest{Resource: "cheap", KeyColumns: []string{"id"}})
	if err != nil || len(rows) != 2 {
		t.Errorf("view: %d %v", len(rows), err)
	}
	if _, _, err := read(source.TableRequest{Resource: "missing"}); !errors.Is(err, source.ErrResourceNotFound) {
		t.Errorf("missing: %v", err)
	}
}

// stringsOf is a test helper rendering a row.
func stringsOf(vals []snapshot.Value) string {
	var parts []string
	for _, v := range vals {
		parts = append(parts, fmtValue(v))
	}
	return strings.Join(parts, ", ")
}

func fmtValue(v snapshot.Value) string {
	switch v.Kind {
	case snapshot.KindNull:
		return "NULL"
	case snapshot.KindInt:
		return fmt.Sprintf("int %d", v.Int)
	case snapshot.KindUint:
		return fmt.Sprintf("uint %d", v.Uint)
	case snapshot.KindFloat:
		return fmt.Sprintf("float %v", v.Float)
	case snapshot.KindBytes, snapshot.KindGeometry:
		return fmt.Sprintf("kind %d hex %x", v.Kind, v.Bytes)
	}
	return fmt.Sprintf("kind %d %q (nil=%v)", v.Kind, v.Bytes, v.Bytes == nil)
}

// TestSQLiteCheckFile: a database file and an empty file pass; text, a
// file shorter than the header and another format do not.
func TestSQLiteCheckFile(t *testing.T) {
	path := newSQLiteFixture(t)
	db, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := (sqliteConnector{}).CheckFile("path", db); err != nil {
		t.Errorf("a database: %v", err)
	}
	for text, ok := range map[string]bool{"": true, "root:x:0:0:root:/root:/bin/bash\n": false, "SQLite": false, "SQLite format 2\x00 and more": false} {
		if err := (sqliteConnector{}).CheckFile("path", strings.NewReader(text)); (err == nil) != ok {
			t.Errorf("%q: %v, want accepted %v", text, err, ok)
		}
	}
}
