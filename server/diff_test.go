package server

import (
	"strconv"
	"strings"
	"testing"
)

// TestDiff_FromTag: diff bounds take a tag name as well as a version.
func TestDiff_FromTag(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := f.run("products")
	f.must(200, "PUT", "/v1/datasets/products/tags/first", "")
	f.exec(`UPDATE products SET stock = 7 WHERE id = 1`)
	f.run("products")
	f.exec(`UPDATE products SET stock = 8 WHERE id = 2`)
	v3 := f.run("products")
	r := f.must(200, "GET", "/v1/datasets/products/diff?from=first", "")
	if got := r.header.Get("Snapstore-Diff-From"); got != strconv.FormatInt(v1, 10) {
		t.Fatalf("diff from the tag starts at %s, want %d", got, v1)
	}
	if n := strings.Count(string(r.body), `"op":"update"`); n != 2 {
		t.Fatalf("diff from the tag: %d updates, want 2:\n%s", n, r.body)
	}
	f.must(200, "PUT", "/v1/datasets/products/tags/last", "")
	r = f.must(200, "GET", "/v1/datasets/products/diff?from=first&to=last&stats_only=true", "")
	if versionOf(t, r) != v3 {
		t.Fatalf("to=last read version %d, want %d", versionOf(t, r), v3)
	}
	f.wantProblem(404, "tag_not_found", "to", "GET", "/v1/datasets/products/diff?from=first&to=nope", "")
}
