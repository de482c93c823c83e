package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

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
		{"/v1/datasets/products/rows/1?as_of=2000-01-01T00:00:00Z", 404, "no_version", ""},
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

// TestAsOf_ZeroTimeIsATime: as_of=0001-01-01T00:00:00Z is a
// time before the dataset existed, a 404 no_version as for 1900 saying so
// (not a 410, which reads as collected by GC), not the current version.
func TestAsOf_ZeroTimeIsATime(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	for _, path := range []string{
		"/v1/datasets/products/rows/1?as_of=0001-01-01T00:00:00Z",
		"/v1/datasets/products/rows?as_of=0001-01-01T00:00:00Z",
		"/v1/datasets/products?as_of=0001-01-01T00:00:00Z",
	} {
		p := f.wantProblem(404, "no_version", "", "GET", path, "")
		if !strings.Contains(p.Detail, "products did not exist at 0001-01-01T00:00:00Z: it was created at ") || strings.Contains(p.Detail, "snapshot:") {
			t.Errorf("%s: detail %q", path, p.Detail)
		}
	}
	// Errors read without Go package prefixes.
	if p := f.wantProblem(404, "row_not_found", "", "GET", "/v1/datasets/products/rows/999999", ""); strings.HasPrefix(p.Detail, "snapshot:") || !strings.HasPrefix(p.Detail, "row not found: no key (id=999999) in products at version ") {
		t.Errorf("row not found: detail %q", p.Detail)
	}
	if p := f.wantProblem(404, "adapter_not_found", "", "GET", "/v1/adapters/nope", ""); strings.Contains(p.Detail, "adapters:") {
		t.Errorf("adapter not found: detail %q", p.Detail)
	}
	f.wantProblem(404, "dataset_not_found", "", "GET", "/v1/datasets/nope/rows/1?as_of=0001-01-01T00:00:00Z", "")
}

// TestVersions_OnlyCanonicalNumbers: a version number in a query, a path
// or a diff bound is canonical decimal; "+1", "01", "0001" and the like are
// a 400 naming the parameter, not version 1, on each route that takes one
// (a table-qualified one too), and the detail says the form. "1e0", "0x1"
// and "1.0" are tag names as a diff's bound.
func TestVersions_OnlyCanonicalNumbers(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := f.run("products")
	s := strconv.FormatInt(v1, 10)
	if r := f.do("GET", "/v1/datasets/products/versions/"+s, ""); r.status != 200 {
		t.Fatalf("version %s: %d %s", s, r.status, r.body)
	}
	for _, v := range []string{"+" + s, "%2B" + s, "0" + s, "000" + s, s + "e0", "0x" + s, "%20" + s, s + ".0"} {
		for _, c := range []struct{ path, field string }{
			{"/v1/datasets/products/rows/1?version=" + v, "version"},
			{"/v1/datasets/products/rows?version=" + v, "version"},
			{"/v1/datasets/products?version=" + v, "version"},
			{"/v1/datasets/products/tables/products/rows/1?version=" + v, "version"},
			{"/v1/datasets/products/versions/" + v, "version"},
			{"/v1/datasets/products/diff?from=" + v + "&to=" + s, "from"},
			{"/v1/datasets/products/diff?to=" + v, "to"},
		} {
			if strings.HasPrefix(c.path, "/v1/datasets/products/diff") && strings.ContainsAny(v, "ex.") {
				continue // a tag name such as "1e0" or "1.0": tag_not_found
			}
			r := f.do("GET", c.path, "")
			if r.status != 400 {
				t.Errorf("%s: status %d, want 400: %s", c.path, r.status, r.body)
				continue
			}
			if p := r.problem(t); p.Code != "bad_request" || p.Field != c.field {
				t.Errorf("%s: code %s field %q, want bad_request %q (%s)", c.path, p.Code, p.Field, c.field, p.Detail)
			}
		}
	}
	p := f.wantProblem(400, "bad_request", "version", "GET", "/v1/datasets/products/versions/%2B"+s, "")
	if want := `version: want a version number, decimal digits from 1 without a sign or a leading zero, got "+` + s + `"`; p.Detail != want {
		t.Errorf("detail %q, want %q", p.Detail, want)
	}
}
