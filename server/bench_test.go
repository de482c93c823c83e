package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/snapstore/snapstore/snapshot"
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
					h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
					if rec.Code != 200 {
						b.Fatalf("%d %s", rec.Code, rec.Body)
					}
				}
			})
		}
	}
}

// BenchmarkRowsNDJSON measures the NDJSON stream of 1,000-row pages of a
// 20,000-row dataset of ten mixed columns, without the network (rows/s).
func BenchmarkRowsNDJSON(b *testing.B) {
	f := newFixture(b, fixtureOpts{})
	ctx := context.Background()
	schema := snapshot.Schema{Columns: []snapshot.Column{
		{Name: "id", Kind: snapshot.KindInt}, {Name: "code", Kind: snapshot.KindString}, {Name: "name", Kind: snapshot.KindString},
		{Name: "qty", Kind: snapshot.KindInt}, {Name: "price", Kind: snapshot.KindDecimal}, {Name: "ratio", Kind: snapshot.KindFloat},
		{Name: "created", Kind: snapshot.KindDateTime}, {Name: "status", Kind: snapshot.KindString}, {Name: "note", Kind: snapshot.KindString},
		{Name: "flags", Kind: snapshot.KindUint}}, Key: []string{"id"}}
	r, err := f.db.BeginRun(ctx, snapshot.DatasetConfig{Name: "wide"}, snapshot.RunOptions{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	const rows = 20_000
	for i := range rows {
		s := func(f string, a ...any) snapshot.Value {
			return snapshot.Value{Kind: snapshot.KindString, Bytes: fmt.Appendf(nil, f, a...)}
		}
		vals := []snapshot.Value{{Kind: snapshot.KindInt, Int: int64(i)}, s("%012X", i*7919), s("customer-%d-%040x", i, i*104729),
			{Kind: snapshot.KindInt, Int: int64(i * 7919 % 100000)}, {Kind: snapshot.KindDecimal, Bytes: fmt.Appendf(nil, "%d.%02d", i%100000, i%100)},
			{Kind: snapshot.KindFloat, Float: float64(i%1000) / 7}, {Kind: snapshot.KindDateTime, Bytes: []byte("2020-01-02 03:04:05")},
			s("active"), s("note %064x %d", i*31, i%977), {Kind: snapshot.KindUint, Uint: uint64(i % 65536)}}
		if err := r.Put(ctx, vals); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := r.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	h := f.srv.Handler()
	b.ReportAllocs()
	i := 0
	start := time.Now()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1/v1/datasets/wide/rows?limit=1000&start=%d", (i*7919)%(rows-1000)), nil)
		req.Header.Set("Accept", "application/x-ndjson")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
		i++
	}
	b.ReportMetric(float64(1000*b.N)/time.Since(start).Seconds(), "rows/s")
}
