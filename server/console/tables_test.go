package console

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// tablesOrders and tablesLines are the schemas of the dataset of several
// tables the tests write (writeTables).
var (
	tablesOrders = snapshot.Schema{
		Columns: []snapshot.Column{{Name: "id", Kind: snapshot.KindInt}, {Name: "customer", Kind: snapshot.KindString, Nullable: true}},
		Key:     []string{"id"},
	}
	tablesLines = snapshot.Schema{
		Columns: []snapshot.Column{{Name: "order_id", Kind: snapshot.KindInt}, {Name: "line", Kind: snapshot.KindInt}, {Name: "sku", Kind: snapshot.KindString}},
		Key:     []string{"order_id", "line"},
	}
)

func tInt(i int64) snapshot.Value { return snapshot.Value{Kind: snapshot.KindInt, Int: i} }
func tStr(s string) snapshot.Value {
	return snapshot.Value{Kind: snapshot.KindString, Bytes: []byte(s)}
}

// writeTables commits one version of the dataset "shopdb" of named tables
// through snapshot.BeginTablesRun, each table's rows by name, and returns
// the version.
func writeTables(t *testing.T, db *snapshot.DB, tables map[string][][]snapshot.Value) int64 {
	t.Helper()
	ctx := context.Background()
	schemas := map[string]snapshot.Schema{"public.orders": tablesOrders, "public.order_lines": tablesLines, "audit/log 100%": tablesOrders}
	var specs []snapshot.TableSpec
	for name := range tables {
		specs = append(specs, snapshot.TableSpec{Name: name, Schema: schemas[name]})
	}
	tr, err := db.BeginTablesRun(ctx, snapshot.DatasetConfig{Name: "shopdb", Retention: snapshot.Retention{MinVersions: 10}},
		snapshot.TablesRunOptions{Tables: specs, DropMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, rows := range tables {
		w := tr.Table(name)
		for _, row := range rows {
			if err := w.Put(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
	}
	vi, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return vi.Version
}

// shopdbV1 and shopdbV2 are two versions of shopdb: orders 2 changes, 5
// goes, 6 comes; the lines stay; the table "audit/log 100%" comes.
func shopdbV1() map[string][][]snapshot.Value {
	var orders, lines [][]snapshot.Value
	for i := int64(1); i <= 5; i++ {
		orders = append(orders, []snapshot.Value{tInt(i), tStr(fmt.Sprintf("c%d", i))})
		for l := int64(1); l <= 2; l++ {
			lines = append(lines, []snapshot.Value{tInt(i), tInt(l), tStr(fmt.Sprintf("sku%d-%d", i, l))})
		}
	}
	return map[string][][]snapshot.Value{"public.orders": orders, "public.order_lines": lines}
}

func shopdbV2() map[string][][]snapshot.Value {
	tables := shopdbV1()
	orders := tables["public.orders"][:4]
	orders[1] = []snapshot.Value{tInt(2), tStr("c2-moved")}
	tables["public.orders"] = append(orders, []snapshot.Value{tInt(6), tStr("c6")})
	tables["audit/log 100%"] = [][]snapshot.Value{{tInt(1), tStr("x")}}
	return tables
}

// TestTables_Console: the page of a dataset of several tables lists them,
// each with its rows and links to its rows and diff; the rows browser,
// the diff page and the downloads read one table; the dataset's diff
// page counts each table.
func TestTables_Console(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := writeTables(t, f.db, shopdbV1())
	v2 := writeTables(t, f.db, shopdbV2())
	b := newBrowser(t, f)
	// Each table's changes are those the current version committed (a
	// run's, or a rollback's), not the last run's, which may have
	// verified the version and changed nothing.
	b.page("/ui/datasets/shopdb", "<dt>Tables</dt><dd>3</dd>", `id="tables"`, `data-table="public.orders"`, `data-table="audit/log 100%"`,
		fmt.Sprintf("<th>changes in version %d</th>", v2),
		`href="/ui/datasets/shopdb/rows?table=public.order_lines"`, `href="/ui/datasets/shopdb/diff?table=audit%2flog%20100%25"`)
	b.page("/ui/datasets/shopdb/rows?table=public.orders", "table public.orders", "c2-moved", `name="table" value="public.orders"`,
		fmt.Sprintf(`href="/ui/datasets/shopdb/rows/download?version=%d&amp;table=public.orders&amp;format=parquet"`, v2))
	b.page("/ui/datasets/shopdb/diff", `id="diff-tables"`, `data-table="audit/log 100%" data-change="added"`, "2 inserted",
		fmt.Sprintf(`href="/ui/datasets/shopdb/diff?table=public.orders&amp;from=%d&amp;to=%d"`, v1, v2),
		// A table one version holds has no diff of its rows: its rows at
		// that version are its changes, either way.
		fmt.Sprintf(`href="/ui/datasets/shopdb/rows?table=audit%%2flog%%20100%%25&amp;version=%d"`, v2))
	b.page(fmt.Sprintf("/ui/datasets/shopdb/diff?from=%d&to=%d", v2, v1), `data-table="audit/log 100%" data-change="dropped"`,
		fmt.Sprintf(`href="/ui/datasets/shopdb/rows?table=audit%%2flog%%20100%%25&amp;version=%d"`, v2))
	b.page("/ui/datasets/shopdb/diff?table=public.orders", `data-op="update"`, `data-op="delete"`, "1 inserted")
	for _, path := range []string{
		fmt.Sprintf("/ui/datasets/shopdb/rows/download?version=%d&table=public.order_lines&format=parquet", v1),
		"/ui/datasets/shopdb/diff/download?table=public.orders&format=parquet",
		"/ui/datasets/shopdb/rows/download?table=audit%2Flog+100%25&format=parquet",
	} {
		r := b.get(path)
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		if _, err := file.NewParquetReader(bytes.NewReader(r.body)); err != nil {
			t.Errorf("GET %s: %v", path, err)
		}
	}
	// The rows browser of a dataset of several tables without one sends
	// to the dataset's page, which lists them.
	if r := b.get("/ui/datasets/shopdb/rows"); r.status != 303 || r.header.Get("Location") != "/ui/datasets/shopdb#tables" {
		t.Errorf("the rows browser of a dataset of several tables without one: %d %s %s", r.status, r.header.Get("Location"), r.body)
	}
}

// TestTables_ConsoleVerifiedRun: the page of a run of several tables
// that changed none (mode verify) does not say it read no rows: each of
// its tables was read, as the tables' lines say.
func TestTables_ConsoleVerifiedRun(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.must(201, "POST", "/v1/adapters", `{"name":"all","connection":"shop","include":["*"]}`)
	f.run("all")
	r := f.must(200, "POST", "/v1/adapters/all/runs?wait=true", "")
	var rec adapters.RunRecord
	r.json(t, &rec)
	if rec.Mode != adapters.ModeVerify || len(rec.Tables) != 3 || rec.RowsRead == 0 {
		t.Fatalf("a second run of nothing changed: mode %s, %d tables, %d rows read", rec.Mode, len(rec.Tables), rec.RowsRead)
	}
	b := newBrowser(t, f)
	page := b.page("/ui/runs/"+rec.ID, "read as each table below says; no table changed")
	if strings.Contains(page, "read no rows") {
		t.Errorf("the run page of a verified run of several tables says it read no rows")
	}
}

// TestTables_ConsoleRunWarnings: the page of a run whose include has a
// pattern of no table beside one that selects tables shows the run's
// warning naming the pattern.
func TestTables_ConsoleRunWarnings(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.must(201, "POST", "/v1/adapters", `{"name":"typo","connection":"shop","include":["prod*","ordrs"]}`)
	r := f.must(200, "POST", "/v1/adapters/typo/runs?wait=true", "")
	var rec adapters.RunRecord
	r.json(t, &rec)
	if rec.Status != adapters.RunSucceeded || len(rec.Warnings) != 1 {
		t.Fatalf("a run with a pattern of no table: %s, warnings %q", rec.Status, rec.Warnings)
	}
	b := newBrowser(t, f)
	b.page("/ui/runs/"+rec.ID, `id="run-warnings"`, `include[1] &#34;ordrs&#34; matches no table of data connection &#34;shop&#34;`)
}

// TestConsole_RunPageReadModes: the run page says how each run read its
// source: in full for a first copy from another snapstore, and its
// changes since the version copied for the next (mode diff), not "in
// full".
func TestConsole_RunPageReadModes(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	if _, err := f.svc.CreateConnection(t.Context(), api.Connection{Name: "self", Type: "snapstore", Options: map[string]any{"url": f.ts.URL}}); err != nil {
		t.Fatal(err)
	}
	f.must(201, "POST", "/v1/adapters", `{"name":"copy","connection":"self","resource":"products"}`)
	b := newBrowser(t, f)
	for i, want := range []struct{ mode, text string }{
		{adapters.ModeFull, "read in full"},
		{adapters.ModeDiff, "read the source&#39;s changes since the version the current one copied (diff)"},
	} {
		if i > 0 {
			f.exec(`UPDATE products SET stock = 1 WHERE id = 1`)
			f.run("products")
		}
		var rec adapters.RunRecord
		f.must(200, "POST", "/v1/adapters/copy/runs?wait=true", "").json(t, &rec)
		if rec.Status != adapters.RunSucceeded || rec.Mode != want.mode {
			t.Fatalf("copy run %d: %s, mode %q, want %q: %s", i, rec.Status, rec.Mode, want.mode, rec.Error)
		}
		page := b.page("/ui/runs/"+rec.ID, want.text)
		if want.mode != adapters.ModeFull && strings.Contains(page, "read in full") {
			t.Errorf("the page of a run of mode %s says it read in full", want.mode)
		}
	}
}
