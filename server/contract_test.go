package server

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// wantProblem sends a request and checks the status, code and (when
// given) field of the problem answered.
func (f *fixture) wantProblem(status int, code, field, method, path, body string, hdr ...string) Problem {
	f.t.Helper()
	r := f.do(method, path, body, hdr...)
	if r.status != status {
		f.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body)
	}
	p := r.problem(f.t)
	if p.Code != code || field != "" && p.Field != field {
		f.t.Fatalf("%s %s: code %s field %q, want %s %q (%s)", method, path, p.Code, p.Field, code, field, p.Detail)
	}
	return p
}

// TestQuery_MalformedRefused: a query string that url.ParseQuery does not
// parse whole is a 400 before any handler acts, rather than the pair it
// cannot parse being dropped (a read answering the current version, a dry
// run collecting for real).
func TestQuery_MalformedRefused(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.must(201, "POST", "/v1/adapters", `{"name":"short","connection":"shop","resource":"notes","dataset":"short","retention":{"ttl":"1ns","min_versions":1}}`)
	v1 := strconv.FormatInt(f.run("short"), 10)
	f.exec(`UPDATE notes SET v = 'two'`)
	f.run("short")
	for _, path := range []string{
		"/v1/datasets/short/rows/plain?version=" + v1 + ";",
		"/v1/datasets/short/rows/plain?version=" + v1 + "%zz",
		"/v1/datasets/short/rows/plain?version=1;version=2",
		"/v1/datasets/short/rows?limit=%zz",
		"/v1/datasets/short?tag=x%z",
		"/v1/datasets/short/rows?%zz=1",
	} {
		p := f.wantProblem(400, "bad_request", "", "GET", path, "")
		if !strings.Contains(p.Detail, "does not parse") {
			t.Errorf("%s: detail %q", path, p.Detail)
		}
	}
	f.wantProblem(400, "bad_request", "", "POST", "/v1/datasets/short/gc?dry_run=true;", "")
	f.wantProblem(400, "bad_request", "dry_run", "POST", "/v1/datasets/short/gc?dry_run=true%zz", "")
	var vs struct {
		Versions []struct{ Version int64 } `json:"versions"`
	}
	f.must(200, "GET", "/v1/datasets/short/versions", "").json(t, &vs)
	if len(vs.Versions) != 2 {
		t.Fatalf("a refused dry run collected: versions %+v", vs.Versions)
	}
	// Escapes that parse are fine.
	f.must(200, "GET", "/v1/datasets/short/rows/plain?version="+v1+"&columns=%76", "")
}

// TestQuery_UnknownParameterRefused: a query parameter the operation does
// not document is a 400 naming it.
func TestQuery_UnknownParameterRefused(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	f.wantProblem(400, "bad_request", "Version", "GET", "/v1/datasets/products/rows/1?Version=1", "")
	f.wantProblem(400, "bad_request", "form", "GET", "/v1/datasets/products/diff?form=1", "")
	f.wantProblem(400, "bad_request", "unknown", "GET", "/v1/datasets/products/rows?unknown=1", "")
	f.wantProblem(400, "bad_request", "x", "GET", "/v1/datasets?x", "")
	f.wantProblem(400, "bad_request", "dryrun", "POST", "/v1/datasets/products/gc?dryrun=true", "")
	f.must(200, "GET", "/v1/datasets/products/rows?limit=2&columns=id&start=1", "")
	f.must(200, "GET", "/v1/datasets/products/rows?&limit=2&", "") // empty pairs are skipped, as ParseQuery does
}

// TestMetrics_MethodLabelBounded: invented methods are one "other" series,
// not one series each.
func TestMetrics_MethodLabelBounded(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for i, path := range []string{"/v1/datasets", "/nope", "/v1/datasets", "/nope"} {
		f.do("M"+strconv.Itoa(1000+i), path, "")
	}
	f.do("GET", "/nope", "")
	body := string(f.must(200, "GET", "/metrics", "").body)
	if strings.Contains(body, `method="M10`) {
		t.Fatal("an invented method became a label value")
	}
	for _, want := range []string{`method="other",route="unmatched",status="405"} 2`, `method="other",route="unmatched",status="404"} 2`, `method="GET",route="unmatched",status="404"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestAdapter_DatasetTakenIsConflict: a second adapter on a dataset is a
// 409 dataset_taken naming the field dataset.
func TestAdapter_DatasetTakenIsConflict(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	p := f.wantProblem(409, "dataset_taken", "dataset", "POST", "/v1/adapters", `{"name":"second","connection":"shop","resource":"notes","dataset":"notes"}`)
	if !strings.Contains(p.Detail, `"notes"`) {
		t.Errorf("detail does not name the other adapter: %q", p.Detail)
	}
	f.wantProblem(409, "dataset_taken", "dataset", "PUT", "/v1/adapters/second", `{"connection":"shop","resource":"notes","dataset":"notes"}`)
}

// TestBody_MalformedJSONIsBadJSON: a body that is not JSON (syntax error,
// truncated, trailing data, a BOM) or not of the right top-level type is
// 400 bad_json, as docs/api.md lists; a wrong field stays bad_request
// naming the field.
func TestBody_MalformedJSONIsBadJSON(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, body := range []string{`{`, `{"name":"x",}`, `{"name":"x","type":"sqlite"} {}`, `{"name":"x","type":"sqlite"} x`, "\ufeff{}", `[]`, `"x"`, `12`, `null`, strings.Repeat("[", 20000)} {
		f.wantProblem(400, "bad_json", "body", "POST", "/v1/connections", body)
	}
	f.wantProblem(400, "bad_json", "body", "POST", "/v1/datasets/products/rollback", `{"version":1}}`)
	f.wantProblem(400, "bad_json", "body", "PUT", "/v1/datasets/products/tags/x", `[`)
	p := f.wantProblem(400, "bad_request", "", "POST", "/v1/connections", `{"name":"x","type":"sqlite","sharing":7}`)
	if !strings.HasPrefix(p.Field, "body.") {
		t.Errorf("a wrong field names %q, want body.<field>", p.Field)
	}
}

// TestDiff_FromTag: diff bounds take a tag name as well as a version.
func TestDiff_FromTag(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := f.run("products")
	f.must(200, "PUT", "/v1/datasets/products/tags/first", "")
	f.exec(`UPDATE products SET stock = 7 WHERE id = 1`)
	f.run("products")
	f.exec(`UPDATE products SET stock = 8 WHERE id = 2`)
	v3 := f.run("products")
	r := f.must(200, "GET", "/v1/datasets/products/diff?from=first", "")
	if got := r.header.Get("Snapstore-Diff-From"); got != strconv.FormatInt(v1, 10) {
		t.Fatalf("diff from the tag starts at %s, want %d", got, v1)
	}
	if n := strings.Count(string(r.body), `"op":"update"`); n != 2 {
		t.Fatalf("diff from the tag: %d updates, want 2:\n%s", n, r.body)
	}
	f.must(200, "PUT", "/v1/datasets/products/tags/last", "")
	r = f.must(200, "GET", "/v1/datasets/products/diff?from=first&to=last&stats_only=true", "")
	if versionOf(t, r) != v3 {
		t.Fatalf("to=last read version %d, want %d", versionOf(t, r), v3)
	}
	f.wantProblem(404, "tag_not_found", "to", "GET", "/v1/datasets/products/diff?from=first&to=nope", "")
}

// TestRun_ForceAndRecordFields: force=true commits a run the guard
// refuses, and the run and adapter records carry code, forced and
// run_on_start (checked against openapi.yaml by the fixture).
func TestRun_ForceAndRecordFields(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	f.exec(`DELETE FROM products`)
	var rec struct {
		Status  string `json:"status"`
		Code    string `json:"code"`
		Forced  bool   `json:"forced"`
		Version int64  `json:"version"`
	}
	f.must(200, "POST", "/v1/adapters/products/runs?wait=true", "").json(t, &rec)
	if rec.Status != "failed" || rec.Code != "guard_refused" {
		t.Fatalf("an emptying run: %+v, want failed guard_refused", rec)
	}
	f.must(200, "POST", "/v1/adapters/products/runs?wait=true&force=true", "").json(t, &rec)
	if rec.Status != "succeeded" || !rec.Forced || rec.Version == 0 {
		t.Fatalf("a forced run: %+v, want succeeded, forced", rec)
	}
	f.must(201, "POST", "/v1/adapters", `{"name":"early","connection":"shop","resource":"order_lines","run_on_start":true}`)
	var ad struct {
		RunOnStart *bool `json:"run_on_start"`
	}
	f.must(200, "GET", "/v1/adapters/early", "").json(t, &ad)
	if ad.RunOnStart == nil || !*ad.RunOnStart {
		t.Fatalf("run_on_start not shown: %+v", ad)
	}
	f.must(200, "GET", "/v1/adapters/products", "").json(t, &ad)
	if ad.RunOnStart == nil || *ad.RunOnStart {
		t.Fatalf("run_on_start of products: want false shown")
	}
}

// TestAsOf_ZeroTimeIsATime: as_of=0001-01-01T00:00:00Z is a
// time before every commit, a 410 as for 1900, not the current version.
func TestAsOf_ZeroTimeIsATime(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	for _, path := range []string{
		"/v1/datasets/products/rows/1?as_of=0001-01-01T00:00:00Z",
		"/v1/datasets/products/rows?as_of=0001-01-01T00:00:00Z",
		"/v1/datasets/products?as_of=0001-01-01T00:00:00Z",
	} {
		f.wantProblem(410, "version_not_kept", "", "GET", path, "")
	}
	f.wantProblem(404, "dataset_not_found", "", "GET", "/v1/datasets/nope/rows/1?as_of=0001-01-01T00:00:00Z", "")
}

// TestPageToken_OneCode: every mangled token, and a token of
// another dataset, is bad_page_token naming page_token.
func TestPageToken_OneCode(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	f.run("notes")
	var page struct {
		Next string `json:"next_page_token"`
	}
	f.must(200, "GET", "/v1/datasets/products/rows?limit=2", "").json(t, &page)
	if page.Next == "" {
		t.Fatal("no next page token")
	}
	var notes struct {
		Next string `json:"next_page_token"`
	}
	f.must(200, "GET", "/v1/datasets/notes/rows?limit=1", "").json(t, &notes)
	f.must(200, "GET", "/v1/datasets/products/rows?limit=2&page_token="+url.QueryEscape(page.Next), "")
	for _, tok := range []string{"garbage", "1.", ".", "-1.AwE", "99999999999999999999.AwE", "1.AAAA", "1.00000000.AAAA", notes.Next} {
		f.wantProblem(400, "bad_page_token", "page_token", "GET", "/v1/datasets/products/rows?page_token="+url.QueryEscape(tok), "")
	}
}

// TestRows_EmptyTextKey: ".../rows/" addresses the empty
// text key of a one-column text key; for other keys it is bad_key.
func TestRows_EmptyTextKey(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.exec(`INSERT INTO notes VALUES ('', 'empty')`)
	f.run("notes")
	f.run("products")
	var got rowResult
	f.must(200, "GET", "/v1/datasets/notes/rows/", "").json(t, &got)
	if got.Row["v"] != "empty" || len(got.Key) != 1 || got.Key[0] != "" {
		t.Fatalf("empty key: %+v", got)
	}
	f.wantProblem(400, "bad_key", "key", "GET", "/v1/datasets/products/rows/", "")
}

// TestNegotiation_QZeroAndCharsets: Accept with q=0 does not select a type;
// a JSON body in another charset or compressed is 415.
func TestNegotiation_QZeroAndCharsets(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	for accept, want := range map[string]string{
		"text/csv;q=0, application/json":             "application/json",
		"text/csv;q=0":                               "application/json",
		"application/json;q=0.5, text/csv":           "text/csv",
		"text/csv;q=0.2, application/x-ndjson;q=0.9": "application/x-ndjson",
		"application/x-ndjson, text/csv":             "application/x-ndjson",
		"text/csv;q=0.5, application/x-ndjson;q=0.5": "text/csv",
		"text/html, */*;q=0.1":                       "application/json",
	} {
		r := f.must(200, "GET", "/v1/datasets/products/rows", "", "Accept", accept)
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, want) {
			t.Errorf("Accept %q: %s, want %s", accept, ct, want)
		}
	}
	body := `{"name":"x","type":"sqlite","options":{"path":"/nonexistent/x.db"}}`
	f.wantProblem(415, "unsupported_media_type", "", "POST", "/v1/connections", body, "Content-Type", "application/json; charset=utf-16")
	f.wantProblem(415, "unsupported_media_type", "", "POST", "/v1/connections", body, "Content-Encoding", "gzip")
	f.must(201, "POST", "/v1/connections", body, "Content-Type", "application/json; charset=UTF-8")
}

// TestRead_DatasetAnAdapterWillWrite: reading a dataset an adapter targets
// before its first commit is 404 no_version naming the adapter, not
// dataset_not_found.
func TestRead_DatasetAnAdapterWillWrite(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, path := range []string{"/v1/datasets/notes", "/v1/datasets/notes/rows", "/v1/datasets/notes/rows/a%2Fb", "/v1/datasets/notes/versions"} {
		p := f.wantProblem(404, "no_version", "", "GET", path, "")
		if !strings.Contains(p.Detail, `adapter "notes"`) {
			t.Errorf("%s: detail %q does not name the adapter", path, p.Detail)
		}
	}
	f.wantProblem(404, "dataset_not_found", "", "GET", "/v1/datasets/nope/rows", "")
}
