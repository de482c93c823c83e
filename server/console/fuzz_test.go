package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/server"
)

// FuzzPages sends arbitrary methods, paths, queries, Accept headers and
// forms to the console of a real stack holding one dataset (no tokens,
// so every page is open): no input may give a 500, and every error is a
// page for a client asking for HTML and a problem for any other. `go
// test` runs the seeds; `go test -fuzz FuzzPages ./server/console`
// explores.
func FuzzPages(f *testing.F) {
	fx := newFixture(f, fixtureOpts{})
	fx.run("products")
	seeds := []struct{ method, path, query, accept, form string }{
		{"GET", "/ui/", "", "text/html", ""},
		{"GET", "/ui/datasets/products/rows", "version=1&key=x&limit=2", "text/html", ""},
		{"GET", "/ui/datasets/products/rows", "version=abc", "", ""},
		{"GET", "/ui/datasets/products/diff", "from=1&to=1", "text/html", ""},
		{"GET", "/ui/datasets/products/rows/download", "format=parquet&version=9", "", ""},
		{"POST", "/ui/datasets/products/tags", "", "text/html", "tag=%ff&version=1e99"},
		{"GET", "/ui/runs", "status=nope&adapter=%00", "text/html", ""},
		{"GET", "/ui/audit", "since=yesterday", "text/html", ""},
		{"POST", "/ui/adapters", "", "text/html", "name=&connection=shop&resource=products&max_shrink=2"},
		{"GET", "/ui/static/..%2f..%2fconsole.go", "", "", ""},
		{"GET", "/ui/resources", "connection=nope", "text/html", ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, s.accept, s.form)
	}
	h := fx.srv.Handler()
	f.Fuzz(func(t *testing.T, method, path, query, accept, form string) {
		switch method {
		case "GET", "POST", "HEAD":
		default:
			return
		}
		// Deleting, rolling back and collecting would make later inputs
		// meaningless; the page tests cover them.
		if method == "POST" && (strings.Contains(path, "delete") || strings.Contains(path, "rollback") || strings.Contains(path, "/gc/") || strings.Contains(path, "/run")) {
			return
		}
		u, err := url.Parse("http://127.0.0.1" + path + "?" + query)
		if err != nil || !strings.HasPrefix(u.Path, "/ui") {
			return
		}
		req, err := http.NewRequest(method, u.String(), strings.NewReader(form))
		if err != nil {
			return
		}
		req.Header.Set("Accept", accept)
		if method == "POST" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		rec := httptest.NewRecorder()
		func() {
			defer func() {
				if r := recover(); r != nil && r != http.ErrAbortHandler {
					t.Fatalf("%s %s: panic %v", method, u, r)
				}
			}()
			h.ServeHTTP(rec, req)
		}()
		if rec.Code >= 500 {
			t.Fatalf("%s %s form %q: status %d: %s", method, u, form, rec.Code, rec.Body.Bytes())
		}
		html := strings.Contains(accept, "text/html")
		ct := rec.Header().Get("Content-Type")
		if rec.Code >= 400 && method != "HEAD" && !(html && strings.HasPrefix(ct, "text/html")) && ct != server.ProblemContentType {
			t.Fatalf("%s %s: status %d without a page or a problem (%s): %s", method, u, rec.Code, ct, rec.Body.Bytes())
		}
	})
}
