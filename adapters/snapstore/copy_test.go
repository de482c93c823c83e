package snapstore_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	_ "github.com/snapstore/snapstore/adapters/snapstore" // the connection type under test
	_ "github.com/snapstore/snapstore/adapters/sqlite"    // the edge's source
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store/pebble"
)

// stack is a real snapstore: Pebble on disk, snapshot, adapters, the
// server behind an httptest server.
type stack struct {
	t       *testing.T
	handler http.Handler
	url     string
	token   string
	ts      *httptest.Server
}

func newStack(t *testing.T, tokens ...server.Token) *stack {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := pebble.Open(filepath.Join(dir, "data"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := snapshot.Open(ctx, st, snapshot.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	// A key generated in the data directory, as serve does on Pebble: the
	// tests give the connections' tokens as literals. The API's SQLite
	// connections name any file, as on a server without tokens.
	svc, err := adapters.New(ctx, db, adapters.Options{Logger: log,
		SecretKeys:  adapters.SecretKeys{GenerateDir: filepath.Join(dir, "data")},
		FileOptions: adapters.FileOptionLimits{AnyFile: true}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{DB: db, Adapters: svc, Tokens: tokens, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, handler: srv.Handler()}
	s.ts = httptest.NewServer(s.handler)
	s.url = s.ts.URL
	for _, tok := range tokens {
		if tok.Role == server.RoleAdmin {
			s.token = tok.Token
		}
	}
	t.Cleanup(func() {
		s.ts.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		svc.Close(cctx)
		db.Close()
		st.Close()
	})
	return s
}

// call sends a request and returns the status and the body.
func (s *stack) call(method, path string, body any) (int, []byte) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	req.Header.Set("Accept", "application/x-ndjson, application/json;q=0.5")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (s *stack) must(want int, method, path string, body, out any) {
	s.t.Helper()
	code, b := s.call(method, path, body)
	if code != want {
		s.t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

type runRec struct {
	Status  string `json:"status"`
	Code    string `json:"code"`
	Error   string `json:"error"`
	Version int64  `json:"version"`
	Mode    string `json:"mode"`
	Point   *struct {
		Position string `json:"position"`
	} `json:"point"`
	Tables []struct {
		Name     string `json:"name"`
		Mode     string `json:"mode"`
		RowsRead int64  `json:"rows_read"`
	} `json:"tables"`
}

func (s *stack) run(adapter string, query ...string) runRec {
	s.t.Helper()
	var r runRec
	s.must(http.StatusOK, "POST", "/v1/adapters/"+adapter+"/runs?wait=true"+strings.Join(query, ""), nil, &r)
	return r
}

func (s *stack) version(dataset string, v int64) snapshot.VersionInfo {
	s.t.Helper()
	var vi snapshot.VersionInfo
	s.must(http.StatusOK, "GET", "/v1/datasets/"+dataset+"/versions/"+itoa(v), nil, &vi)
	return vi
}

func (s *stack) current(dataset string) int64 {
	s.t.Helper()
	var d struct {
		Current int64 `json:"current_version"`
	}
	s.must(http.StatusOK, "GET", "/v1/datasets/"+dataset, nil, &d)
	return d.Current
}

// rows is the NDJSON scan of a version: one line per row.
func (s *stack) rows(dataset string, v int64) string {
	s.t.Helper()
	code, b := s.call("GET", "/v1/datasets/"+dataset+"/rows?version="+itoa(v), nil)
	if code != http.StatusOK {
		s.t.Fatalf("scan %s@%d: %d %s", dataset, v, code, b)
	}
	return string(b)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// testWriter sends the stacks' warnings to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

const edgeSQL = `
CREATE TABLE items (k1 INTEGER NOT NULL, k2 TEXT NOT NULL, r REAL, d DECIMAL(10,2), t TEXT, b BLOB, j JSON, at DATETIME, PRIMARY KEY (k1, k2));
INSERT INTO items VALUES
 (1, 'a b', 0.1, 12.50, 'plain', x'00ff', '{"a": 1.10}', '2026-12-05 21:00:00'),
 (1, 'a/b', -0.0, NULL, 'x "quoted" <tag> & é', x'', 'null', '2026-01-01 00:00:00.5'),
 (2, '', 1e300, -3, NULL, NULL, NULL, NULL),
 (9007199254740993, '100%', 5e-324, 0, '', x'0102', '[1,2]', '2000-02-29 12:00:00'),
 (-5, 'z', NULL, 7.25, 'tab	nl
x', x'ff', '"s"', NULL);
`

// TestCopyOfADataset copies an edge dataset into a central one through
// the snapstore connection over a real server on each side, with pages
// of two rows, and wants each copied version equal to the source version
// it names: the same rows, stats and checksum; then the failures.
func TestCopyOfADataset(t *testing.T) {
	srcPath := filepath.Join(t.TempDir(), "edge.db")
	src, err := sql.Open("sqlite", srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Exec(edgeSQL); err != nil {
		t.Fatal(err)
	}
	edge := newStack(t, server.Token{Name: "admin", Token: "edge-admin-token", Role: server.RoleAdmin},
		server.Token{Name: "central", Token: "edge-reader-token", Role: server.RoleReader},
		server.Token{Name: "others", Token: "edge-others-token", Role: server.RoleReader, Datasets: []string{"other_*"}})
	central := newStack(t)
	edge.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "plant", "type": "sqlite", "options": map[string]any{"path": srcPath}}, nil)
	edge.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "items", "connection": "plant", "resource": "items", "retention": map[string]any{"min_versions": 20}}, nil)
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "edge", "type": "snapstore",
		"options": map[string]any{"url": edge.url, "token": "edge-reader-token", "chunk_rows": 2}}, nil)

	var test struct {
		OK            bool   `json:"ok"`
		Cause         string `json:"cause"`
		ServerVersion string `json:"server_version"`
	}
	central.must(http.StatusOK, "POST", "/v1/connections/edge/test", nil, &test)
	if !test.OK || !strings.HasPrefix(test.ServerVersion, "snapstore") {
		t.Fatalf("test of the edge connection: %+v", test)
	}
	var res struct {
		Resources []struct {
			Name          string   `json:"name"`
			Type          string   `json:"type"`
			EstimatedRows *int64   `json:"estimated_rows"`
			Key           []string `json:"key"`
		} `json:"resources"`
	}
	central.must(http.StatusOK, "GET", "/v1/connections/edge/resources", nil, &res)
	if len(res.Resources) != 0 {
		t.Errorf("resources of an edge without datasets: %+v", res)
	}
	// An adapter of a dataset that does not exist yet is refused.
	central.must(http.StatusNotFound, "POST", "/v1/adapters", map[string]any{"name": "copy", "connection": "edge", "resource": "items"}, nil)

	check := func(step string, centralV int64) {
		t.Helper()
		cv := central.version("items_copy", centralV)
		var name string
		var ev int64
		if i := strings.LastIndexByte(cv.Source.Resource, '@'); i > 0 {
			name = cv.Source.Resource[:i]
			_ = json.Unmarshal([]byte(cv.Source.Resource[i+1:]), &ev)
		}
		if name != "items" || ev == 0 {
			t.Fatalf("%s: central version %d records resource %q, want items@N", step, centralV, cv.Source.Resource)
		}
		sv := edge.version("items", ev)
		if cv.Stats.Checksum != sv.Stats.Checksum || cv.Stats.Rows != sv.Stats.Rows {
			t.Errorf("%s: central version %d has rows %d checksum %s, edge version %d rows %d checksum %s",
				step, centralV, cv.Stats.Rows, cv.Stats.Checksum, ev, sv.Stats.Rows, sv.Stats.Checksum)
		}
		if got, want := central.rows("items_copy", centralV), edge.rows("items", ev); got != want {
			t.Errorf("%s: rows of central version %d differ from edge version %d:\n%s\nwant\n%s", step, centralV, ev, got, want)
		}
		if !equalSchemas(cv.Schema, sv.Schema) {
			t.Errorf("%s: schema %+v, want %+v", step, cv.Schema, sv.Schema)
		}
	}

	e1 := edge.run("items")
	if e1.Status != "succeeded" {
		t.Fatalf("edge run: %+v", e1)
	}
	central.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "copy", "connection": "edge", "resource": "items", "dataset": "items_copy", "retention": map[string]any{"min_versions": 20}}, nil)
	c1 := central.run("copy")
	if c1.Status != "succeeded" {
		t.Fatalf("copy run: %+v", c1)
	}
	central.must(http.StatusOK, "GET", "/v1/connections/edge/resources", nil, &res)
	if len(res.Resources) != 1 || res.Resources[0].Name != "items" || res.Resources[0].Type != "dataset" ||
		res.Resources[0].EstimatedRows == nil || *res.Resources[0].EstimatedRows != 5 || strings.Join(res.Resources[0].Key, ",") != "k1,k2" {
		t.Errorf("resources of the edge: %+v", res)
	}
	// A token that may not read fails the test with cause auth.
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "edge-anon", "type": "snapstore", "options": map[string]any{"url": edge.url}}, nil)
	central.must(http.StatusOK, "POST", "/v1/connections/edge-anon/test", nil, &test)
	if test.OK || test.Cause != "auth" {
		t.Errorf("test without a token: %+v", test)
	}
	check("first copy", c1.Version)
	if c1.Mode != "full" {
		t.Errorf("first copy: mode %q, want full", c1.Mode)
	}

	// An unchanged source: the copy run verifies, no new version.
	if c := central.run("copy"); c.Status != "succeeded" || c.Mode != "diff" || central.current("items_copy") != c1.Version {
		t.Errorf("copy of an unchanged source: %+v, current %d, want %d", c, central.current("items_copy"), c1.Version)
	}
	edge.must(http.StatusOK, "PUT", "/v1/datasets/items/tags/first", nil, nil)

	for i, stmts := range []string{
		`INSERT INTO items VALUES (3, 'new', 2.5, 1.00, 'n', x'aa', '{}', '2026-12-06 00:00:00'); UPDATE items SET t = 'changed' WHERE k1 = 1`,
		`DELETE FROM items WHERE k2 = ''; UPDATE items SET r = NULL, j = '{"b":[]}' WHERE k1 = -5`,
		`INSERT INTO items SELECT k1 + 1000, k2, r, d, t, b, j, at FROM items; DELETE FROM items WHERE k1 = 3`,
	} {
		if _, err := src.Exec(stmts); err != nil {
			t.Fatal(err)
		}
		if e := edge.run("items"); e.Status != "succeeded" {
			t.Fatalf("edge run %d: %+v", i, e)
		}
		c := central.run("copy")
		if c.Status != "succeeded" {
			t.Fatalf("copy run %d: %+v", i, c)
		}
		check("copy after change "+itoa(int64(i)), c.Version)
		if c.Mode != "diff" {
			t.Errorf("copy after change %d: mode %q, want diff", i, c.Mode)
		}
	}

	// A tag's version: the copy goes back to the tagged one.
	central.must(http.StatusOK, "PUT", "/v1/adapters/copy", map[string]any{"name": "copy", "connection": "edge", "resource": "items@first", "dataset": "items_copy", "retention": map[string]any{"min_versions": 20}}, nil)
	ct := central.run("copy", "&force=true") // back to 5 rows of 9: past the shrink guard
	if ct.Status != "succeeded" {
		t.Fatalf("copy of a tag: %+v", ct)
	}
	check("copy of the tag", ct.Version)
	if ct.Mode != "full" {
		t.Errorf("copy of an older version: mode %q, want full", ct.Mode)
	}
	if got := central.version("items_copy", ct.Version).Source.Resource; got != "items@"+itoa(e1.Version) {
		t.Errorf("copy of the tag records %q, want items@%d", got, e1.Version)
	}

	// Another dataset of the same server is a copy like any other; the
	// adapter's own dataset is refused when the adapter is saved.
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "self", "type": "snapstore", "options": map[string]any{"url": central.url}}, nil)
	central.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "copy2", "connection": "self", "resource": "items_copy", "dataset": "items_copy2"}, nil)
	if c := central.run("copy2"); c.Status != "succeeded" {
		t.Errorf("copy of a dataset of the same server: %+v", c)
	}
	code, body := central.call("PUT", "/v1/adapters/copy2", map[string]any{"name": "copy2", "connection": "self", "resource": "items_copy2", "dataset": "items_copy2"})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "cannot be its own source") || !strings.Contains(string(body), `"field":"resource"`) {
		t.Errorf("adapter of its own dataset: %d %s", code, body)
	}

	// An adapter of a dataset outside the token's grant is refused as
	// one of a dataset that does not exist, and the error says that the
	// token may be why.
	{
		central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "edge-others", "type": "snapstore",
			"options": map[string]any{"url": edge.url, "token": "edge-others-token"}}, nil)
		code, body := central.call("POST", "/v1/adapters", map[string]any{"name": "copy-others", "connection": "edge-others", "resource": "items"})
		if code != http.StatusNotFound || !strings.Contains(string(body), `resource \"items\" through data connection \"edge-others\": resource does not exist: the server has no dataset of that name that the connection's token may read`) {
			t.Errorf("adapter of a dataset outside the token's grant: %d %s", code, body)
		}
	}

	// Failures leave the copy's current version as it was.
	cur := central.current("items_copy")
	fail := func(step, wantCode string) {
		t.Helper()
		c := central.run("copy")
		if c.Status != "failed" || c.Code != wantCode {
			t.Errorf("%s: run %+v, want failed with %s", step, c, wantCode)
		}
		if strings.Contains(c.Error, "edge-reader-token") {
			t.Errorf("%s: the error holds the token: %s", step, c.Error)
		}
		if got := central.current("items_copy"); got != cur {
			t.Errorf("%s: current version %d, want %d", step, got, cur)
		}
	}
	central.must(http.StatusOK, "PUT", "/v1/connections/edge", map[string]any{"name": "edge", "type": "snapstore",
		"options": map[string]any{"url": edge.url, "token": "expired-token", "chunk_rows": 2}}, nil)
	fail("a token the edge does not know", "source_auth")
	central.must(http.StatusOK, "PUT", "/v1/connections/edge", map[string]any{"name": "edge", "type": "snapstore",
		"options": map[string]any{"url": edge.url, "token": "edge-reader-token", "chunk_rows": 2}}, nil)
	edge.must(http.StatusNoContent, "DELETE", "/v1/datasets/items/tags/first", nil, nil)
	fail("a tag that is gone", "resource_not_found")
	central.must(http.StatusOK, "PUT", "/v1/adapters/copy", map[string]any{"name": "copy", "connection": "edge", "resource": "items", "dataset": "items_copy", "retention": map[string]any{"min_versions": 20}}, nil)
	edge.ts.Close()
	fail("the edge down", "source_unavailable")
}

func equalSchemas(a, b snapshot.Schema) bool {
	return string(mustJSON(a)) == string(mustJSON(b))
}

// TestCopyFailsMidRead changes the source server between two pages of a
// copy run (through a proxy in front of it): the version read collected
// by GC, then the dataset dropped. Each run fails with its code, the copy
// keeps its current version, and the next run recovers.
func TestCopyFailsMidRead(t *testing.T) {
	srcPath := filepath.Join(t.TempDir(), "edge.db")
	src, err := sql.Open("sqlite", srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Exec(edgeSQL); err != nil {
		t.Fatal(err)
	}
	edge := newStack(t)
	var pages atomic.Int64
	var between atomic.Pointer[func()]
	var emptyDiff atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/diff") && emptyDiff.Load() {
			// The diff's headers, none of its changes.
			rec := httptest.NewRecorder()
			edge.handler.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/rows") && pages.Add(1) == 2 || strings.HasSuffix(r.URL.Path, "/diff") {
			if f := between.Swap(nil); f != nil {
				(*f)()
			}
		}
		edge.handler.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	central := newStack(t)
	edge.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "plant", "type": "sqlite", "options": map[string]any{"path": srcPath}}, nil)
	edge.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "items", "connection": "plant", "resource": "items",
		"retention": map[string]any{"ttl": "1ms", "min_versions": 1}, "guard": map[string]any{"max_shrink": 1}}, nil)
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "edge", "type": "snapstore", "options": map[string]any{"url": proxy.URL, "chunk_rows": 2}}, nil)
	edge.run("items")
	central.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "copy", "connection": "edge", "resource": "items", "dataset": "items_copy",
		"guard": map[string]any{"max_shrink": 1}}, nil)
	first := central.run("copy")
	if first.Status != "succeeded" {
		t.Fatalf("first copy: %+v", first)
	}

	failMidRead := func(step, wantCode, wantText string, f func()) {
		t.Helper()
		pages.Store(0)
		between.Store(&f)
		before := central.current("items_copy")
		c := central.run("copy")
		if c.Status != "failed" || c.Code != wantCode || !strings.Contains(c.Error, wantText) {
			t.Errorf("%s: run %+v, want failed with %s saying %q", step, c, wantCode, wantText)
		}
		if got := central.current("items_copy"); got != before {
			t.Errorf("%s: current version %d, want %d", step, got, before)
		}
	}
	// The version the copy names collected: the run reads in full, in
	// pages, and the version it reads is collected between two of them.
	newVersion := func() {
		if _, err := src.Exec(`UPDATE items SET t = coalesce(t, '') || '+'`); err != nil {
			t.Error(err)
		}
		if r := edge.run("items"); r.Status != "succeeded" {
			t.Errorf("edge run: %+v", r)
		}
		time.Sleep(5 * time.Millisecond) // past the ttl
		edge.must(http.StatusOK, "POST", "/v1/datasets/items/gc", nil, nil)
	}
	newVersion()
	failMidRead("the version collected", "source_unavailable", "no longer kept", newVersion)
	failMidRead("the dataset dropped", "resource_not_found", "dropped", func() {
		edge.must(http.StatusNoContent, "DELETE", "/v1/datasets/items", nil, nil)
	})

	// The next run recovers once the edge has a version again.
	if r := edge.run("items"); r.Status != "succeeded" {
		t.Fatalf("edge run: %+v", r)
	}
	// A server that stops answering: read_timeout ends the diff's answer.
	central.must(http.StatusOK, "PUT", "/v1/connections/edge", map[string]any{"name": "edge", "type": "snapstore",
		"options": map[string]any{"url": proxy.URL, "chunk_rows": 2, "read_timeout": "200ms"}}, nil)
	if c := central.run("copy"); c.Status != "succeeded" {
		t.Fatalf("copy: %+v", c)
	}
	if _, err := src.Exec(`UPDATE items SET t = 'frozen'`); err != nil {
		t.Fatal(err)
	}
	if r := edge.run("items"); r.Status != "succeeded" {
		t.Fatalf("edge run: %+v", r)
	}
	failMidRead("the server frozen", "source_unavailable", "no answer within 200ms (read_timeout)", func() { time.Sleep(time.Second) })
	central.must(http.StatusOK, "PUT", "/v1/connections/edge", map[string]any{"name": "edge", "type": "snapstore",
		"options": map[string]any{"url": proxy.URL, "chunk_rows": 2}}, nil)
	c := central.run("copy")
	if c.Status != "succeeded" {
		t.Fatalf("copy after the failures: %+v", c)
	}
	cv, ev := central.version("items_copy", c.Version), edge.version("items", edge.current("items"))
	if cv.Stats.Checksum != ev.Stats.Checksum || cv.Source.Resource != "items@"+itoa(ev.Version) {
		t.Errorf("copy after the failures: %s checksum %s, edge version %d checksum %s", cv.Source.Resource, cv.Stats.Checksum, ev.Version, ev.Stats.Checksum)
	}

	// A diff that leaves changes out gives another checksum than the
	// source version's: the run begins again and reads in full.
	if _, err := src.Exec(`UPDATE items SET t = 'lost'`); err != nil {
		t.Fatal(err)
	}
	if r := edge.run("items"); r.Status != "succeeded" {
		t.Fatalf("edge run: %+v", r)
	}
	emptyDiff.Store(true)
	c = central.run("copy")
	emptyDiff.Store(false)
	cv, ev = central.version("items_copy", c.Version), edge.version("items", edge.current("items"))
	if c.Status != "succeeded" || c.Mode != "full" || cv.Stats.Checksum != ev.Stats.Checksum {
		t.Errorf("copy through a diff without its changes: %+v, checksum %s, want full with the edge's %s", c, cv.Stats.Checksum, ev.Stats.Checksum)
	}
}

// TestCopyOfSeveralTablesRefused: a dataset of several tables is no
// source of a copy: creating the adapter is a 400 bad_option naming
// resource and the tables, rather than a dataset "without a key".
func TestCopyOfSeveralTablesRefused(t *testing.T) {
	srcPath := filepath.Join(t.TempDir(), "edge.db")
	src, err := sql.Open("sqlite", srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Exec("CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO a VALUES (1, 'x'); INSERT INTO b VALUES (1, 'y');"); err != nil {
		t.Fatal(err)
	}
	edge := newStack(t)
	central := newStack(t)
	edge.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "plant", "type": "sqlite", "options": map[string]any{"path": srcPath}}, nil)
	edge.must(http.StatusCreated, "POST", "/v1/adapters", map[string]any{"name": "both", "connection": "plant", "include": []string{"a", "b"}}, nil)
	if r := edge.run("both"); r.Status != "succeeded" {
		t.Fatalf("edge run: %+v", r)
	}
	central.must(http.StatusCreated, "POST", "/v1/connections", map[string]any{"name": "edge", "type": "snapstore", "options": map[string]any{"url": edge.url}}, nil)
	code, b := central.call("POST", "/v1/adapters", map[string]any{"name": "copy", "connection": "edge", "resource": "both"})
	if code != http.StatusBadRequest || !strings.Contains(string(b), `"field":"resource"`) || !strings.Contains(string(b), `holds several tables (a, b)`) {
		t.Fatalf("adapter copying a dataset of several tables: %d %s", code, b)
	}
}
