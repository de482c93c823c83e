package server

import "testing"

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
