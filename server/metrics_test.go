package server

import (
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestMetrics_ExposedAndDocumented checks the exposition after a run and a
// GC, and that docs/operations.md lists every metric family the process
// exposes.
func TestMetrics_ExposedAndDocumented(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	f.must(200, "POST", "/v1/datasets/products/gc", "")
	f.must(200, "GET", "/v1/datasets/products/rows/1", "")
	body := string(f.must(200, "GET", "/metrics", "").body)
	for _, want := range []string{
		`snapstore_server_http_request_duration_seconds_count{method="GET",route="/v1/datasets/:dataset/rows/*",status="200"} 1`,
		`snapstore_server_dataset_current_version_age_seconds{dataset="products"}`,
		`snapstore_server_dataset_checked_age_seconds{dataset="products"}`,
		`snapstore_server_dataset_kept_versions{dataset="products"} 1`,
		`snapstore_server_gc_bytes_reclaimed_total{dataset="products"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	sort.Strings(names)
	doc, err := readDoc("operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("metric %s is not documented in docs/operations.md", n)
		}
	}
}

// TestMetrics_MethodLabelBounded: invented methods are one "other" series,
// not one series each.
func TestMetrics_MethodLabelBounded(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for i, path := range []string{"/v1/datasets", "/nope", "/v1/datasets", "/nope"} {
		f.do("M"+strconv.Itoa(1000+i), path, "")
	}
	f.do("GET", "/nope", "")
	body := string(f.must(200, "GET", "/metrics", "").body)
	if strings.Contains(body, `method="M10`) {
		t.Fatal("an invented method became a label value")
	}
	for _, want := range []string{`method="other",route="unmatched",status="405"} 2`, `method="other",route="unmatched",status="404"} 2`, `method="GET",route="unmatched",status="404"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
