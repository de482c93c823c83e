package server

import (
	"fmt"
	"strings"
	"testing"
)

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
	// A misspelt key is named with the keys it is close to; another
	// unknown one alone.
	p = f.must(400, "POST", "/v1/adapters", `{"name":"a1","connection":"shop","inlcude":["*"],"schedle":"@every 1h"}`).problem(t)
	if d := fmt.Sprint(p.Errors); !strings.Contains(d, `property "inlcude" is unsupported; did you mean include?`) ||
		!strings.Contains(d, `property "schedle" is unsupported; did you mean schedule?`) {
		t.Errorf("misspelt keys: %+v", p)
	}
	if p := f.must(400, "POST", "/v1/adapters", `{"name":"a1","connection":"shop","resource":"products","bogus":1}`).problem(t); strings.Contains(p.Detail, "did you mean") {
		t.Errorf("a key close to none: %+v", p)
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
	// Digits (and signs) alone are a version number: a tag named so
	// would make diff?from=1 ambiguous. A tag with a letter is fine.
	for _, tag := range []string{"1", "007", "2026-01", "-1"} {
		if p := f.must(400, "PUT", "/v1/datasets/products/tags/"+tag, "").problem(t); p.Field != "tag" {
			t.Fatalf("tag %s: %+v", tag, p)
		}
	}
	f.must(200, "PUT", "/v1/datasets/products/tags/v2026-01", fmt.Sprintf(`{"version":%d}`, v1))
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/diff?from=v2026-01&to=%d&stats_only=true", v2), "")
	p = f.must(400, "POST", "/v1/datasets/products/rollback", `{}`).problem(t)
	if p.Field != "body.version" {
		t.Fatalf("rollback without version: %+v", p)
	}
	var rb struct {
		Version      int64 `json:"version"`
		RestoredFrom int64 `json:"restored_from"`
		Current      bool  `json:"current"`
	}
	f.must(200, "POST", "/v1/datasets/products/rollback", fmt.Sprintf(`{"version":%d}`, v1)).json(t, &rb)
	if rb.RestoredFrom != v1 || rb.Version <= v2 || !rb.Current {
		t.Fatalf("rollback answered %+v, want a new current version restored from %d", rb, v1)
	}
	f.must(200, "GET", "/v1/datasets/products/rows/1", "").json(t, &got)
	if got.Version != rb.Version || got.Row["stock"] != 120.0 {
		t.Fatalf("after rollback: %+v", got)
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/rows/1?version=%d", v2), "").json(t, &got)
	if got.Version != v2 || got.Row["stock"] != 0.0 {
		t.Fatalf("the version after the one restored, after rollback: %+v", got)
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
