package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkHandler measures the handler without the network: one row read
// and one JSON page of 8 rows, with request validation against the OpenAPI
// document (validate=on, as served) and without it (validate=off, the
// baseline), so the validation's share is visible.
func BenchmarkHandler(b *testing.B) {
	f := newFixture(b, fixtureOpts{})
	f.run("products")
	for _, path := range []string{"/v1/datasets/products/rows/2", "/v1/datasets/products/rows?limit=8"} {
		for _, validate := range []bool{true, false} {
			name := "path=" + map[bool]string{true: "row", false: "page"}[path == "/v1/datasets/products/rows/2"] + "/validate=" + map[bool]string{true: "on", false: "off"}[validate]
			b.Run(name, func(b *testing.B) {
				f.srv.skipValidation = !validate
				defer func() { f.srv.skipValidation = false }()
				h := f.srv.Handler()
				b.ReportAllocs()
				for b.Loop() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
					if rec.Code != 200 {
						b.Fatalf("%d %s", rec.Code, rec.Body)
					}
				}
			})
		}
	}
}
