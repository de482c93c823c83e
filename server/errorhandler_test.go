package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestOddInputs_NeverA500 sends inputs no handler expects; none may give a
// 500, and every error is a problem.
func TestOddInputs_NeverA500(t *testing.T) {
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

// TestClientGone_NotAServerError checks that a request whose client went
// away is logged at debug with status 499 (nginx's), counted as 499 rather
// than a 5xx, and answered with nothing, shutting down or not; a
// cancellation of the server's own work (the request still open) stays a
// 503 problem: canceled, or shutting_down once shutdown began.
func TestClientGone_NotAServerError(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.srv.echo.GET("/test-canceled", func(c echo.Context) error {
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
		f.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/test-canceled", nil).WithContext(ctx))
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
