package server

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet/file"
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
	tr, err := db.BeginTablesRun(ctx, snapshot.DatasetConfig{Name: "shopdb", Retention: snapshot.Retention{MinVersions: 10}, Guard: snapshot.Guard{MaxShrink: 1}},
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

// TestTables_Reads: a dataset of several tables, written by a run of named
// tables on Pebble, read over HTTP: its tables, each table's rows in
// every format, point reads and diffs; the dataset's own routes name the
// tables in a 409 table_required, and a dataset of one table reads as
// before.
func TestTables_Reads(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := writeTables(t, f.db, shopdbV1())
	v2 := writeTables(t, f.db, shopdbV2())

	var tl tablesOut
	r := f.must(200, "GET", "/v1/datasets/shopdb/tables", "")
	r.json(t, &tl)
	if tl.Version != v2 || len(tl.Tables) != 3 || tl.Tables[0].Name != "audit/log 100%" || tl.Tables[2].Name != "public.orders" {
		t.Fatalf("tables at the current version: %s", r.body)
	}
	if o, _ := (snapshot.VersionInfo{Tables: tl.Tables}).Table("public.orders"); o.Stats.Rows != 5 || len(o.Schema.Columns) != 2 {
		t.Errorf("public.orders at %d: %+v", v2, o)
	}
	if got := r.header.Get(versionHeader); got != fmt.Sprint(v2) {
		t.Errorf("Snapstore-Version %q, want %d", got, v2)
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/shopdb/tables?version=%d", v1), "").json(t, &tl)
	if tl.Version != v1 || len(tl.Tables) != 2 {
		t.Errorf("tables at %d: %+v", v1, tl)
	}
	f.run("products")
	f.must(200, "GET", "/v1/datasets/products/tables", "").json(t, &tl)
	if len(tl.Tables) != 0 {
		t.Errorf("a dataset of one table lists %+v", tl.Tables)
	}

	// JSON pages, NDJSON, CSV, Arrow and Parquet of one table.
	var page struct {
		Version int64            `json:"version"`
		Rows    []map[string]any `json:"rows"`
		Next    string           `json:"next_page_token"`
	}
	f.must(200, "GET", "/v1/datasets/shopdb/tables/public.orders/rows?limit=2", "").json(t, &page)
	if page.Version != v2 || len(page.Rows) != 2 || page.Next == "" || page.Rows[1]["customer"] != "c2-moved" {
		t.Fatalf("first page: %+v", page)
	}
	f.must(200, "GET", "/v1/datasets/shopdb/tables/public.orders/rows?page_token="+page.Next, "").json(t, &page)
	if len(page.Rows) != 3 || page.Rows[2]["id"] != float64(6) {
		t.Errorf("second page: %+v", page)
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/shopdb/tables/public.orders/rows?version=%d", v1), "").json(t, &page)
	if len(page.Rows) != 5 || page.Rows[1]["customer"] != "c2" {
		t.Errorf("orders at %d: %+v", v1, page)
	}
	r = f.must(200, "GET", "/v1/datasets/shopdb/tables/public.order_lines/rows?format=ndjson&prefix=3", "")
	if got := string(r.body); strings.Count(got, "\n") != 2 || !strings.Contains(got, `"sku":"sku3-2"`) {
		t.Errorf("NDJSON of lines of order 3: %s", got)
	}
	r = f.must(200, "GET", "/v1/datasets/shopdb/tables/public.orders/rows?format=csv", "")
	if got := string(r.body); !strings.HasPrefix(got, "id,customer\n1,c1\n") || strings.Count(got, "\n") != 6 {
		t.Errorf("CSV of orders: %q", got)
	}
	r = f.must(200, "GET", "/v1/datasets/shopdb/tables/public.order_lines/rows?format=arrow", "")
	rd, err := ipc.NewReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rd.Next() {
		n += int(rd.RecordBatch().NumRows())
	}
	if err := rd.Err(); err != nil || n != 10 || rd.Schema().NumFields() != 3 {
		t.Errorf("Arrow of lines: %d rows, %d fields, %v", n, rd.Schema().NumFields(), err)
	}
	if got, _ := rd.Schema().Metadata().GetValue(arrowMetaTable); got != "public.order_lines" {
		t.Errorf("Arrow of lines: schema metadata %s = %q", arrowMetaTable, got)
	}
	rd.Release()
	r = f.must(200, "GET", "/v1/datasets/shopdb/tables/audit%2Flog%20100%25/rows?format=parquet", "")
	pf, err := file.NewParquetReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRows() != 1 {
		t.Errorf("Parquet of the audit log: %d rows", pf.NumRows())
	}
	if got := pf.MetaData().KeyValueMetadata().FindValue(arrowMetaTable); got == nil || *got != "audit/log 100%" {
		t.Errorf("Parquet of the audit log: key-value metadata %s = %v", arrowMetaTable, got)
	}
	if cd := r.header.Get("Content-Disposition"); !strings.Contains(cd, `"shopdb-audit_log_100_-v2.parquet"`) {
		t.Errorf("Content-Disposition %q", cd)
	}

	// Point reads.
	var row struct {
		Version int64          `json:"version"`
		Row     map[string]any `json:"row"`
	}
	f.must(200, "GET", "/v1/datasets/shopdb/tables/public.order_lines/rows/4/2", "").json(t, &row)
	if row.Row["sku"] != "sku4-2" {
		t.Errorf("line (4, 2): %s", jsonOf(row))
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/shopdb/tables/public.orders/rows/5?version=%d", v1), "")
	if p := f.wantProblem(404, "row_not_found", "", "GET", "/v1/datasets/shopdb/tables/public.orders/rows/5", ""); !strings.Contains(p.Detail, "no key (id=5) in table public.orders of shopdb at version ") ||
		strings.Contains(p.Detail, "date or time") {
		t.Errorf("a missing row of a table: %q does not name the table, or speaks of a date or time key", p.Detail)
	}
	f.wantProblem(400, "bad_key", "key", "GET", "/v1/datasets/shopdb/tables/public.order_lines/rows/x/1", "")
	p := f.wantProblem(404, "table_not_found", "table", "GET", "/v1/datasets/shopdb/tables/orders/rows", "")
	if !strings.Contains(p.Detail, "public.orders") {
		t.Errorf("table_not_found does not name the tables: %s", p.Detail)
	}
	f.wantProblem(404, "table_not_found", "table", "GET", fmt.Sprintf("/v1/datasets/shopdb/tables/audit%%2Flog%%20100%%25/rows/1?version=%d", v1), "")
	f.wantProblem(404, "table_not_found", "table", "GET", "/v1/datasets/products/tables/products/rows", "")

	// The dataset's own routes: table_required naming the tables; a
	// dataset of one table as before; its version with the tables.
	for _, path := range []string{"/v1/datasets/shopdb/rows", "/v1/datasets/shopdb/rows/1", "/v1/datasets/shopdb/rows?format=parquet", "/v1/datasets/shopdb/diff", "/v1/datasets/shopdb/diff?format=arrow"} {
		p := f.wantProblem(409, "table_required", "table", "GET", path, "")
		if !strings.Contains(p.Detail, "public.order_lines, public.orders") {
			t.Errorf("%s: table_required does not name the tables: %s", path, p.Detail)
		}
		// A diff's detail says how to get every table's counts, and a
		// table's changes.
		diff := strings.Contains(path, "/diff")
		if hint := "GET /v1/datasets/shopdb/diff?stats_only=true"; strings.Contains(p.Detail, hint) != diff || strings.Contains(p.Detail, "/tables/{table}/diff") != diff {
			t.Errorf("%s: table_required: %s", path, p.Detail)
		}
	}
	f.must(200, "GET", "/v1/datasets/products/rows/1", "")
	var ds datasetOut
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/shopdb?version=%d", v1), "").json(t, &ds)
	if ds.VersionRead == nil || len(ds.VersionRead.Tables) != 2 {
		t.Errorf("version_read of shopdb: %+v", ds.VersionRead)
	}
	var vl versionsPage
	r = f.must(200, "GET", "/v1/datasets/shopdb/versions", "")
	r.json(t, &vl)
	if strings.Contains(string(r.body), `"order_id"`) {
		t.Errorf("the versions list holds the tables' schemas: %s", r.body)
	}
	if len(vl.Versions) != 2 || len(vl.Versions[0].Tables) != 3 || vl.Versions[0].Stats.Rows != 16 || vl.Versions[0].Tables[2].Stats.Rows != 5 {
		t.Errorf("versions of shopdb: %s", jsonOf(vl))
	}

	// Diffs: the dataset's counts per table, then a table's rows.
	f.must(200, "PUT", "/v1/datasets/shopdb/tags/first", fmt.Sprintf(`{"version":%d}`, v1))
	var td tablesDiffOut
	f.must(200, "GET", "/v1/datasets/shopdb/diff?from=first&stats_only=true", "").json(t, &td)
	if td.From != v1 || td.To != v2 || td.Inserted != 2 || td.Updated != 1 || td.Deleted != 1 || len(td.Tables) != 3 {
		t.Fatalf("dataset diff counts: %s", jsonOf(td))
	}
	if a := td.Tables[0]; a.Table != "audit/log 100%" || a.Change != snapshot.TableAdded || a.Inserted != 1 {
		t.Errorf("audit log: %+v", a)
	}
	if l := td.Tables[1]; l.Table != "public.order_lines" || l.Change != "" || l.Inserted+l.Updated+l.Deleted != 0 {
		t.Errorf("order lines: %+v", l)
	}
	var st snapshot.DiffStats
	f.must(200, "GET", "/v1/datasets/shopdb/tables/public.orders/diff?stats_only=true", "").json(t, &st)
	if st != (snapshot.DiffStats{From: v1, To: v2, Inserted: 1, Updated: 1, Deleted: 1}) {
		t.Errorf("orders diff counts: %+v", st)
	}
	r = f.must(200, "GET", "/v1/datasets/shopdb/tables/public.orders/diff?from=first", "")
	if got := string(r.body); strings.Count(got, "\n") != 3 || !strings.Contains(got, `"changed":["customer"]`) || r.header.Get("Snapstore-Diff-From") != fmt.Sprint(v1) {
		t.Errorf("orders diff: %s", got)
	}
	r = f.must(200, "GET", "/v1/datasets/shopdb/tables/public.orders/diff?format=arrow", "")
	rd, err = ipc.NewReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for rd.Next() {
		n += int(rd.RecordBatch().NumRows())
	}
	if n != 3 {
		t.Errorf("Arrow diff of orders: %d changes", n)
	}
	rd.Release()
	r = f.must(200, "GET", "/v1/datasets/shopdb/tables/public.orders/diff?format=parquet", "")
	if pf, err := file.NewParquetReader(bytes.NewReader(r.body)); err != nil || pf.NumRows() != 3 {
		t.Errorf("Parquet diff of orders: %v", err)
	} else if got := pf.MetaData().KeyValueMetadata().FindValue(arrowMetaTable); got == nil || *got != "public.orders" {
		t.Errorf("Parquet diff of orders: key-value metadata %s = %v", arrowMetaTable, got)
	}
	f.wantProblem(404, "table_not_found", "", "GET", "/v1/datasets/shopdb/tables/audit%2Flog%20100%25/diff", "")
	f.exec(`UPDATE products SET stock = 1 WHERE id = 1`)
	f.run("products")
	f.must(200, "GET", "/v1/datasets/products/diff?stats_only=true", "").json(t, &st)
	if st.Updated != 1 {
		t.Errorf("diff of a dataset of one table: %+v", st)
	}
}

// TestTables_DroppedAndReplaced: over HTTP, a version that dropped a
// table counts its rows as deleted (the version's stats, its
// dropped_tables, in the list and alone) as the diff of the two versions
// does; the table added again is a new table: the dataset's diff counts
// it replaced, and the table's own diff, in every form, is 409
// table_replaced naming it and the two versions.
func TestTables_DroppedAndReplaced(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := writeTables(t, f.db, shopdbV1())
	v2 := writeTables(t, f.db, map[string][][]snapshot.Value{"public.orders": shopdbV1()["public.orders"]})
	v3 := writeTables(t, f.db, shopdbV1())
	lines := snapshot.DroppedTable{Name: "public.order_lines", Rows: 10}

	var vs struct {
		Versions []snapshot.VersionInfo `json:"versions"`
	}
	f.must(200, "GET", "/v1/datasets/shopdb/versions", "").json(t, &vs)
	if len(vs.Versions) != 3 || vs.Versions[1].Version != v2 {
		t.Fatalf("versions: %s", jsonOf(vs))
	}
	for _, vi := range []snapshot.VersionInfo{vs.Versions[1], {}} {
		if vi.Version == 0 {
			f.must(200, "GET", fmt.Sprintf("/v1/datasets/shopdb/versions/%d", v2), "").json(t, &vi)
		}
		if vi.Stats.Deleted != lines.Rows || vi.Stats.Rows != 5 || len(vi.DroppedTables) != 1 || vi.DroppedTables[0] != lines {
			t.Errorf("version %d, which dropped the lines: stats %+v, dropped_tables %+v", vi.Version, vi.Stats, vi.DroppedTables)
		}
	}
	if vi := vs.Versions[0]; vi.Stats.Inserted != lines.Rows || vi.Stats.Deleted != 0 || vi.DroppedTables != nil {
		t.Errorf("version %d, which added them again: stats %+v, dropped_tables %+v", vi.Version, vi.Stats, vi.DroppedTables)
	}
	var td tablesDiffOut
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/shopdb/diff?from=%d&to=%d&stats_only=true", v1, v2), "").json(t, &td)
	if td.Deleted != lines.Rows || len(td.Tables) != 2 || td.Tables[0].Change != snapshot.TableDropped || td.Tables[0].Deleted != lines.Rows {
		t.Errorf("dataset diff counts across the drop: %s", jsonOf(td))
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/shopdb/diff?from=%d&to=%d&stats_only=true", v1, v3), "").json(t, &td)
	if td.Deleted != lines.Rows || td.Inserted != lines.Rows || len(td.Tables) != 2 || td.Tables[0].Change != snapshot.TableReplaced {
		t.Errorf("dataset diff counts across the drop and the add: %s", jsonOf(td))
	}
	for _, q := range []string{"", "&stats_only=true", "&format=arrow", "&format=parquet"} {
		for _, c := range [][2]int64{{v1, v3}, {v3, v1}} {
			path := fmt.Sprintf("/v1/datasets/shopdb/tables/public.order_lines/diff?from=%d&to=%d%s", c[0], c[1], q)
			p := f.wantProblem(409, "table_replaced", "table", "GET", path, "")
			if want := fmt.Sprintf(`"public.order_lines": version %d of shopdb holds a table of that name (10 rows keyed by order_id, line), version %d another one`, c[0], c[1]); !strings.Contains(p.Detail, want) {
				t.Errorf("%s: detail %q, want it to hold %q", path, p.Detail, want)
			}
		}
	}
}

// TestTables_Grants: a token limited to other datasets reaches no table
// of shopdb, and its answers are those of a dataset that does not exist.
func TestTables_Grants(t *testing.T) {
	tokens := []Token{{Name: "limited", Token: "limited-token-0123456789", Role: RoleReader, Datasets: []string{"products"}}}
	f := newFixture(t, fixtureOpts{tokens: tokens})
	writeTables(t, f.db, shopdbV1())
	writeTables(t, f.db, shopdbV2())
	f.token = "limited-token-0123456789"
	for _, path := range []string{"/tables", "/tables/public.orders/rows", "/tables/public.orders/rows/1", "/tables/public.orders/diff"} {
		got := f.wantProblem(404, "dataset_not_found", "", "GET", "/v1/datasets/shopdb"+path, "")
		want := f.wantProblem(404, "dataset_not_found", "", "GET", "/v1/datasets/nothing"+path, "")
		if strings.ReplaceAll(want.Detail, "nothing", "shopdb") != got.Detail {
			t.Errorf("%s outside the grant: %q; a dataset that does not exist: %q", path, got.Detail, want.Detail)
		}
	}
}

// TestTables_TimeKeyNotFound: a key column of a date or time is matched by
// its text as the rows show it (docs/api.md, Keys), so a row asked for by
// another spelling of its instant (2022-05-25T00:07:54Z of a PostgreSQL
// timestamptz the rows show as 2022-05-25 00:07:54+00, the key of a table
// partitioned by time) is not found: the answer says how such a key is
// matched, naming the column.
func TestTables_TimeKeyNotFound(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	payments := snapshot.Schema{
		Columns: []snapshot.Column{{Name: "paid_at", Kind: snapshot.KindDateTime, SourceType: "timestamp with time zone"}, {Name: "id", Kind: snapshot.KindInt}},
		Key:     []string{"paid_at", "id"},
	}
	tr, err := f.db.BeginTablesRun(ctx, snapshot.DatasetConfig{Name: "pay"}, snapshot.TablesRunOptions{Tables: []snapshot.TableSpec{{Name: "public.payment", Schema: payments}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Table("public.payment").Put(ctx, []snapshot.Value{text(snapshot.KindDateTime, "2022-05-25 00:07:54+00"), tInt(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	f.must(200, "GET", "/v1/datasets/pay/tables/public.payment/rows/2022-05-25%2000:07:54%2B00/2", "")
	p := f.wantProblem(404, "row_not_found", "", "GET", "/v1/datasets/pay/tables/public.payment/rows/2022-05-25T00:07:54Z/2", "")
	if !strings.Contains(p.Detail, "no key (paid_at=") || !strings.Contains(p.Detail, "a date or time key column (paid_at) is matched by its text as the rows show it, not by the instant") {
		t.Errorf("a row asked for by another spelling of its time key: %q", p.Detail)
	}
}
