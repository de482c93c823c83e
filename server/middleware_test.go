package server

import (
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestPanicBecomesProblem checks the recover middleware.
func TestPanicBecomesProblem(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.srv.echo.GET("/test-panic", func(c echo.Context) error { panic("boom") })
	p := f.must(500, "GET", "/test-panic", "").problem(t)
	if p.Code != "internal" || strings.Contains(p.Detail, "boom") {
		t.Fatalf("problem %+v", p)
	}
	if !strings.Contains(f.logs.String(), "handler panicked") || !strings.Contains(f.logs.String(), "boom") {
		t.Fatal("the panic is not logged")
	}
	f.must(200, "GET", "/healthz", "") // still serving
}
