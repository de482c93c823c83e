package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/snapshot"
)

// TestVersions_Pages lists a dataset's versions a page at a time: the pages
// are every kept version once, newest first; a page token of another
// dataset, or mangled, is 400 bad_page_token.
func TestVersions_Pages(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	var want []int64
	for i := range 5 {
		var run struct{ Version int64 }
		// A change per run: a run that finds none makes no version.
		f.exec(fmt.Sprintf("UPDATE products SET stock = %d WHERE id = 1", 100+i))
		f.must(200, "POST", "/v1/adapters/products/runs?wait=true", "").json(t, &run)
		want = append([]int64{run.Version}, want...)
	}
	var page struct {
		Versions []struct {
			Version int64 `json:"version"`
		} `json:"versions"`
		NextPageToken string `json:"next_page_token"`
	}
	f.must(200, "GET", "/v1/datasets/products/versions", "").json(t, &page)
	if len(page.Versions) != 5 || page.NextPageToken != "" {
		t.Fatalf("one page by default: %+v", page)
	}
	var got []int64
	path := "/v1/datasets/products/versions?limit=2"
	for pages := 0; ; pages++ {
		page.NextPageToken = ""
		f.must(200, "GET", path, "").json(t, &page)
		for _, v := range page.Versions {
			got = append(got, v.Version)
		}
		if page.NextPageToken == "" || pages > 5 {
			break
		}
		path = "/v1/datasets/products/versions?limit=2&page_token=" + url.QueryEscape(page.NextPageToken)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	f.must(200, "GET", "/v1/datasets/products/versions?limit=2", "").json(t, &page)
	f.must(200, "POST", "/v1/adapters/notes/runs?wait=true", "")
	for _, tok := range []string{page.NextPageToken, "AXBy", "x"} {
		p := f.must(400, "GET", "/v1/datasets/notes/versions?page_token="+url.QueryEscape(tok), "").problem(t)
		if p.Code != "bad_page_token" || p.Field != "page_token" {
			t.Errorf("token %q of another dataset or mangled: %+v", tok, p)
		}
	}
	f.must(400, "GET", "/v1/datasets/products/versions?limit=1001", "").problem(t)
}

// TestRuns_ListAndLastRun: GET /v1/runs lists the newest runs of every
// adapter or of one, of one status; the adapters say their last run.
func TestRuns_ListAndLastRun(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	var adapters struct {
		Adapters []struct {
			Name    string `json:"name"`
			LastRun *struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"last_run"`
		} `json:"adapters"`
	}
	f.must(200, "GET", "/v1/adapters", "").json(t, &adapters)
	for _, a := range adapters.Adapters {
		if a.LastRun != nil {
			t.Fatalf("a last run before any: %+v", a)
		}
	}
	f.must(200, "POST", "/v1/adapters/products/runs?wait=true", "")
	f.must(201, "POST", "/v1/adapters", `{"name":"broken","connection":"shop","resource":"products","dataset":"other","key_columns":["name"]}`)
	f.exec(`INSERT INTO products VALUES (9, 'cup', 1, 1)`) // name is no longer unique
	var failed struct{ ID, Status string }
	f.must(200, "POST", "/v1/adapters/broken/runs?wait=true", "").json(t, &failed)
	if failed.Status != "failed" {
		t.Fatalf("run on a non-unique key: %+v", failed)
	}
	last := f.must(200, "POST", "/v1/adapters/products/runs?wait=true", "")
	var lastRun struct{ ID string }
	last.json(t, &lastRun)

	f.must(200, "GET", "/v1/adapters", "").json(t, &adapters)
	byName := map[string]string{}
	for _, a := range adapters.Adapters {
		if a.LastRun != nil {
			byName[a.Name] = a.LastRun.ID + " " + a.LastRun.Status
		}
	}
	if byName["products"] != lastRun.ID+" succeeded" || byName["broken"] != failed.ID+" failed" || byName["notes"] != "" {
		t.Fatalf("last runs %v", byName)
	}
	var one struct {
		LastRun struct{ ID string } `json:"last_run"`
	}
	f.must(200, "GET", "/v1/adapters/broken", "").json(t, &one)
	if one.LastRun.ID != failed.ID {
		t.Fatalf("GET adapter: last run %+v, want %s", one, failed.ID)
	}

	var runs struct {
		Runs []struct{ ID, Adapter, Status string } `json:"runs"`
	}
	for _, c := range []struct {
		query string
		want  string
	}{
		{"", fmt.Sprint(lastRun.ID, failed.ID)},
		{"?status=failed", failed.ID},
		{"?adapter=products&limit=1", lastRun.ID},
		{"?adapter=notes", ""},
	} {
		f.must(200, "GET", "/v1/runs"+c.query, "").json(t, &runs)
		got := ""
		for i, r := range runs.Runs {
			if c.query == "" && i == 2 {
				break // the first products run follows
			}
			got += r.ID
		}
		if got != c.want {
			t.Errorf("GET /v1/runs%s: %+v, want %s", c.query, runs.Runs, c.want)
		}
	}
	if p := f.must(404, "GET", "/v1/runs?adapter=nope", "").problem(t); p.Field != "adapter" {
		t.Errorf("unknown adapter: %+v", p)
	}
	f.must(400, "GET", "/v1/runs?status=happy", "").problem(t)
	// Every status a run record can have filters, waiting among them.
	for _, st := range RunStatuses {
		f.must(200, "GET", "/v1/runs?status="+string(st), "")
	}
}

// TestTags_EscapedName: a tag name with a character a client escapes in
// the path (":" as %3A) is validated unescaped, as the handler reads it.
func TestTags_EscapedName(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.must(200, "POST", "/v1/adapters/products/runs?wait=true", "")
	f.must(200, "PUT", "/v1/datasets/products/tags/release%3A1", "")
	f.must(200, "GET", "/v1/datasets/products?tag=release:1", "")
	f.must(204, "DELETE", "/v1/datasets/products/tags/release%3A1", "")
	// Dots alone are dot-segments that browsers and curl drop from a
	// path: such a tag could be made but not removed from the console.
	for _, dots := range []string{"%2E", "%2E%2E", "..."} {
		if p := f.must(400, "PUT", "/v1/datasets/products/tags/"+dots, "").problem(t); p.Field != "tag" || !strings.Contains(p.Detail, "not dots alone") {
			t.Errorf("tag %s: %+v", dots, p)
		}
	}
	if err := f.db.Tag(context.Background(), "products", "..", 1); !errors.Is(err, snapshot.ErrInvalidArgument) {
		t.Errorf(`snapshot Tag "..": %v, want ErrInvalidArgument`, err)
	}
	// DELETE takes such a name still, made before the rule: not a 400.
	if p := f.must(404, "DELETE", "/v1/datasets/products/tags/%2E%2E", "").problem(t); p.Code != "tag_not_found" {
		t.Errorf(`DELETE tag "..": %+v`, p)
	}
	// A dot beside a digit or "-" is a name, as before.
	f.must(200, "PUT", "/v1/datasets/products/tags/1.5", "")
	f.must(200, "GET", "/v1/datasets/products?tag=1.5", "")
	f.must(204, "DELETE", "/v1/datasets/products/tags/1.5", "")
	p := f.must(400, "PUT", "/v1/datasets/products/tags/bad%20name", "").problem(t)
	// A refusal by the document's pattern says what the value should be,
	// not the regular expression.
	if p.Field != "tag" || !strings.Contains(p.Detail, `want 1 to 200 letters, digits and _.:@-, at least one of them a letter or one of _.:@ (digits and - alone read as a version number), not dots alone (a URL path drops . and ..); got "bad name"`) {
		t.Errorf("bad tag name: %+v", p)
	}
	p = f.must(400, "POST", "/v1/adapters", `{"name":"a1","connection":"shop","resource":"products","retention":{"ttl":"soon"}}`).problem(t)
	if p.Field != "body.retention.ttl" || !strings.Contains(p.Detail, `want a Go duration`) || strings.Contains(p.Detail, "regular expression") {
		t.Errorf("bad duration: %+v", p)
	}
	// A number of seconds is refused saying what a duration is, not only
	// that it is no string.
	p = f.must(400, "POST", "/v1/adapters", `{"name":"a1","connection":"shop","resource":"products","retention":{"ttl":3600}}`).problem(t)
	if p.Field != "body.retention.ttl" || !strings.Contains(p.Detail, `want a Go duration`) || !strings.Contains(p.Detail, `"30d"`) || !strings.Contains(p.Detail, `got "3600"`) {
		t.Errorf("a number as a duration: %+v", p)
	}
	// Days, as people write retention.
	var ad struct {
		Retention struct {
			TTL string `json:"ttl"`
		} `json:"retention"`
	}
	f.must(201, "POST", "/v1/adapters", `{"name":"a1","connection":"shop","resource":"products","dataset":"products_days","retention":{"ttl":"30d"}}`).json(t, &ad)
	if ad.Retention.TTL != "720h0m0s" {
		t.Errorf("ttl 30d: %+v", ad)
	}
}

// TestVersions_NotKeptSaysWhy: a version number that is not a kept
// version of the dataset is 410 version_not_kept, worded so that it does
// not read as collected: above the current version it was never
// committed; below, the detail names both causes (never a version of this
// dataset, as a version of another one is, or collected by GC).
func TestVersions_NotKeptSaysWhy(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	other := f.run("notes") // a transaction id that is no version of products
	cur := f.run("products")
	for path, want := range map[string]string{
		"/v1/datasets/products/rows/1?version=" + itoa(cur+1000): itoa(cur+1000) + " is not a version of products: never committed (the current version is " + itoa(cur) + ")",
		"/v1/datasets/products/rows/1?version=" + itoa(other):    itoa(other) + " is not a kept version of products (never committed, or collected by GC)",
		"/v1/datasets/products/versions/" + itoa(other):          "not a kept version of products",
	} {
		if p := f.wantProblem(410, "version_not_kept", "", "GET", path, ""); !strings.Contains(p.Detail, want) {
			t.Errorf("%s: detail %q, want %q", path, p.Detail, want)
		}
	}
	if p := f.wantProblem(410, "version_not_kept", "", "POST", "/v1/datasets/products/rollback", `{"version":`+itoa(other)+`}`); !strings.Contains(p.Detail, "never committed, or collected by GC") {
		t.Errorf("rollback: detail %q", p.Detail)
	}
}
