package server

import (
	"encoding/json"
	"fmt"
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

// TestDiff_ChangedColumns: an update line names the columns that changed,
// and only update lines carry "changed".
func TestDiff_ChangedColumns(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	f.exec(`UPDATE products SET stock = 7, price = 5.10 WHERE id = 1`)
	f.exec(`UPDATE products SET name = 'mug' WHERE id = 2`)
	f.exec(`DELETE FROM products WHERE id = 3`)
	f.exec(`INSERT INTO products VALUES (9, 'tray', 12, 3)`)
	f.run("products")
	r := f.must(200, "GET", "/v1/datasets/products/diff", "")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(r.body)), "\n") {
		var ch struct {
			Op      string   `json:"op"`
			Key     []int    `json:"key"`
			Changed []string `json:"changed"`
		}
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			t.Fatalf("diff line %s: %v", line, err)
		}
		got = append(got, fmt.Sprintf("%s %v %v", ch.Op, ch.Key, ch.Changed))
		if ch.Op != "update" && strings.Contains(line, `"changed"`) {
			t.Errorf("a %s line names changed columns: %s", ch.Op, line)
		}
	}
	want := []string{"update [1] [price stock]", "update [2] [name]", "delete [3] []", "insert [9] []"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("diff:\n%s\nwant %q", r.body, want)
	}
}
