package server

import "testing"

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
