package server

import (
	"strings"
	"testing"
)

// TestNegotiation_QZero: the scan answers the accepted type of the highest
// q, the first among equals; q=0 does not select a type.
func TestNegotiation_QZero(t *testing.T) {
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
}
