package snapstore_test

import (
	"database/sql"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

const shopSQL = `
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total DECIMAL(10,2));
CREATE TABLE "order lines" (order_id INTEGER NOT NULL, line INTEGER NOT NULL, item TEXT, qty INTEGER, PRIMARY KEY (order_id, line));
INSERT INTO orders VALUES (1, 'ada', 12.50), (2, 'bob', 3.00), (3, 'cy', NULL);
INSERT INTO "order lines" VALUES (1, 1, 'pen', 2), (1, 2, 'ink', 1), (2, 1, 'pad', 3), (3, 1, 'é "q"', NULL);
`

// tableRows is the NDJSON scan of a table of a dataset of several tables
// at a version.
func (s *stack) tableRows(dataset, table string, v int64) string {
	s.t.Helper()
	code, b := s.call("GET", "/v1/datasets/"+dataset+"/tables/"+url.PathEscape(table)+"/rows?version="+itoa(v), nil)
	if code != http.StatusOK {
		s.t.Fatalf("scan %s/%s@%d: %d %s", dataset, table, v, code, b)
	}
	return string(b)
}

// tableOf returns the table named name of version vi.
func tableOf(t *testing.T, vi snapshot.VersionInfo, name string) snapshot.TableInfo {
	t.Helper()
	for _, ti := range vi.Tables {
		if ti.Name == name {
			return ti
		}
	}
	t.Fatalf("version %d of %s has no table %q: %v", vi.Version, vi.Dataset, name, vi.TableNames())
	return snapshot.TableInfo{}
}

// TestCopyOfTables copies the tables of an edge dataset of several tables
// into a central server through the snapstore connection, a real server
// on each side: one table into a dataset of one table, in full and then
// by the table's diff, and every table into a dataset of several tables,
// all read at one version of the edge's dataset even when the edge
// commits another between two tables. Each copied table must equal the
// edge's table at the version copied, rows, stats and checksum.
func TestCopyOfTables(t *testing.T) {
	srcPath := filepath.Join(t.TempDir(), "shop.db")
	src, err := sql.Open("sqlite", srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Exec(shopSQL); err != nil {
		t.Fatal(err)
	}
	edge := newStack(t)
	// A proxy in front of the edge calls between once, before the first
	// page of a table's scan it forwards.
	var between atomic.Pointer[func()]
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/tables/") && (strings.HasSuffix(r.URL.Path, "/rows") || strings.HasSuffix(r.URL.Path, "/diff")) {
			if f := between.Swap(nil); f != nil {
				(*f)()
			}
		}
		edge.handler.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	central := newStack(t)
	edge.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "plant", "type": "sqlite", "options": map[string]any{"path": srcPath}}, nil)
	edge.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "shop", "connection": "plant", "include": []string{"*"},
		"retention": map[string]any{"min_versions": 20}}, nil)
	edge.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "solo", "connection": "plant", "resource": "orders"}, nil)
	for _, a := range []string{"shop", "solo"} {
		if r := edge.run(a); r.Status != "succeeded" {
			t.Fatalf("edge run of %s: %+v", a, r)
		}
	}
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "edge", "type": "snapstore",
		"options": map[string]any{"url": proxy.URL, "chunk_rows": 2}}, nil)

	// resources: each dataset, and each table of a dataset of several
	// tables with the dataset as its schema.
	var res struct {
		Resources []struct {
			Schema        string   `json:"schema"`
			Name          string   `json:"name"`
			Type          string   `json:"type"`
			EstimatedRows *int64   `json:"estimated_rows"`
			Key           []string `json:"key"`
		} `json:"resources"`
	}
	central.must(http.StatusOK, "GET", "/v1/connections/edge/resources", nil, &res)
	var listed []string
	for _, r := range res.Resources {
		rows := int64(-1)
		if r.EstimatedRows != nil {
			rows = *r.EstimatedRows
		}
		listed = append(listed, r.Type+" "+r.Schema+"|"+r.Name+" "+itoa(rows)+" ("+strings.Join(r.Key, ",")+")")
	}
	if got, want := strings.Join(listed, "; "), "dataset |shop 7 (); table shop|order lines 4 (order_id,line); table shop|orders 3 (id); dataset |solo 3 (id)"; got != want {
		t.Errorf("resources:\n%s\nwant\n%s", got, want)
	}

	// checkTable wants the table ct of central dataset ds at version cv
	// ("" for a dataset of one table) equal to the edge's table et at
	// version ev.
	checkTable := func(step, ds string, cv snapshot.VersionInfo, ct, et string, ev int64) {
		t.Helper()
		eti := tableOf(t, edge.version("shop", ev), et)
		stats, schema := cv.Stats, cv.Schema
		var rows string
		if ct == "" {
			rows = central.rows(ds, cv.Version)
		} else {
			cti := tableOf(t, cv, ct)
			stats, schema, rows = cti.Stats, cti.Schema, central.tableRows(ds, ct, cv.Version)
		}
		if stats.Checksum != eti.Stats.Checksum || stats.Rows != eti.Stats.Rows {
			t.Errorf("%s: %s version %d table %q: rows %d checksum %s, edge version %d rows %d checksum %s",
				step, ds, cv.Version, ct, stats.Rows, stats.Checksum, ev, eti.Stats.Rows, eti.Stats.Checksum)
		}
		if !equalSchemas(schema, eti.Schema) {
			t.Errorf("%s: schema %+v, want %+v", step, schema, eti.Schema)
		}
		if want := edge.tableRows("shop", et, ev); rows != want {
			t.Errorf("%s: rows of %s version %d table %q differ from the edge's %s at version %d:\n%s\nwant\n%s", step, ds, cv.Version, ct, et, ev, rows, want)
		}
	}

	// One table of the dataset, into a dataset of one table: in full,
	// then by the table's diff.
	central.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "lines", "connection": "edge", "resource": "shop.order lines",
		"retention": map[string]any{"min_versions": 20}}, nil)
	copyLines := func(step, wantMode string) {
		t.Helper()
		c := central.run("lines")
		if c.Status != "succeeded" || c.Mode != wantMode {
			t.Fatalf("%s: copy run %+v, want succeeded in mode %s", step, c, wantMode)
		}
		cv := central.version("lines", central.current("lines"))
		ev := edge.current("shop")
		if want := "shop.order lines@" + itoa(ev); cv.Source.Resource != want {
			t.Errorf("%s: the copy records %q, want %q", step, cv.Source.Resource, want)
		}
		checkTable(step, "lines", cv, "", "order lines", ev)
	}
	copyLines("the first copy of a table", "full")
	for i, stmts := range []string{
		`INSERT INTO "order lines" VALUES (2, 2, 'cap', 1); UPDATE "order lines" SET qty = 9 WHERE order_id = 1 AND line = 1; UPDATE orders SET total = 4 WHERE id = 2`,
		`DELETE FROM "order lines" WHERE order_id = 3; INSERT INTO orders VALUES (4, 'di', 1.25)`,
	} {
		if _, err := src.Exec(stmts); err != nil {
			t.Fatal(err)
		}
		if r := edge.run("shop"); r.Status != "succeeded" {
			t.Fatalf("edge run: %+v", r)
		}
		copyLines("a copy after change "+itoa(int64(i)), "diff")
	}
	// A change of another table only: the copy's table is unchanged,
	// the run verifies it.
	if _, err := src.Exec(`UPDATE orders SET customer = 'ann' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if r := edge.run("shop"); r.Status != "succeeded" {
		t.Fatalf("edge run: %+v", r)
	}
	before := central.current("lines")
	if c := central.run("lines"); c.Status != "succeeded" || c.Mode != "diff" || central.current("lines") != before {
		t.Errorf("copy of an unchanged table: %+v, current %d, want %d", c, central.current("lines"), before)
	}
	// The table of a tag's version, quoted as resources list it.
	edge.must(http.StatusOK, "PUT", "/v1/datasets/shop/tags/first", nil, nil)
	central.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "orders-tagged", "connection": "edge", "resource": `"shop"."orders"@first`}, nil)
	if c := central.run("orders-tagged"); c.Status != "succeeded" {
		t.Fatalf("copy of a tagged table: %+v", c)
	}
	checkTable("a tagged table", "orders-tagged", central.version("orders-tagged", central.current("orders-tagged")), "", "orders", edge.current("shop"))

	// Resources that name no table are refused when saved, naming it.
	for _, c := range []struct {
		resource string
		code     int
		want     string
	}{
		{"shop.nope", http.StatusNotFound, `has no table \"nope\"`},
		{"solo.orders", http.StatusNotFound, `has no table \"orders\"`},
		{"shop", http.StatusBadRequest, `holds several tables (order lines, orders)`},
	} {
		code, body := central.call("POST", "/v1/adapters", map[string]any{"name": "bad", "connection": "edge", "resource": c.resource})
		if code != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("adapter of %q: %d %s, want %d saying %s", c.resource, code, body, c.code, c.want)
		}
	}

	// Every table, into a dataset of several tables, at one version.
	central.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "shopcopy", "connection": "edge", "include": []string{"shop.*"},
		"parallelism": 1, "retention": map[string]any{"min_versions": 20}}, nil)
	// copyShop runs the copy and wants it to hold both tables of edge
	// version ev, read in mode (and each table in the mode modes gives),
	// and the version and the run record to name the edge version.
	copyShop := func(step string, ev int64, mode, modes string) runRec {
		t.Helper()
		c := central.run("shopcopy")
		if c.Status != "succeeded" || c.Mode != mode {
			t.Fatalf("%s: copy run %+v, want succeeded in mode %s", step, c, mode)
		}
		var got []string
		for _, tb := range c.Tables {
			got = append(got, tb.Name+" "+tb.Mode)
		}
		if strings.Join(got, ", ") != modes {
			t.Errorf("%s: the run's tables %q, want %q", step, got, modes)
		}
		want := "shop@" + itoa(ev)
		if c.Point == nil || c.Point.Position != want {
			t.Errorf("%s: the run's point %+v, want position %s", step, c.Point, want)
		}
		cv := central.version("shopcopy", central.current("shopcopy"))
		if cv.Source.Resource != want {
			t.Errorf("%s: the copy records %q, want %q", step, cv.Source.Resource, want)
		}
		if got := strings.Join(cv.TableNames(), ","); got != "shop.order lines,shop.orders" {
			t.Fatalf("%s: the copy's tables %s", step, got)
		}
		for _, tb := range []string{"order lines", "orders"} {
			checkTable(step, "shopcopy", cv, "shop."+tb, tb, ev)
		}
		return c
	}
	edgeRun := func(stmts string) {
		t.Helper()
		if _, err := src.Exec(stmts); err != nil {
			t.Fatal(err)
		}
		if r := edge.run("shop"); r.Status != "succeeded" {
			t.Fatalf("edge run: %+v", r)
		}
	}
	copyShop("the first copy of every table", edge.current("shop"), "full", "shop.order lines full, shop.orders full")
	// Later copies read each table's diff since the version copied
	// last; a table the edge did not change has an empty one.
	edgeRun(`INSERT INTO "order lines" VALUES (3, 2, 'cup', 2); DELETE FROM "order lines" WHERE order_id = 2; UPDATE orders SET customer = 'bo' WHERE id = 2`)
	copyShop("a copy by diff", edge.current("shop"), "diff", "shop.order lines diff, shop.orders diff")
	edgeRun(`UPDATE orders SET total = 7 WHERE id = 4; INSERT INTO orders VALUES (5, 'ed', 0.5)`)
	c := copyShop("a copy of one changed table by diff", edge.current("shop"), "diff", "shop.order lines diff, shop.orders diff")
	// Only the changes are read: two rows of one table, none of the other.
	if len(c.Tables) != 2 || c.Tables[0].RowsRead != 0 || c.Tables[1].RowsRead != 2 {
		t.Errorf("the rows read of a copy of two changed rows: %+v", c.Tables)
	}
	// A table whose schema changed is read in full, the other by diff.
	edgeRun(`ALTER TABLE orders ADD COLUMN note TEXT; UPDATE orders SET note = 'x' WHERE id = 1; UPDATE "order lines" SET qty = 5 WHERE order_id = 1 AND line = 2`)
	copyShop("a copy after a schema change", edge.current("shop"), "full", "shop.order lines diff, shop.orders full")

	// The edge commits a new version of both tables between the copy's
	// reads of the first and the second: the copy holds the version its
	// first table read, both tables of it.
	edgeRun(`UPDATE "order lines" SET item = 'ink2' WHERE order_id = 1 AND line = 2`)
	pinned := edge.current("shop")
	commit := func() {
		if _, err := src.Exec(`UPDATE orders SET total = total + 1; INSERT INTO "order lines" VALUES (4, 1, 'new', 1)`); err != nil {
			t.Error(err)
		}
		if r := edge.run("shop"); r.Status != "succeeded" {
			t.Errorf("edge run between two tables: %+v", r)
		}
	}
	between.Store(&commit)
	copyShop("a copy while the edge commits", pinned, "diff", "shop.order lines diff, shop.orders diff")
	if edge.current("shop") == pinned {
		t.Fatal("the edge committed nothing between the tables")
	}
	copyShop("the next copy", edge.current("shop"), "diff", "shop.order lines diff, shop.orders diff")
	// Nothing changed on the edge: the run verifies, no new version.
	before = central.current("shopcopy")
	if c := central.run("shopcopy"); c.Status != "succeeded" || c.Mode != "verify" || central.current("shopcopy") != before {
		t.Errorf("copy of unchanged tables: %+v, current %d, want %d", c, central.current("shopcopy"), before)
	}

	// The version the copy names collected on the edge: every table is
	// read in full.
	edge.must(http.StatusOK, "PUT", "/v1/adapters/shop", map[string]any{"name": "shop", "connection": "plant", "include": []string{"*"},
		"retention": map[string]any{"ttl": "1ms", "min_versions": 1}}, nil)
	edgeRun(`UPDATE orders SET total = 8 WHERE id = 5`)
	edge.must(http.StatusOK, "POST", "/v1/datasets/shop/gc", nil, nil)
	if code, _ := edge.call("GET", "/v1/datasets/shop/versions/"+itoa(pinned), nil); code == http.StatusOK {
		t.Fatalf("the edge still keeps version %d after its GC", pinned)
	}
	copyShop("a copy after the edge collected the version copied", edge.current("shop"), "full", "shop.order lines full, shop.orders full")
	copyShop("the next copy after it", edge.current("shop"), "verify", "shop.order lines diff, shop.orders diff")

	// Tables of two datasets in one adapter: refused when saved, naming
	// the datasets.
	code, body := central.call("POST", "/v1/adapters", map[string]any{"name": "mixed", "connection": "edge", "resources": []string{"shop.orders", "solo"}})
	if code != http.StatusBadRequest || !strings.Contains(string(body), `the datasets \"shop\", \"solo\": the tables of one run come from one version of one source dataset`) {
		t.Errorf("an adapter of tables of two datasets: %d %s", code, body)
	}
	// A dataset of several tables cannot be its own source: the copy
	// made from the edge, pointed at itself through this server's API.
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "self", "type": "snapstore", "options": map[string]any{"url": central.url}}, nil)
	code, body = central.call("PUT", "/v1/adapters/shopcopy", map[string]any{"name": "shopcopy", "connection": "self", "include": []string{"shopcopy.*"}})
	if code != http.StatusBadRequest || !strings.Contains(string(body), `dataset \"shopcopy\" through data connection \"self\" is the adapter's own dataset`) {
		t.Errorf("an adapter of tables of its own dataset: %d %s", code, body)
	}
	// Another dataset of this server is a source as any other.
	central.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "again", "connection": "self", "include": []string{"shopcopy.*"}}, nil)
	if c := central.run("again"); c.Status != "succeeded" || c.Mode != "full" {
		t.Errorf("a copy of a copy: %+v", c)
	}
	// A table dropped from the edge's dataset fails the copy's run,
	// naming it.
	central.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "named", "connection": "edge", "resources": []string{"shop.orders", "shop.order lines"}}, nil)
	if c := central.run("named"); c.Status != "succeeded" {
		t.Fatalf("copy of named tables: %+v", c)
	}
	edge.must(http.StatusOK, "PUT", "/v1/adapters/shop", map[string]any{"name": "shop", "connection": "plant", "resources": []string{"orders"},
		"allow_dropped_tables": true, "retention": map[string]any{"min_versions": 20}}, nil)
	if r := edge.run("shop"); r.Status != "succeeded" {
		t.Fatalf("edge run without a table: %+v", r)
	}
	before = central.current("named")
	if c := central.run("named"); c.Status != "failed" || c.Code != "resource_not_found" || !strings.Contains(c.Error, "order lines") {
		t.Errorf("a copy of a table the edge dropped: %+v, want resource_not_found naming it", c)
	}
	if central.current("named") != before {
		t.Errorf("a failed copy changed the current version")
	}
}

// TestCopyOfTableReplaced: a table the edge dropped and added again
// between two copies, with the same schema and rows (so the same
// checksum), has no diff across the two (the edge answers 400): the copy
// reads it in full, and the copies of one table and of several tables
// both succeed, their table equal to the edge's.
func TestCopyOfTableReplaced(t *testing.T) {
	srcPath := filepath.Join(t.TempDir(), "shop.db")
	src, err := sql.Open("sqlite", srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Exec(shopSQL); err != nil {
		t.Fatal(err)
	}
	edge := newStack(t)
	central := newStack(t)
	edge.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "plant", "type": "sqlite", "options": map[string]any{"path": srcPath}}, nil)
	shop := map[string]any{"name": "shop", "connection": "plant", "resources": []string{"orders", "order lines"},
		"allow_dropped_tables": true, "retention": map[string]any{"min_versions": 20}}
	edge.must(http.StatusCreated, "POST", "/v1/adapters", shop, nil)
	if r := edge.run("shop"); r.Status != "succeeded" {
		t.Fatalf("edge run: %+v", r)
	}
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "edge", "type": "snapstore", "options": map[string]any{"url": edge.url}}, nil)
	central.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "all", "connection": "edge", "include": []string{"shop.*"}}, nil)
	central.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "one", "connection": "edge", "resource": "shop.orders"}, nil)
	for _, a := range []string{"all", "one"} {
		if c := central.run(a); c.Status != "succeeded" {
			t.Fatalf("first copy %s: %+v", a, c)
		}
	}
	// orders dropped, then added again with the same rows.
	edge.must(http.StatusOK, "PUT", "/v1/adapters/shop", map[string]any{"name": "shop", "connection": "plant", "resources": []string{"order lines"},
		"allow_dropped_tables": true, "retention": map[string]any{"min_versions": 20}}, nil)
	if r := edge.run("shop"); r.Status != "succeeded" {
		t.Fatalf("edge run without orders: %+v", r)
	}
	edge.must(http.StatusOK, "PUT", "/v1/adapters/shop", shop, nil)
	if r := edge.run("shop"); r.Status != "succeeded" {
		t.Fatalf("edge run with orders again: %+v", r)
	}
	ev := edge.current("shop")
	c := central.run("all")
	if c.Status != "succeeded" {
		t.Fatalf("copy of several tables after orders was replaced: %+v", c)
	}
	for _, tb := range c.Tables {
		if tb.Name == "shop.orders" && tb.Mode != "full" {
			t.Errorf("the replaced table was copied in mode %s, want full", tb.Mode)
		}
	}
	if got, want := central.tableRows("all", "shop.orders", central.current("all")), edge.tableRows("shop", "orders", ev); got != want {
		t.Errorf("copied orders:\n%s\nwant\n%s", got, want)
	}
	if c := central.run("one"); c.Status != "succeeded" || c.Mode != "full" {
		t.Errorf("copy of the replaced table: %+v, want succeeded in mode full", c)
	}
}

// TestCopyOfTableAtMissing: a table named with a tag or version the
// source dataset does not have is refused naming the tag or the version,
// not as a table "orders@first" the current version lacks.
func TestCopyOfTableAtMissing(t *testing.T) {
	srcPath := filepath.Join(t.TempDir(), "shop.db")
	src, err := sql.Open("sqlite", srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Exec(shopSQL); err != nil {
		t.Fatal(err)
	}
	edge := newStack(t)
	central := newStack(t)
	edge.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "plant", "type": "sqlite", "options": map[string]any{"path": srcPath}}, nil)
	edge.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "shop", "connection": "plant", "include": []string{"*"}}, nil)
	if r := edge.run("shop"); r.Status != "succeeded" {
		t.Fatalf("edge run: %+v", r)
	}
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "edge", "type": "snapstore", "options": map[string]any{"url": edge.url}}, nil)
	for _, c := range []struct {
		resource, want string
	}{
		{"shop.orders@first", "tag_not_found"},
		{"shop.orders@99999", "version_not_kept"},
		{"shop.nope@first", "tag_not_found"},
		{"shop.nope", `has no table \"nope\"`},
	} {
		code, body := central.call("POST", "/v1/adapters", map[string]any{"name": "bad", "connection": "edge", "resource": c.resource})
		if code != http.StatusNotFound || !strings.Contains(string(body), c.want) {
			t.Errorf("resource %s: %d %s, want 404 with %s", c.resource, code, body, c.want)
		}
	}
}

// statusRecorder keeps the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// TestCopyOfTableAsksNoDatasetOutsideGrant copies a table of a dataset of
// several tables ("shop.orders", which may also name a dataset of that
// name) with a token limited to the dataset "shop": neither saving the
// adapter nor its runs may ask the edge for a dataset outside the grant,
// which the edge answers 404 and records in its audit trail as a refused
// request (a probe for names). A table the dataset lacks is still named
// in the error.
func TestCopyOfTableAsksNoDatasetOutsideGrant(t *testing.T) {
	srcPath := filepath.Join(t.TempDir(), "shop.db")
	src, err := sql.Open("sqlite", srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Exec(shopSQL); err != nil {
		t.Fatal(err)
	}
	edge := newStack(t, server.Token{Name: "admin", Token: "edge-admin-token", Role: server.RoleAdmin},
		server.Token{Name: "shop-reader", Token: "edge-shop-reader-token", Role: server.RoleReader, Datasets: []string{"shop"}})
	var mu sync.Mutex
	var refused []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		edge.handler.ServeHTTP(rec, r)
		if rec.status >= 400 {
			mu.Lock()
			refused = append(refused, r.Method+" "+r.URL.Path+": "+itoa(int64(rec.status)))
			mu.Unlock()
		}
	}))
	defer proxy.Close()
	central := newStack(t)
	edge.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "plant", "type": "sqlite", "options": map[string]any{"path": srcPath}}, nil)
	edge.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "shop", "connection": "plant", "include": []string{"*"}}, nil)
	if r := edge.run("shop"); r.Status != "succeeded" {
		t.Fatalf("edge run: %+v", r)
	}
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "edge", "type": "snapstore",
		"options": map[string]any{"url": proxy.URL, "token": "edge-shop-reader-token"}}, nil)
	central.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "orders", "connection": "edge", "resource": "shop.orders"}, nil)
	for i := 0; i < 2; i++ {
		if r := central.run("orders"); r.Status != "succeeded" {
			t.Fatalf("run %d of the copy: %+v", i+1, r)
		}
	}
	code, body := central.call("POST", "/v1/adapters", map[string]any{"name": "bad", "connection": "edge", "resource": "shop.nope"})
	if code != http.StatusNotFound || !strings.Contains(string(body), `has no table \"nope\"`) {
		t.Errorf("resource shop.nope: %d %s, want 404 naming the table", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) > 0 {
		t.Errorf("the edge refused requests of the copy, recorded as refusals in its audit trail:\n%s", strings.Join(refused, "\n"))
	}
}
