package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
)

// TestFirstVersionChangeDiffTimeTravel walks the path of the README: a
// first version, a change at the source, the second version, the diff, the
// old version still readable.
func TestFirstVersionChangeDiffTimeTravel(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := f.run("products")

	var got rowResult
	r := f.must(200, "GET", "/v1/datasets/products/rows/2", "")
	r.json(t, &got)
	if got.Version != v1 || versionOf(t, r) != v1 || got.Row["name"] != "jug" || got.Row["price"] != "8.9" || got.Key[0] != 2.0 {
		t.Fatalf("v1 row 2: %s (header %s)", r.body, r.header.Get(versionHeader))
	}
	f.must(404, "GET", "/v1/datasets/products/rows/9", "").problem(t)

	f.exec(`UPDATE products SET price = 7.49 WHERE id = 2; DELETE FROM products WHERE id = 5;
		INSERT INTO products VALUES (9, 'teapot', 24, 3);`)
	v2 := f.run("products")
	if v2 <= v1 {
		t.Fatalf("v2 %d <= v1 %d", v2, v1)
	}
	f.must(200, "GET", "/v1/datasets/products/rows/2", "").json(t, &got)
	if got.Version != v2 || got.Row["price"] != "7.49" {
		t.Fatalf("v2 row 2: %+v", got)
	}
	// The old version stays readable, by version, tag and as_of.
	r = f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/rows/2?version=%d", v1), "")
	r.json(t, &got)
	if got.Version != v1 || versionOf(t, r) != v1 || got.Row["price"] != "8.9" {
		t.Fatalf("row 2 at v1: %s", r.body)
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/rows/5?version=%d", v1), "")
	p := f.must(404, "GET", "/v1/datasets/products/rows/5", "").problem(t)
	if p.Code != "row_not_found" {
		t.Fatalf("deleted row: %+v", p)
	}
	var vinfo struct {
		CommittedAt string `json:"committed_at"`
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/versions/%d", v1), "").json(t, &vinfo)
	f.must(200, "GET", "/v1/datasets/products/rows/2?as_of="+url.QueryEscape(vinfo.CommittedAt), "").json(t, &got)
	if got.Version != v1 {
		t.Fatalf("as_of the first commit read version %d, want %d", got.Version, v1)
	}

	// The diff of the last run, by default from the previous kept version.
	r = f.must(200, "GET", "/v1/datasets/products/diff", "")
	if ct := r.header.Get("Content-Type"); ct != mediaNDJSON {
		t.Fatalf("diff content type %q", ct)
	}
	ops := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		var ch struct {
			Op     string         `json:"op"`
			Key    []any          `json:"key"`
			Before map[string]any `json:"before"`
			After  map[string]any `json:"after"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ch); err != nil {
			t.Fatalf("diff line %q: %v", sc.Text(), err)
		}
		ops[fmt.Sprint(ch.Key[0])] = ch.Op
		if ch.Op == "update" && (ch.Before["price"] != "8.9" || ch.After["price"] != "7.49") {
			t.Fatalf("update line: %s", sc.Text())
		}
	}
	if fmt.Sprint(ops) != "map[2:update 5:delete 9:insert]" {
		t.Fatalf("diff ops %v from\n%s", ops, r.body)
	}
	var st struct{ From, To, Inserted, Updated, Deleted int64 }
	f.must(200, "GET", "/v1/datasets/products/diff?stats_only=true", "").json(t, &st)
	if st.From != v1 || st.To != v2 || st.Inserted != 1 || st.Updated != 1 || st.Deleted != 1 {
		t.Fatalf("diff stats %+v", st)
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/diff?from=%d&to=%d&stats_only=true", v1, v1), "").json(t, &st)
	if st.Inserted+st.Updated+st.Deleted != 0 {
		t.Fatalf("diff of a version with itself: %+v", st)
	}

	var vs struct {
		Versions []struct {
			Version int64 `json:"version"`
			Current bool  `json:"current"`
		} `json:"versions"`
	}
	f.must(200, "GET", "/v1/datasets/products/versions", "").json(t, &vs)
	if len(vs.Versions) != 2 || vs.Versions[0].Version != v2 || !vs.Versions[0].Current || vs.Versions[1].Version != v1 {
		t.Fatalf("versions %+v", vs)
	}
	var ds struct {
		Name      string `json:"name"`
		Current   int64  `json:"current_version"`
		Retention struct {
			TTL         string `json:"ttl"`
			MinVersions int    `json:"min_versions"`
		} `json:"retention"`
	}
	r = f.must(200, "GET", "/v1/datasets/products", "")
	r.json(t, &ds)
	if ds.Current != v2 || ds.Retention.TTL != "0s" || ds.Retention.MinVersions != 10 || versionOf(t, r) != v2 {
		t.Fatalf("dataset %s", r.body)
	}
	var atV1 struct {
		Current     int64 `json:"current_version"`
		VersionRead struct {
			Version int64 `json:"version"`
			Schema  struct {
				Key []string `json:"key"`
			} `json:"schema"`
		} `json:"version_read"`
	}
	r = f.must(200, "GET", fmt.Sprintf("/v1/datasets/products?version=%d", v1), "")
	r.json(t, &atV1)
	if atV1.Current != v2 || atV1.VersionRead.Version != v1 || versionOf(t, r) != v1 || len(atV1.VersionRead.Schema.Key) != 1 {
		t.Fatalf("dataset at v1: %s", r.body)
	}
	f.must(410, "GET", "/v1/datasets/products?version=999999", "").problem(t)
	var list struct {
		Datasets []struct {
			Name string `json:"name"`
		} `json:"datasets"`
	}
	f.must(200, "GET", "/v1/datasets", "").json(t, &list)
	if len(list.Datasets) != 1 || list.Datasets[0].Name != "products" {
		t.Fatalf("datasets %+v", list)
	}
}
