package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store/pebble"
)

// openDataDir opens the snapshot DB of the Pebble data directory dir,
// before a server opens it; closing the DB closes its store too.
func openDataDir(t *testing.T, dir string) *dataDirDB {
	t.Helper()
	st, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := snapshot.Open(context.Background(), st, snapshot.Options{})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return &dataDirDB{DB: db, st: st}
}

// dataDirDB is a snapshot DB with the store it closes after it.
type dataDirDB struct {
	*snapshot.DB
	st interface{ Close() error }
}

// Close closes the DB, then its store.
func (d *dataDirDB) Close() error { return errors.Join(d.DB.Close(), d.st.Close()) }

// writeShopTables commits two versions of the dataset "shop", of the
// tables "orders" and "order lines", into the Pebble data directory dir
// before a server opens it: order 2 changes and 3 goes in the second.
func writeShopTables(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	db := openDataDir(t, dir)
	defer db.Close()
	iv := func(i int64) snapshot.Value { return snapshot.Value{Kind: snapshot.KindInt, Int: i} }
	sv := func(s string) snapshot.Value { return snapshot.Value{Kind: snapshot.KindString, Bytes: []byte(s)} }
	orders := snapshot.Schema{Columns: []snapshot.Column{{Name: "id", Kind: snapshot.KindInt}, {Name: "customer", Kind: snapshot.KindString}}, Key: []string{"id"}}
	lines := snapshot.Schema{Columns: []snapshot.Column{{Name: "order_id", Kind: snapshot.KindInt}, {Name: "line", Kind: snapshot.KindInt}, {Name: "qty", Kind: snapshot.KindInt}}, Key: []string{"order_id", "line"}}
	for gen := range 2 {
		tr, err := db.BeginTablesRun(ctx, snapshot.DatasetConfig{Name: "shop"}, snapshot.TablesRunOptions{
			Tables: []snapshot.TableSpec{{Name: "orders", Schema: orders}, {Name: "order lines", Schema: lines}},
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := int64(1); i <= 3; i++ {
			cust := fmt.Sprintf("c%d", i)
			if gen == 1 && i == 2 {
				cust = "c2-moved"
			}
			if gen == 0 || i != 3 {
				if err := tr.Table("orders").Put(ctx, []snapshot.Value{iv(i), sv(cust)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := tr.Table("order lines").Put(ctx, []snapshot.Value{iv(i), iv(1), iv(i * 10)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tr.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCLI_Tables: tables lists a version's tables; get, scan, diff and
// versions read one with --table; without it, a read of the dataset's
// rows is refused with the tables named, a diff pointing at --stats.
func TestCLI_Tables(t *testing.T) {
	url, _, _ := startServeWith(t, 0, nil, func(cfg *config.Config) { writeShopTables(t, cfg.Data) })
	do := cliAt(t, url)
	// Through a snapstore connection, the dataset of several tables has
	// no key of its own: the listing points at its tables.
	conn := writeFile(t, "self.yaml", "name: self\ntype: snapstore\noptions: {url: "+url+"}\n")
	do(0, "connections", "create", "-f", conn)
	if out, _ := do(0, "connections", "resources", "self"); !regexp.MustCompile(`(?m)^-\s+shop\s+dataset\s+\d+\s+its tables: below$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^shop\s+orders\s+table\s+\d+\s+id$`).MatchString(out) {
		t.Errorf("resources of a snapstore connection:\n%s", out)
	}
	out, _ := do(0, "tables", "shop")
	if !strings.Contains(out, "order lines  3") || !strings.Contains(out, "orders       2") || !strings.Contains(out, "order_id,line") {
		t.Errorf("tables:\n%s", out)
	}
	if out, _ = do(0, "tables", "shop", "--version", "1"); !strings.Contains(out, "orders       3") {
		t.Errorf("tables --version 1:\n%s", out)
	}
	if out, _ = do(0, "get", "shop", "--table", "order lines", "2", "1"); !strings.Contains(out, `"qty":20`) {
		t.Errorf("get --table:\n%s", out)
	}
	// A composite key given as one argument gets told the form.
	if _, errs := do(1, "get", "shop", "--table", "order lines", "2,1"); !strings.Contains(errs, "1 key parts for 2 key columns") || !strings.Contains(errs, "a composite key is one argument per key column, in key order (snapstore get shop A B)") {
		t.Errorf("get with a composite key in one argument:\n%s", errs)
	}
	if out, _ = do(0, "scan", "shop", "--table", "orders", "--format", "csv"); out != "id,customer\n1,c1\n2,c2-moved\n" {
		t.Errorf("scan --table --format csv:\n%q", out)
	}
	if out, _ = do(0, "diff", "shop", "--table", "orders"); !strings.Contains(out, "customer: c2 -> c2-moved") || !strings.Contains(out, "0 inserted, 1 updated, 1 deleted") {
		t.Errorf("diff --table:\n%s", out)
	}
	if out, _ = do(0, "diff", "shop", "--stats"); !strings.Contains(out, "order lines") || !strings.Contains(out, "(all)") {
		t.Errorf("diff --stats of every table:\n%s", out)
	}
	// A table both versions hold says so in CHANGE, not "-".
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); strings.HasPrefix(line, "orders ") && (len(f) < 2 || f[1] != "compared") {
			t.Errorf("diff --stats: CHANGE of orders in %q, want compared", line)
		}
	}
	if !strings.Contains(out, "orders       compared") {
		t.Errorf("diff --stats names no table compared:\n%s", out)
	}
	if out, _ = do(0, "versions", "shop"); !strings.Contains(out, "TABLES") {
		t.Errorf("versions:\n%s", out)
	}
	out, _ = do(0, "versions", "shop", "--table", "orders")
	if lines := strings.Split(out, "\n"); len(lines) < 2 || strings.Join(strings.Fields(lines[1])[4:8], " ") != "2 0 1 1" {
		t.Errorf("versions --table:\n%s", out)
	}
	if out, _ = do(0, "datasets", "show", "shop", "--version", "1"); !strings.Contains(out, "TABLE") || !strings.Contains(out, "orders       3     id") {
		t.Errorf("datasets show of a dataset of several tables:\n%s", out)
	}
	dir := t.TempDir()
	out, errs := do(0, "export", "shop", "--out", dir, "--version", "1")
	if out != filepath.Join(dir, "order_lines.parquet")+"\n"+filepath.Join(dir, "orders.parquet")+"\n" {
		t.Errorf("export of a dataset of several tables:\n%s", out)
	}
	if !strings.Contains(errs, "shop: version 1\n") {
		t.Errorf("export does not name the version it wrote:\n%s", errs)
	}
	for _, name := range []string{"order_lines.parquet", "orders.parquet"} {
		pf, err := file.OpenParquetFile(filepath.Join(dir, name), false)
		if err != nil {
			t.Fatal(err)
		}
		if pf.NumRows() != 3 {
			t.Errorf("%s: %d rows at version 1, want 3", name, pf.NumRows())
		}
		pf.Close()
	}
	// Another export into that directory is refused before it writes a
	// file; --force replaces the files and says so.
	before, err := os.ReadFile(filepath.Join(dir, "orders.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if out, errs = do(1, "export", "shop", "--out", dir); out != "" || !strings.Contains(errs, dir+" already holds order_lines.parquet, orders.parquet, which this export of shop would replace (nothing written): --force replaces them") {
		t.Errorf("export over an earlier export:\n%s%s", out, errs)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "orders.parquet")); !bytes.Equal(after, before) {
		t.Error("a refused export changed the earlier export's file")
	}
	out, errs = do(0, "export", "shop", "--out", dir, "--force")
	if out != filepath.Join(dir, "order_lines.parquet")+"\n"+filepath.Join(dir, "orders.parquet")+"\n" ||
		!strings.Contains(errs, "shop: version 2\n") || !strings.Contains(errs, "replaced "+filepath.Join(dir, "orders.parquet")+"\n") || !strings.Contains(errs, "replaced "+filepath.Join(dir, "order_lines.parquet")+"\n") {
		t.Errorf("export --force over an earlier export:\n%s%s", out, errs)
	}
	if pf, err := file.OpenParquetFile(filepath.Join(dir, "orders.parquet"), false); err != nil || pf.NumRows() != 2 {
		t.Errorf("orders.parquet after export --force: %v, want version 2's 2 rows", err)
	} else {
		pf.Close()
	}
	if _, errs := do(1, "scan", "shop"); !strings.Contains(errs, "order lines, orders") || !strings.Contains(errs, "; give it with --table NAME") || strings.Contains(errs, "--stats") {
		t.Errorf("scan of a dataset of several tables:\n%s", errs)
	}
	// A diff without --table says how to get every table's counts.
	// It says so once, with the command's flags rather than the API's
	// routes, and names the tables once.
	if _, errs := do(1, "diff", "shop"); !strings.Contains(errs, "name one: order lines, orders; snapstore diff shop --stats lists every table's counts; --table NAME shows a table's changes\n") ||
		strings.Contains(errs, "GET /v1/") || strings.Count(errs, "orders") != 1 {
		t.Errorf("diff of a dataset of several tables:\n%s", errs)
	}
}

// TestCLI_TablesDropped: a table dropped, then created again: versions
// --table gives its deleted rows at the version that dropped it, diff
// --stats counts it dropped, then replaced, and its --table diff across
// both says why it compares no rows, with the command's flags.
func TestCLI_TablesDropped(t *testing.T) {
	url, _, _ := startServeWith(t, 0, nil, func(cfg *config.Config) {
		ctx := context.Background()
		db := openDataDir(t, cfg.Data)
		defer db.Close()
		schema := snapshot.Schema{Columns: []snapshot.Column{{Name: "id", Kind: snapshot.KindInt}}, Key: []string{"id"}}
		for _, tables := range [][]string{{"a", "b"}, {"a"}, {"a", "b"}} {
			var specs []snapshot.TableSpec
			for _, n := range tables {
				specs = append(specs, snapshot.TableSpec{Name: n, Schema: schema})
			}
			tr, err := db.BeginTablesRun(ctx, snapshot.DatasetConfig{Name: "bank", Retention: snapshot.Retention{MinVersions: 10}},
				snapshot.TablesRunOptions{Tables: specs, DropMissing: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tables {
				for i := range int64(len(n) * 3) { // a: 3 rows, b: 3 rows
					if err := tr.Table(n).Put(ctx, []snapshot.Value{{Kind: snapshot.KindInt, Int: i}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := tr.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
	do := cliAt(t, url)
	var vs []string // the versions, oldest first
	out, _ := do(0, "versions", "bank", "--table", "b")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i > 0; i-- {
		vs = append(vs, strings.Fields(lines[i])[0])
	}
	// VERSION COMMITTED(2 fields) VERIFIED ROWS INSERTED UPDATED DELETED
	if len(vs) != 3 || strings.Join(strings.Fields(lines[2])[4:8], " ") != "- - - 3" {
		t.Fatalf("versions --table b:\n%s", out)
	}
	if out, _ = do(0, "versions", "bank"); !regexp.MustCompile(`(?m)^` + vs[1] + `\s.*\s3\s+1\s+0\s+0\s+3\s`).MatchString(out) {
		t.Errorf("versions: the version dropping b does not count its 3 rows deleted:\n%s", out)
	}
	if out, _ = do(0, "diff", "bank", "--from", vs[0], "--to", vs[1], "--stats"); !regexp.MustCompile(`(?m)^b\s+dropped\s+0\s+0\s+3$`).MatchString(out) {
		t.Errorf("diff --stats across the drop:\n%s", out)
	}
	if out, _ = do(0, "diff", "bank", "--from", vs[0], "--to", vs[2], "--stats"); !regexp.MustCompile(`(?m)^b\s+replaced\s+3\s+0\s+3$`).MatchString(out) {
		t.Errorf("diff --stats across the drop and the add:\n%s", out)
	}
	_, errs := do(1, "diff", "bank", "--table", "b", "--from", vs[0], "--to", vs[2])
	if !strings.Contains(errs, "version "+vs[0]+" of bank holds a table of that name (3 rows keyed by id), version "+vs[2]+" another one") ||
		!strings.Contains(errs, "snapstore diff bank --stats with the same --from and --to counts it replaced") || strings.Contains(errs, "stats_only") {
		t.Errorf("diff --table of a table created again:\n%s", errs)
	}
	_, errs = do(1, "diff", "bank", "--table", "b", "--from", vs[0], "--to", vs[1])
	if !strings.Contains(errs, "version "+vs[0]+" of bank holds the table, version "+vs[1]+" does not") ||
		!strings.Contains(errs, "snapstore diff bank --stats with the same --from and --to counts it added or dropped") || strings.Contains(errs, "stats_only") {
		t.Errorf("diff --table of a table dropped between the versions:\n%s", errs)
	}
}

// TestFileBase pins the names export gives a dataset's tables' files, as
// docs/reading.md and docs/cli.md give them: a table's name in the
// dataset (schema.table for PostgreSQL, database.table for MySQL, table
// for SQLite), dots kept, every other character but ASCII letters,
// digits, '-' and '_' made '_'.
func TestFileBase(t *testing.T) {
	for table, want := range map[string]string{
		"newuser8_shop.orders": "newuser8_shop.orders",
		"public.order_lines":   "public.order_lines",
		"orders":               "orders",
		"order lines":          "order_lines",
		"sales/2026":           "sales_2026",
		"Bestellungen-ä":       "Bestellungen-_",
		"..":                   "_..",
	} {
		if got := fileBase(table); got != want {
			t.Errorf("%q: %q, want %q", table, got, want)
		}
	}
}

// TestFileBasesClash: tables whose export files would share a name, as
// fileBase writes it or on a file system that ignores case, are refused
// before anything is written; distinct ones are not.
func TestFileBasesClash(t *testing.T) {
	if err := fileBasesClash([]string{"public.orders", "public.order_lines", "orders"}); err != nil {
		t.Errorf("distinct tables: %v", err)
	}
	for _, tables := range [][]string{{"order lines", "order_lines"}, {"Orders", "orders"}} {
		err := fileBasesClash(tables)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q and %q", tables[0], tables[1])) {
			t.Errorf("%q: %v", tables, err)
		}
	}
}
