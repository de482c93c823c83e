package snapstore_test

import (
	"database/sql"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/server"
)

// TestDerivedCopy copies some columns and a key range of an edge dataset
// (source_options) through the snapstore connection over a real server on
// each side: the copy holds the edge version's rows in the range with the
// columns asked for, its checksum is its own, and after changes inside and
// outside the range the diff path gives what a full copy of the same
// version gives (rows and checksum). A changed derivation reads in full;
// bad source_options are refused when the adapter is saved.
func TestDerivedCopy(t *testing.T) {
	srcPath := filepath.Join(t.TempDir(), "edge.db")
	src, err := sql.Open("sqlite", srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Exec(edgeSQL); err != nil {
		t.Fatal(err)
	}
	edge := newStack(t, server.Token{Name: "admin", Token: "edge-admin-token", Role: server.RoleAdmin})
	central := newStack(t)
	edge.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "plant", "type": "sqlite", "options": map[string]any{"path": srcPath}}, nil)
	edge.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "items", "connection": "plant", "resource": "items", "retention": map[string]any{"min_versions": 20}}, nil)
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "edge", "type": "snapstore",
		"options": map[string]any{"url": edge.url, "token": "edge-admin-token", "chunk_rows": 2}}, nil)
	if e := edge.run("items"); e.Status != "succeeded" {
		t.Fatalf("edge run: %+v", e)
	}

	// Refusals, each naming its option.
	for _, c := range []struct {
		opts map[string]any
		conn string
		want string
	}{
		{map[string]any{"columns": []string{"k1", "t"}}, "edge", `the key column \"k2\" of dataset \"items\" is not among the columns`},
		{map[string]any{"columns": []string{"k1", "k2", "nope"}}, "edge", `column \"nope\" is not a column of dataset \"items\"`},
		{map[string]any{"start": []string{"x"}}, "edge", `source_options.start`},
		{map[string]any{"colums": []string{"k1"}}, "edge", `unknown option`},
		{map[string]any{"columns": map[string]any{"a": 1}}, "edge", `want a list of strings`},
		{map[string]any{"columns": []string{}}, "edge", `an empty list`},
	} {
		code, body := central.call("POST", "/v1/adapters", map[string]any{"name": "bad", "connection": c.conn, "resource": "items", "source_options": c.opts})
		if code != http.StatusBadRequest || !strings.Contains(string(body), c.want) || !strings.Contains(string(body), "source_options") {
			t.Errorf("source_options %v: %d %s, want 400 with %q", c.opts, code, body, c.want)
		}
	}
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "local", "type": "sqlite", "options": map[string]any{"path": srcPath}}, nil)
	if code, body := central.call("POST", "/v1/adapters", map[string]any{"name": "bad", "connection": "local", "resource": "items",
		"source_options": map[string]any{"columns": []string{"k1"}}}); code != http.StatusBadRequest || !strings.Contains(string(body), `takes no source_options`) {
		t.Errorf("source_options of a sqlite connection: %d %s", code, body)
	}

	opts := map[string]any{"columns": []string{"k1", "k2", "d", "t"}, "start": []string{"1"}, "end": []string{"3"}}
	adapter := func(name string, opts map[string]any) map[string]any {
		return map[string]any{"name": name, "connection": "edge", "resource": "items", "dataset": name,
			"source_options": opts, "retention": map[string]any{"min_versions": 20}, "guard": map[string]any{"max_shrink": 1}}
	}
	central.must(http.StatusCreated, "POST", "/v1/adapters", adapter("part", opts), nil)
	var shown struct {
		SourceOptions map[string]any `json:"source_options"`
	}
	central.must(http.StatusOK, "GET", "/v1/adapters/part", nil, &shown)
	if len(shown.SourceOptions) != 3 {
		t.Errorf("the adapter shows source_options %v", shown.SourceOptions)
	}
	// check wants the copy's version v equal to the edge version it names
	// read with the derivation, with a checksum of its own.
	derivedScan := "&columns=k1,k2,d,t&start=1&end=3"
	check := func(step string, v int64, wantMode, gotMode string) string {
		t.Helper()
		cv := central.version("part", v)
		res := cv.Source.Resource
		i := strings.IndexByte(res, ' ')
		if i < 0 || !strings.HasPrefix(res, "items@") || res[i:] != ` columns=["k1","k2","d","t"] start=["1"] end=["3"]` {
			t.Fatalf("%s: version %d records resource %q", step, v, res)
		}
		ev := res[len("items@"):i]
		code, want := edge.call("GET", "/v1/datasets/items/rows?version="+ev+derivedScan, nil)
		if code != http.StatusOK {
			t.Fatalf("%s: scan of the edge: %d %s", step, code, want)
		}
		if got := central.rows("part", v); got != string(want) {
			t.Errorf("%s: rows of the copy:\n%s\nwant\n%s", step, got, want)
		}
		if strings.Count(string(want), "\n") != int(cv.Stats.Rows) || len(cv.Schema.Columns) != 4 {
			t.Errorf("%s: %d rows, %d columns; the edge's derived scan has %d rows", step, cv.Stats.Rows, len(cv.Schema.Columns), strings.Count(string(want), "\n"))
		}
		if sv := edge.version("items", int64(mustAtoi(t, ev))); sv.Stats.Checksum == cv.Stats.Checksum {
			t.Errorf("%s: the derived copy has the source version's checksum %s", step, cv.Stats.Checksum)
		}
		if wantMode != gotMode {
			t.Errorf("%s: mode %q, want %q", step, gotMode, wantMode)
		}
		return cv.Stats.Checksum
	}
	c := central.run("part")
	if c.Status != "succeeded" {
		t.Fatalf("derived copy: %+v", c)
	}
	check("first derived copy", c.Version, "full", c.Mode)
	if c := central.run("part"); c.Status != "succeeded" || c.Mode != "diff" || central.current("part") != c.Version {
		t.Errorf("derived copy of an unchanged source: %+v", c)
	}

	for i, stmts := range []string{
		// in the range: an update of a kept column, of a column left out,
		// a delete; out of it: an insert, an update
		`UPDATE items SET t = 'changed' WHERE k1 = 1 AND k2 = 'a b'; UPDATE items SET r = 42 WHERE k1 = 1 AND k2 = 'a/b';
		 DELETE FROM items WHERE k1 = 2; INSERT INTO items VALUES (3, 'out', 1, 1, 'o', x'', '{}', NULL); UPDATE items SET t = 'out' WHERE k1 = -5`,
		`INSERT INTO items VALUES (2, 'back', NULL, 2.50, 'in', NULL, NULL, NULL), (1, 'c', 1, 1, NULL, NULL, NULL, NULL); DELETE FROM items WHERE k1 = 3`,
	} {
		if _, err := src.Exec(stmts); err != nil {
			t.Fatal(err)
		}
		if e := edge.run("items"); e.Status != "succeeded" {
			t.Fatalf("edge run %d: %+v", i, e)
		}
		c := central.run("part")
		if c.Status != "succeeded" {
			t.Fatalf("derived copy run %d: %+v", i, c)
		}
		sum := check("derived copy after change "+itoa(int64(i)), c.Version, "diff", c.Mode)
		// A full copy of the same version with the same derivation: the
		// same checksum as the diff path's.
		name := "full" + itoa(int64(i))
		central.must(http.StatusCreated, "POST", "/v1/adapters", adapter(name, opts), nil)
		f := central.run(name)
		if f.Status != "succeeded" || f.Mode != "full" {
			t.Fatalf("full derived copy %d: %+v", i, f)
		}
		if fv := central.version(name, f.Version); fv.Stats.Checksum != sum || fv.Stats.Rows != central.version("part", c.Version).Stats.Rows {
			t.Errorf("change %d: the full copy has checksum %s, the diff path %s", i, fv.Stats.Checksum, sum)
		}
	}

	// Another key range: the run reads in full.
	opts["end"] = []string{"2"}
	central.must(http.StatusOK, "PUT", "/v1/adapters/part", adapter("part", opts), nil)
	c = central.run("part")
	if c.Status != "succeeded" || c.Mode != "full" {
		t.Errorf("derived copy with another range: %+v", c)
	}
	if got := central.rows("part", c.Version); strings.Contains(got, `"k1":2`) || !strings.Contains(got, `"k1":1`) {
		t.Errorf("rows with end [2]:\n%s", got)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			t.Fatalf("not a version: %q", s)
		}
		n = n*10 + int(r-'0')
	}
	return n
}
