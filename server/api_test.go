package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
)

type rowResult struct {
	Dataset string         `json:"dataset"`
	Version int64          `json:"version"`
	Key     []any          `json:"key"`
	Row     map[string]any `json:"row"`
}

func versionOf(t *testing.T, r response) int64 {
	t.Helper()
	v, err := strconv.ParseInt(r.header.Get(versionHeader), 10, 64)
	if err != nil {
		t.Fatalf("bad %s header %q", versionHeader, r.header.Get(versionHeader))
	}
	return v
}

// TestFirstVersionChangeDiffTimeTravel walks the path of the README: a
// first version, a change at the source, the second version, the diff, the
// old version still readable.
func TestFirstVersionChangeDiffTimeTravel(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := f.run("products")

	var got rowResult
	r := f.must(200, "GET", "/v1/datasets/products/rows/2", "")
	r.json(t, &got)
	if got.Version != v1 || versionOf(t, r) != v1 || got.Row["name"] != "jug" || got.Row["price"] != "8.9" || got.Key[0] != 2.0 {
		t.Fatalf("v1 row 2: %s (header %s)", r.body, r.header.Get(versionHeader))
	}
	f.must(404, "GET", "/v1/datasets/products/rows/9", "").problem(t)

	f.exec(`UPDATE products SET price = 7.49 WHERE id = 2; DELETE FROM products WHERE id = 5;
		INSERT INTO products VALUES (9, 'teapot', 24, 3);`)
	v2 := f.run("products")
	if v2 <= v1 {
		t.Fatalf("v2 %d <= v1 %d", v2, v1)
	}
	f.must(200, "GET", "/v1/datasets/products/rows/2", "").json(t, &got)
	if got.Version != v2 || got.Row["price"] != "7.49" {
		t.Fatalf("v2 row 2: %+v", got)
	}
	// The old version stays readable, by version, tag and as_of.
	r = f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/rows/2?version=%d", v1), "")
	r.json(t, &got)
	if got.Version != v1 || versionOf(t, r) != v1 || got.Row["price"] != "8.9" {
		t.Fatalf("row 2 at v1: %s", r.body)
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/rows/5?version=%d", v1), "")
	p := f.must(404, "GET", "/v1/datasets/products/rows/5", "").problem(t)
	if p.Code != "row_not_found" {
		t.Fatalf("deleted row: %+v", p)
	}
	var vinfo struct {
		CommittedAt string `json:"committed_at"`
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/versions/%d", v1), "").json(t, &vinfo)
	f.must(200, "GET", "/v1/datasets/products/rows/2?as_of="+url.QueryEscape(vinfo.CommittedAt), "").json(t, &got)
	if got.Version != v1 {
		t.Fatalf("as_of the first commit read version %d, want %d", got.Version, v1)
	}

	// The diff of the last run, by default from the previous kept version.
	r = f.must(200, "GET", "/v1/datasets/products/diff", "")
	if ct := r.header.Get("Content-Type"); ct != mediaNDJSON {
		t.Fatalf("diff content type %q", ct)
	}
	ops := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		var ch struct {
			Op     string         `json:"op"`
			Key    []any          `json:"key"`
			Before map[string]any `json:"before"`
			After  map[string]any `json:"after"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ch); err != nil {
			t.Fatalf("diff line %q: %v", sc.Text(), err)
		}
		ops[fmt.Sprint(ch.Key[0])] = ch.Op
		if ch.Op == "update" && (ch.Before["price"] != "8.9" || ch.After["price"] != "7.49") {
			t.Fatalf("update line: %s", sc.Text())
		}
	}
	if fmt.Sprint(ops) != "map[2:update 5:delete 9:insert]" {
		t.Fatalf("diff ops %v from\n%s", ops, r.body)
	}
	var st struct{ From, To, Inserted, Updated, Deleted int64 }
	f.must(200, "GET", "/v1/datasets/products/diff?stats_only=true", "").json(t, &st)
	if st.From != v1 || st.To != v2 || st.Inserted != 1 || st.Updated != 1 || st.Deleted != 1 {
		t.Fatalf("diff stats %+v", st)
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/diff?from=%d&to=%d&stats_only=true", v1, v1), "").json(t, &st)
	if st.Inserted+st.Updated+st.Deleted != 0 {
		t.Fatalf("diff of a version with itself: %+v", st)
	}

	var vs struct {
		Versions []struct {
			Version int64 `json:"version"`
			Current bool  `json:"current"`
		} `json:"versions"`
	}
	f.must(200, "GET", "/v1/datasets/products/versions", "").json(t, &vs)
	if len(vs.Versions) != 2 || vs.Versions[0].Version != v2 || !vs.Versions[0].Current || vs.Versions[1].Version != v1 {
		t.Fatalf("versions %+v", vs)
	}
	var ds struct {
		Name      string `json:"name"`
		Current   int64  `json:"current_version"`
		Retention struct {
			TTL         string `json:"ttl"`
			MinVersions int    `json:"min_versions"`
		} `json:"retention"`
	}
	r = f.must(200, "GET", "/v1/datasets/products", "")
	r.json(t, &ds)
	if ds.Current != v2 || ds.Retention.TTL != "0s" || ds.Retention.MinVersions != 10 || versionOf(t, r) != v2 {
		t.Fatalf("dataset %s", r.body)
	}
	var atV1 struct {
		Current     int64 `json:"current_version"`
		VersionRead struct {
			Version int64 `json:"version"`
			Schema  struct {
				Key []string `json:"key"`
			} `json:"schema"`
		} `json:"version_read"`
	}
	r = f.must(200, "GET", fmt.Sprintf("/v1/datasets/products?version=%d", v1), "")
	r.json(t, &atV1)
	if atV1.Current != v2 || atV1.VersionRead.Version != v1 || versionOf(t, r) != v1 || len(atV1.VersionRead.Schema.Key) != 1 {
		t.Fatalf("dataset at v1: %s", r.body)
	}
	f.must(410, "GET", "/v1/datasets/products?version=999999", "").problem(t)
	var list struct {
		Datasets []struct {
			Name string `json:"name"`
		} `json:"datasets"`
	}
	f.must(200, "GET", "/v1/datasets", "").json(t, &list)
	if len(list.Datasets) != 1 || list.Datasets[0].Name != "products" {
		t.Fatalf("datasets %+v", list)
	}
}

// TestScan_PagesStreamsAndRanges checks JSON paging (every page pinned to
// the first page's version even after a new commit), NDJSON and CSV streams
// of the whole range, and start/end/prefix/columns.
func TestScan_PagesStreamsAndRanges(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := f.run("products")
	type page struct {
		Version int64            `json:"version"`
		Columns []string         `json:"columns"`
		Rows    []map[string]any `json:"rows"`
		Next    string           `json:"next_page_token"`
	}
	var ids []string
	path := "/v1/datasets/products/rows?limit=3"
	for i := 0; ; i++ {
		var p page
		r := f.must(200, "GET", path, "")
		r.json(t, &p)
		if p.Version != v1 || versionOf(t, r) != v1 {
			t.Fatalf("page %d read version %d, want %d", i, p.Version, v1)
		}
		if len(p.Rows) > 3 {
			t.Fatalf("page of %d rows with limit 3", len(p.Rows))
		}
		for _, row := range p.Rows {
			ids = append(ids, fmt.Sprint(row["id"]))
		}
		if i == 0 {
			// A new version lands between pages; paging must not see it.
			f.exec(`UPDATE products SET name = 'changed'; INSERT INTO products VALUES (10,'new',1,1)`)
			f.run("products")
		}
		if p.Next == "" {
			break
		}
		path = "/v1/datasets/products/rows?limit=3&page_token=" + url.QueryEscape(p.Next)
		if i > 10 {
			t.Fatal("paging does not end")
		}
	}
	if strings.Join(ids, ",") != "1,2,3,4,5,6,7,8" {
		t.Fatalf("paged ids %v", ids)
	}

	r := f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/rows?version=%d", v1), "", "Accept", "application/x-ndjson")
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	if len(lines) != 8 || r.header.Get("Content-Type") != mediaNDJSON || versionOf(t, r) != v1 {
		t.Fatalf("ndjson: %d lines, %s", len(lines), r.body)
	}
	var row7 map[string]any
	if err := json.Unmarshal([]byte(lines[6]), &row7); err != nil || row7["stock"] != nil || row7["name"] != "scale" {
		t.Fatalf("line 7 %q (NULL stock): %v", lines[6], err)
	}

	r = f.must(200, "GET", "/v1/datasets/products/rows?columns=id,name", "", "Accept", "text/csv")
	recs, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil || len(recs) != 10 || strings.Join(recs[0], ",") != "id,name" || strings.Join(recs[9], ",") != "10,new" {
		t.Fatalf("csv: %v %q", err, r.body)
	}

	var p page
	f.must(200, "GET", "/v1/datasets/products/rows?start=3&end=6", "").json(t, &p)
	if len(p.Rows) != 3 || p.Rows[0]["id"] != 3.0 || p.Rows[2]["id"] != 5.0 {
		t.Fatalf("start/end: %+v", p.Rows)
	}
	p = page{}
	f.must(200, "GET", "/v1/datasets/products/rows?prefix=7&columns=name", "").json(t, &p)
	if len(p.Rows) != 1 || len(p.Rows[0]) != 1 || p.Rows[0]["name"] != "changed" {
		t.Fatalf("prefix/columns: %+v", p.Rows)
	}
}

func TestRows_CompositeAndEscapedKeys(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.must(201, "POST", "/v1/adapters", `{"name":"lines","connection":"shop","resource":"order_lines","dataset":"order_lines"}`)
	f.run("lines")
	f.run("notes")
	var got rowResult
	f.must(200, "GET", "/v1/datasets/order_lines/rows/1001/2", "").json(t, &got)
	if len(got.Key) != 2 || got.Key[0] != 1001.0 || got.Key[1] != 2.0 || got.Row["qty"] != 1.0 {
		t.Fatalf("composite: %+v", got)
	}
	p := f.must(400, "GET", "/v1/datasets/order_lines/rows/1001/two", "").problem(t)
	if p.Code != "bad_key" || p.Field != "key" {
		t.Fatalf("bad key part: %+v", p)
	}
	f.must(400, "GET", "/v1/datasets/order_lines/rows/1001/1/7", "").problem(t)
	var prefixPage struct {
		Rows []map[string]any `json:"rows"`
	}
	f.must(200, "GET", "/v1/datasets/order_lines/rows?prefix=1001", "").json(t, &prefixPage)
	if len(prefixPage.Rows) != 2 {
		t.Fatalf("prefix of a composite key: %+v", prefixPage.Rows)
	}
	for key, want := range map[string]string{"a/b": "slash", "x y": "space", "100%": "percent", "plain": "p"} {
		f.must(200, "GET", "/v1/datasets/notes/rows/"+url.PathEscape(key), "").json(t, &got)
		if got.Row["v"] != want || got.Key[0] != key {
			t.Fatalf("key %q: %+v", key, got)
		}
	}
}

func TestVersions_GoneAndBadSelectors(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := f.run("products")
	for _, c := range []struct {
		path   string
		status int
		code   string
		field  string
	}{
		{"/v1/datasets/products/rows/1?version=999999", 410, "version_not_kept", ""},
		{"/v1/datasets/products/versions/999999", 410, "version_not_kept", ""},
		{"/v1/datasets/products/rows/1?version=abc", 400, "bad_request", "version"},
		{"/v1/datasets/products/rows/1?version=0", 400, "bad_request", "version"},
		{"/v1/datasets/products/versions/abc", 400, "bad_request", "version"},
		{"/v1/datasets/products/rows/1?as_of=yesterday", 400, "bad_request", "as_of"},
		{"/v1/datasets/products/rows/1?as_of=2000-01-01T00:00:00Z", 410, "version_not_kept", ""},
		{fmt.Sprintf("/v1/datasets/products/rows/1?version=%d&tag=x", v1), 400, "bad_request", "version"},
		{"/v1/datasets/products/rows/1?tag=nope", 404, "tag_not_found", ""},
		{"/v1/datasets/nope/rows/1", 404, "dataset_not_found", ""},
		{"/v1/datasets/products/diff?from=x", 404, "tag_not_found", "from"},
		{"/v1/datasets/products/diff?from=-1", 400, "bad_request", "from"},
		{"/v1/datasets/products/diff", 400, "bad_request", "from"}, // one version: nothing older
		{"/v1/datasets/products/rows?limit=0", 400, "bad_request", "limit"},
		{"/v1/datasets/products/rows?page_token=garbage", 400, "bad_page_token", "page_token"},
		{"/v1/datasets/products/rows?page_token=" + strconv.FormatInt(v1, 10) + ".garbage", 400, "bad_page_token", "page_token"},
		{"/v1/datasets/products/rows?start=notanint", 400, "bad_key", "start"},
		{"/v1/datasets/products/rows?columns=id,nope", 400, "bad_request", "columns"},
		{"/v1/datasets/products/rows/1?columns=nope", 400, "bad_request", "columns"},
	} {
		r := f.do("GET", c.path, "")
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.path, r.status, c.status, r.body)
			continue
		}
		p := r.problem(t)
		if p.Code != c.code || (c.field != "" && p.Field != c.field) {
			t.Errorf("%s: code %s field %q, want %s %q (%s)", c.path, p.Code, p.Field, c.code, c.field, p.Detail)
		}
	}
}

func TestAdmin_ConnectionsAdaptersRunsTagsRollbackGC(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	// A connection with a known password: never echoed back.
	spec := `{"name":"warehouse","type":"mysql","options":{"host":"127.0.0.1","port":1,"user":"u","password":"` + knownSecret + `","database":"d"}}`
	f.must(201, "POST", "/v1/connections", spec)
	f.must(409, "POST", "/v1/connections", spec).problem(t)
	var conn struct {
		Name    string         `json:"name"`
		Options map[string]any `json:"options"`
		Source  string         `json:"source"`
	}
	f.must(200, "GET", "/v1/connections/warehouse", "").json(t, &conn)
	if conn.Options["password"] != "REDACTED" || conn.Source != "api" {
		t.Fatalf("connection %+v", conn)
	}
	f.must(200, "GET", "/v1/connections", "")
	f.must(200, "POST", "/v1/connections/warehouse/test", "") // a failed test is a 200 with ok=false
	f.do("GET", "/v1/connections/warehouse/resources", "")    // unreachable source: a problem, not a leak
	p := f.must(409, "PUT", "/v1/connections/shop", `{"type":"sqlite","options":{"path":"x.db"}}`).problem(t)
	if p.Code != "connection_read_only" {
		t.Fatalf("replacing a config connection: %+v", p)
	}
	p = f.must(400, "PUT", "/v1/connections/warehouse", `{"name":"other","type":"mysql"}`).problem(t)
	if p.Field != "body.name" {
		t.Fatalf("name mismatch: %+v", p)
	}
	p = f.must(400, "POST", "/v1/connections", `{"name":"c2","type":"mysql","options":{"port":"many"}}`).problem(t)
	if p.Code != "bad_option" || !strings.Contains(p.Field, "port") {
		t.Fatalf("bad option: %+v", p)
	}
	f.must(200, "PUT", "/v1/connections/warehouse", `{"type":"mysql","options":{"host":"127.0.0.1","user":"u2","password":"`+knownSecret+`"}}`)
	f.must(204, "DELETE", "/v1/connections/warehouse", "")
	f.must(404, "GET", "/v1/connections/warehouse", "").problem(t)

	// Adapters: bad inputs name the field.
	for _, c := range []struct{ body, code, field string }{
		{`{"name":"a1","connection":"shop","resource":"products","schedule":"every tuesday"}`, "bad_schedule", "schedule"},
		{`{"name":"a1","connection":"shop","resource":"products","bogus":1}`, "bad_request", "body.bogus"},
		{`{"name":"a1","connection":"shop","resource":"products","retention":{"ttl":3600}}`, "bad_request", "body.retention.ttl"},
		{`{"name":"a1","connection":"shop","resource":"products","retention":{"ttl":"soon"}}`, "bad_request", "body.retention.ttl"},
		{`{"name":"a1","connection":"shop"`, "bad_json", "body"},
		{`{"name":"a1","connection":"nope","resource":"products"}`, "connection_not_found", "connection"},
	} {
		r := f.do("POST", "/v1/adapters", c.body)
		if r.status < 400 || r.status >= 500 {
			t.Errorf("%s: status %d: %s", c.body, r.status, r.body)
			continue
		}
		p := r.problem(t)
		if p.Code != c.code || (c.field != "" && p.Field != c.field) {
			t.Errorf("%s: %s %q, want %s %q (%s)", c.body, p.Code, p.Field, c.code, c.field, p.Detail)
		}
	}
	var ad struct {
		Name      string `json:"name"`
		Schedule  string `json:"schedule"`
		Source    string `json:"source"`
		Retention struct {
			TTL string `json:"ttl"`
		} `json:"retention"`
	}
	f.must(201, "POST", "/v1/adapters", `{"name":"p2","connection":"shop","resource":"products","dataset":"products_copy","schedule":"@every 1h","retention":{"ttl":"36h","min_versions":2}}`).json(t, &ad)
	if ad.Schedule != "@every 1h" || ad.Source != "api" || ad.Retention.TTL != "36h0m0s" {
		t.Fatalf("created adapter %+v", ad)
	}
	f.must(200, "PUT", "/v1/adapters/p2", `{"connection":"shop","resource":"products","dataset":"products_copy"}`)
	f.must(201, "PUT", "/v1/adapters/p3", `{"connection":"shop","resource":"notes"}`)
	f.must(204, "DELETE", "/v1/adapters/p3", "")
	f.must(404, "GET", "/v1/adapters/p3", "").problem(t)
	f.must(409, "DELETE", "/v1/adapters/products", "").problem(t) // config-defined

	// Runs: 202 then live record; list; wait.
	var run struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	r := f.must(202, "POST", "/v1/adapters/p2/runs", "")
	r.json(t, &run)
	if run.ID == "" || r.header.Get("Location") != "/v1/runs/"+run.ID {
		t.Fatalf("started run %s, location %q", r.body, r.header.Get("Location"))
	}
	f.must(200, "GET", "/v1/runs/"+run.ID, "")
	var runs struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	f.must(200, "GET", "/v1/adapters/p2/runs?limit=5", "").json(t, &runs)
	if len(runs.Runs) < 1 || runs.Runs[0].ID != run.ID {
		t.Fatalf("runs %+v", runs)
	}
	f.must(404, "GET", "/v1/runs/nope", "").problem(t)
	f.must(404, "GET", "/v1/adapters/nope/runs", "").problem(t)
	f.must(404, "POST", "/v1/adapters/nope/runs", "").problem(t)

	// Tags, rollback, GC, drop.
	v1 := f.run("products")
	f.exec(`UPDATE products SET stock = 0 WHERE id = 1`)
	v2 := f.run("products")
	var vi struct {
		Version int64    `json:"version"`
		Tags    []string `json:"tags"`
	}
	f.must(200, "PUT", "/v1/datasets/products/tags/first", fmt.Sprintf(`{"version":%d}`, v1)).json(t, &vi)
	if vi.Version != v1 {
		t.Fatalf("tag: %+v", vi)
	}
	var got rowResult
	f.must(200, "GET", "/v1/datasets/products/rows/1?tag=first", "").json(t, &got)
	if got.Version != v1 || got.Row["stock"] != 120.0 {
		t.Fatalf("read by tag: %+v", got)
	}
	f.must(200, "PUT", "/v1/datasets/products/tags/latest", "").json(t, &vi)
	if vi.Version != v2 {
		t.Fatalf("tag without body tags the current version: %+v", vi)
	}
	f.must(204, "DELETE", "/v1/datasets/products/tags/latest", "")
	f.must(404, "DELETE", "/v1/datasets/products/tags/latest", "").problem(t)
	p = f.must(400, "POST", "/v1/datasets/products/rollback", `{}`).problem(t)
	if p.Field != "body.version" {
		t.Fatalf("rollback without version: %+v", p)
	}
	f.must(200, "POST", "/v1/datasets/products/rollback", fmt.Sprintf(`{"version":%d}`, v1)).json(t, &vi)
	f.must(200, "GET", "/v1/datasets/products/rows/1", "").json(t, &got)
	if got.Version != v1 || got.Row["stock"] != 120.0 {
		t.Fatalf("after rollback: %+v", got)
	}
	var gc struct {
		DryRun bool `json:"dry_run"`
	}
	f.must(200, "POST", "/v1/datasets/products/gc?dry_run=true", "").json(t, &gc)
	if !gc.DryRun {
		t.Fatal("dry run not reported")
	}
	f.must(200, "POST", "/v1/datasets/products/gc", "")
	f.must(400, "POST", "/v1/datasets/products/gc?dry_run=maybe", "").problem(t)
	f.must(204, "DELETE", "/v1/datasets/products", "")
	f.must(404, "GET", "/v1/datasets/products", "").problem(t)
}

// TestContentTypes: JSON bodies are read with no Content-Type and with
// curl's -d default; other media types are a 415.
func TestContentTypes(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	body := `{"connection":"shop","resource":"notes"}`
	f.must(201, "PUT", "/v1/adapters/a1", body, "Content-Type", "application/x-www-form-urlencoded")
	f.must(200, "PUT", "/v1/adapters/a1", body, "Content-Type", "")
	f.must(200, "PUT", "/v1/adapters/a1", body, "Content-Type", "application/json; charset=utf-8")
	if p := f.must(415, "PUT", "/v1/adapters/a1", body, "Content-Type", "text/xml").problem(t); p.Code != "unsupported_media_type" {
		t.Fatalf("problem %+v", p)
	}
}

// TestOddInputs sends inputs no handler expects; none may give a 500, and
// every error is a problem.
func TestOddInputs(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	huge := strings.Repeat("x", MaxBodyBytes+10)
	cases := []struct{ method, path, body string }{
		{"GET", "/nope", ""},
		{"DELETE", "/healthz", ""},
		{"PATCH", "/v1/datasets/products", ""},
		{"GET", "/v1/datasets/%00", ""},
		{"GET", "/v1/datasets/products/rows/%ff%fe", ""},
		{"GET", "/v1/datasets/products/rows/" + strings.Repeat("9", 400), ""},
		{"GET", "/v1/datasets/products/rows/-0", ""},
		{"GET", "/v1/datasets/products/rows/1?columns=nope", ""},
		{"GET", "/v1/datasets/products/rows/1?columns=,,,", ""},
		{"GET", "/v1/datasets/products/rows?start=1&start=2&start=3", ""},
		{"GET", "/v1/datasets/products/rows?end=", ""},
		{"GET", "/v1/datasets/products/rows?limit=99999999999999999999", ""},
		{"GET", "/v1/datasets/products/rows?version=-1", ""},
		{"GET", "/v1/datasets/products/rows?version=9223372036854775807", ""},
		{"GET", "/v1/datasets/products/rows?as_of=9999-12-31T23:59:59Z", ""},
		{"GET", "/v1/datasets/products/diff?from=9223372036854775807&to=1", ""},
		{"GET", "/v1/datasets/products/diff?stats_only=yes", ""},
		{"GET", "/v1/datasets/products/versions/-5", ""},
		{"POST", "/v1/adapters", "null"},
		{"POST", "/v1/adapters", "[]"},
		{"POST", "/v1/adapters", `"str"`},
		{"POST", "/v1/adapters", `{"name":""}`},
		{"POST", "/v1/adapters", `{"name":"x","connection":"shop","resource":"products"} {"again":1}`},
		{"POST", "/v1/adapters", `{"name":"x","connection":"shop","resource":"products","retries":-1}`},
		{"POST", "/v1/adapters", `{"name":"x","connection":"shop","resource":"products","guard":{"max_shrink":7}}`},
		{"POST", "/v1/adapters", `{"name":"x","connection":"shop","resource":"no_such_table"}`},
		{"POST", "/v1/adapters", huge},
		{"POST", "/v1/connections", `{"name":"x","type":"oracle"}`},
		{"POST", "/v1/connections", `{"name":"x","type":"sqlite","options":{"path":{"nested":true}}}`},
		{"POST", "/v1/connections", `{"name":"x","type":"sqlite","sharing":"sometimes","options":{"path":"a"}}`},
		{"POST", "/v1/connections", "\x00\x01"},
		{"PUT", "/v1/datasets/products/tags/t", `{"version":"one"}`},
		{"PUT", "/v1/datasets/products/tags/t", `{"version":999999}`},
		{"POST", "/v1/datasets/products/rollback", `{"version":999999}`},
		{"POST", "/v1/datasets/nope/gc", ""},
		{"DELETE", "/v1/datasets/nope", ""},
		{"POST", "/v1/adapters/products/runs?wait=perhaps", ""},
		{"GET", "/v1/adapters/products/runs?limit=-3", ""},
	}
	for _, c := range cases {
		r := f.do(c.method, c.path, c.body)
		name := c.method + " " + c.path
		if len(name) > 80 {
			name = name[:80]
		}
		if r.status >= 500 {
			t.Errorf("%s %.60q: status %d: %s", name, c.body, r.status, r.body)
			continue
		}
		if r.status >= 400 {
			r.problem(t)
		}
	}
	if strings.Contains(f.logs.String(), "handler panicked") {
		t.Errorf("a handler panicked:\n%s", f.logs.String())
	}
}

// TestPanicBecomesProblem checks the recover middleware.
func TestPanicBecomesProblem(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.srv.echo.GET("/test-panic", func(c echoContext) error { panic("boom") })
	p := f.must(500, "GET", "/test-panic", "").problem(t)
	if p.Code != "internal" || strings.Contains(p.Detail, "boom") {
		t.Fatalf("problem %+v", p)
	}
	if !strings.Contains(f.logs.String(), "handler panicked") || !strings.Contains(f.logs.String(), "boom") {
		t.Fatal("the panic is not logged")
	}
	f.must(200, "GET", "/healthz", "") // still serving
}

// TestMetrics_AndDocs checks the exposition after a run and a GC, and that
// docs/operations.md lists every metric family the process exposes.
func TestMetrics_AndDocs(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	f.must(200, "POST", "/v1/datasets/products/gc", "")
	f.must(200, "GET", "/v1/datasets/products/rows/1", "")
	body := string(f.must(200, "GET", "/metrics", "").body)
	for _, want := range []string{
		`snapstore_server_http_request_duration_seconds_count{method="GET",route="/v1/datasets/:dataset/rows/*",status="200"} 1`,
		`snapstore_server_dataset_current_version_age_seconds{dataset="products"}`,
		`snapstore_server_dataset_kept_versions{dataset="products"} 1`,
		`snapstore_server_gc_bytes_reclaimed_total{dataset="products"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	sort.Strings(names)
	doc, err := readDoc("operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("metric %s is not documented in docs/operations.md", n)
		}
	}
}

func TestHealthAndReady(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.must(200, "GET", "/healthz", "")
	f.must(200, "GET", "/readyz", "")
	var doc map[string]any
	f.must(200, "GET", "/openapi.json", "").json(t, &doc)
	if doc["openapi"] != "3.0.3" {
		t.Fatalf("openapi.json: %v", doc["openapi"])
	}
	f.srv.SetShuttingDown()
	if p := f.must(503, "GET", "/readyz", "").problem(t); p.Code != "shutting_down" {
		t.Fatalf("readyz while stopping: %+v", p)
	}
}

// TestClientGone_NotAServerError checks that a request whose client went
// away is logged at debug with status 499 (nginx's), counted as 499 rather
// than a 5xx, and answered with nothing, shutting down or not; a
// cancellation of the server's own work (the request still open) stays a
// 503 problem: canceled, or shutting_down once shutdown began.
func TestClientGone_NotAServerError(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.srv.echo.GET("/test-canceled", func(c echoContext) error {
		if c.QueryParam("server") != "" {
			return fmt.Errorf("server: test work: %w", context.Canceled)
		}
		<-c.Request().Context().Done()
		return fmt.Errorf("server: test read: %w", c.Request().Context().Err())
	})
	gone := func() *httptest.ResponseRecorder {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the client hung up
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/test-canceled", nil).WithContext(ctx))
		return rec
	}
	if rec := gone(); rec.Body.Len() != 0 {
		t.Errorf("answered a client that went away: %d %s", rec.Code, rec.Body)
	}
	logs := f.logs.String()
	if strings.Contains(logs, "request failed") || !strings.Contains(logs, `level=DEBUG msg="client went away"`) || !strings.Contains(logs, "status=499") {
		t.Errorf("logs:\n%s", logs)
	}
	body := string(f.must(200, "GET", "/metrics", "").body)
	if !strings.Contains(body, `snapstore_server_http_request_duration_seconds_count{method="GET",route="unmatched",status="499"} 1`) || strings.Contains(body, `status="503"`) {
		t.Errorf("metrics:\n%s", body)
	}
	if p := f.must(503, "GET", "/test-canceled?server=1", "").problem(t); p.Code != "canceled" {
		t.Errorf("server-side cancellation: %+v", p)
	}

	f.srv.SetShuttingDown()
	if rec := gone(); rec.Body.Len() != 0 {
		t.Errorf("answered a client that went away during shutdown: %d %s", rec.Code, rec.Body)
	}
	if p := f.must(503, "GET", "/test-canceled?server=1", "").problem(t); p.Code != "shutting_down" {
		t.Errorf("server-side cancellation while stopping: %+v", p)
	}
}
