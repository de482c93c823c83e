package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestHead_EveryReadRoute checks that every GET route answers HEAD too,
// and that HEAD is registered for nothing else.
func TestHead_EveryReadRoute(t *testing.T) {
	s := routesOnly(t)
	methods := map[string]map[string]bool{}
	for _, r := range s.echo.Routes() {
		if methods[r.Path] == nil {
			methods[r.Path] = map[string]bool{}
		}
		methods[r.Path][r.Method] = true
	}
	for path, m := range methods {
		if m[http.MethodGet] != m[http.MethodHead] {
			t.Errorf("%s: GET %v, HEAD %v", path, m[http.MethodGet], m[http.MethodHead])
		}
	}
}

// TestHead_AnswersAsGet checks that HEAD answers with GET's status and
// headers, no body, and a Content-Length only when it is GET's, through
// the same role and grant checks; and that metrics and the debug log name
// HEAD.
func TestHead_AnswersAsGet(t *testing.T) {
	f := newFixture(t, fixtureOpts{tokens: []Token{
		{Name: "root", Token: "root-token-0123456789", Role: RoleAdmin},
		{Name: "limited", Token: "limited-token-0123456789", Role: RoleReader, Datasets: []string{"notes"}},
	}})
	f.token = "root-token-0123456789"
	v := f.run("products")
	f.run("notes")
	limited := []string{"Authorization", "Bearer limited-token-0123456789"}
	for _, tc := range []struct {
		path   string
		status int
		hdr    []string
	}{
		{"/healthz", 200, nil},
		{"/openapi.json", 200, nil},
		{"/metrics", 200, nil},
		{"/v1/datasets", 200, nil},
		{"/v1/datasets/products", 200, nil},
		{"/v1/datasets/products/versions", 200, nil},
		{"/v1/datasets/products/rows/3", 200, nil},
		{"/v1/datasets/products/rows?limit=2", 200, nil},
		{"/v1/datasets/products/rows?format=ndjson", 200, nil},
		{"/v1/datasets/products/rows?format=csv", 200, nil},
		{"/v1/datasets/products/rows?format=arrow", 200, nil},
		{"/v1/datasets/products/rows?format=parquet", 200, nil},
		{fmt.Sprintf("/v1/datasets/products/diff?from=%d&to=%d&format=parquet", v, v), 200, nil},
		{fmt.Sprintf("/v1/datasets/products/diff?from=%d&to=%d", v, v), 200, nil},
		{"/v1/datasets/products/rows/999", 404, nil},
		{"/v1/datasets/nothing/rows", 404, nil},
		{"/v1/datasets/products/rows?limit=-1", 400, nil},
		{"/v1/datasets/products", 401, []string{"Authorization", "Bearer wrong"}},
		{"/v1/datasets/products", 404, limited}, // outside the grant
		{"/v1/datasets/notes", 200, limited},
		{"/v1/tokens", 403, limited},
	} {
		get := f.do("GET", tc.path, "", tc.hdr...)
		head := f.do("HEAD", tc.path, "", tc.hdr...)
		if get.status != tc.status || head.status != tc.status {
			t.Errorf("%s: GET %d, HEAD %d, want %d", tc.path, get.status, head.status, tc.status)
			continue
		}
		if len(head.body) != 0 {
			t.Errorf("HEAD %s: body %q", tc.path, head.body)
		}
		for _, h := range []string{"Content-Type", "Content-Disposition", versionHeader, "Snapstore-Diff-From", "WWW-Authenticate"} {
			if g, hd := get.header.Get(h), head.header.Get(h); g != hd {
				t.Errorf("%s: %s %q on GET, %q on HEAD", tc.path, h, g, hd)
			}
		}
		if cl := head.header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(get.body)) {
			t.Errorf("HEAD %s: Content-Length %s, GET's body has %d bytes", tc.path, cl, len(get.body))
		}
	}
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	headSeries, readersSeen := false, false
	for _, mf := range mfs {
		if mf.GetName() == "snapstore_snapshot_readers_open" {
			readersSeen = true
			// Every HEAD released the version it pinned.
			if open := mf.GetMetric()[0].GetGauge().GetValue(); open != 0 {
				t.Errorf("%v readers still open after the requests", open)
			}
		}
		if mf.GetName() != "snapstore_server_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			headSeries = headSeries || labels["method"] == "HEAD" && labels["route"] == "/v1/datasets/:dataset/rows"
		}
	}
	if !readersSeen {
		t.Error("no gauge snapstore_snapshot_readers_open")
	}
	if !headSeries {
		t.Error("no latency series of HEAD on the rows route")
	}
	if !strings.Contains(f.logs.String(), `method=HEAD route=/v1/datasets/:dataset/rows`) {
		t.Errorf("the debug log names no HEAD of the rows route")
	}
}

// parquetCaches runs test on a server without the cache of Parquet
// files, each request building its own, and on one with it.
func parquetCaches(t *testing.T, test func(t *testing.T, fo fixtureOpts)) {
	t.Run("uncached", func(t *testing.T) { test(t, fixtureOpts{}) })
	t.Run("cached", func(t *testing.T) { test(t, fixtureOpts{parquetCache: 64 << 20}) })
}

// TestParquet_Ranges checks that a Parquet answer is served by byte
// ranges: the footer by a suffix range, as Parquet readers over HTTP ask
// for it first, and a middle range, each a slice of the whole file.
func TestParquet_Ranges(t *testing.T) {
	parquetCaches(t, func(t *testing.T, fo fixtureOpts) {
		f := newFixture(t, fo)
		v := f.run("products")
		path := fmt.Sprintf("/v1/datasets/products/rows?format=parquet&version=%d", v)
		whole := f.must(200, "GET", path, "")
		if ar := whole.header.Get("Accept-Ranges"); ar != "bytes" {
			t.Errorf("Accept-Ranges %q, want bytes", ar)
		}
		n := len(whole.body)
		if cl := whole.header.Get("Content-Length"); cl != strconv.Itoa(n) {
			t.Errorf("Content-Length %s, body %d bytes", cl, n)
		}
		tail := f.must(206, "GET", path, "", "Range", "bytes=-8")
		if !bytes.Equal(tail.body, whole.body[n-8:]) || !bytes.HasSuffix(tail.body, []byte("PAR1")) {
			t.Errorf("suffix range %q, want the file's last 8 bytes", tail.body)
		}
		if cr, want := tail.header.Get("Content-Range"), fmt.Sprintf("bytes %d-%d/%d", n-8, n-1, n); cr != want {
			t.Errorf("Content-Range %q, want %q", cr, want)
		}
		mid := f.must(206, "GET", path, "", "Range", "bytes=4-99")
		if !bytes.Equal(mid.body, whole.body[4:100]) {
			t.Errorf("range 4-99 is not the file's bytes 4 to 99")
		}
		// A range of another unit is ignored: the whole file.
		for _, other := range []string{"items=0-1", "nonsense"} {
			if out := f.must(200, "GET", path, "", "Range", other); !bytes.Equal(out.body, whole.body) {
				t.Errorf("Range %q: not the whole file", other)
			}
		}
		// A suffix of no byte is dropped from a list of ranges.
		if out := f.must(206, "GET", path, "", "Range", "bytes=-0, 0-3"); !bytes.Equal(out.body, whole.body[:4]) {
			t.Errorf("Range bytes=-0, 0-3: %q, want the file's first 4 bytes", out.body)
		}
		for _, bad := range []string{fmt.Sprintf("bytes=%d-", n+10), "bytes=x-y", "bytes=-0", "bytes=,", "bytes=-0,", "bytes= , "} {
			out := f.must(416, "GET", path, "", "Range", bad)
			if ct := out.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Range %q: Content-Type %q, want a problem", bad, ct)
			}
			var p Problem
			if err := json.Unmarshal(out.body, &p); err != nil || p.Code != "range_not_satisfiable" || p.Field != "Range" {
				t.Errorf("Range %q: problem %+v (%v) %q, want code range_not_satisfiable of field Range", bad, p, err, out.body)
			}
			if cd := out.header.Get("Content-Disposition"); cd != "" {
				t.Errorf("Range %q: the problem is sent as the attachment %q", bad, cd)
			}
			if cr, want := out.header.Get("Content-Range"), fmt.Sprintf("bytes */%d", n); cr != want {
				t.Errorf("Range %q: Content-Range %q, want %q", bad, cr, want)
			}
		}
	})
}

// TestParquet_RangesAcrossVersions checks that a reader of an unpinned
// Parquet URL by byte ranges can tell the file changed between its
// requests: the answer has an ETag of the version it was made from (the
// same in HEAD's answer), an If-Range of that tag is honoured while the
// version is current, and once a run committed a new one the range is
// refused for the whole new file (200), not served as a slice of it;
// an If-Match of the old tag is 412 precondition_failed.
func TestParquet_RangesAcrossVersions(t *testing.T) {
	parquetCaches(t, func(t *testing.T, fo fixtureOpts) {
		f := newFixture(t, fo)
		f.run("products")
		const path = "/v1/datasets/products/rows?format=parquet"
		head := f.must(200, "HEAD", path, "")
		first := f.must(206, "GET", path, "", "Range", "bytes=-8")
		tag := first.header.Get("ETag")
		if tag == "" || !strings.HasPrefix(tag, `"`) || head.header.Get("ETag") != tag {
			t.Fatalf("ETag %q of a range, %q of HEAD: want one strong tag", tag, head.header.Get("ETag"))
		}
		again := f.must(206, "GET", path, "", "Range", "bytes=0-3", "If-Range", tag)
		if string(again.body) != "PAR1" {
			t.Errorf("If-Range of the current version's tag: %q, want the file's first bytes", again.body)
		}
		f.exec(`UPDATE products SET stock = 7 WHERE id = 1`)
		f.run("products")
		whole := f.must(200, "GET", path, "", "Range", "bytes=0-3", "If-Range", tag)
		if len(whole.body) <= 4 || whole.header.Get("ETag") == tag {
			t.Errorf("If-Range of the last version's tag after a commit: %d bytes, ETag %q", len(whole.body), whole.header.Get("ETag"))
		}
		// A reader that asks for its ranges If-Match (object_store does) is
		// told the file changed.
		p := f.wantProblem(412, "precondition_failed", "If-Match", "GET", path, "", "Range", "bytes=0-3", "If-Match", tag)
		if !strings.Contains(p.Detail, "ETag") {
			t.Errorf("412 detail %q names no ETag", p.Detail)
		}
		f.must(206, "GET", path, "", "Range", "bytes=0-3", "If-Match", whole.header.Get("ETag"))
	})
}

// TestParquet_HeadAsGet checks that the HEAD of a Parquet answer (a
// dataset's rows, a table's rows, a diff) answers what its GET does: the
// Content-Length of the whole file, Accept-Ranges and the ETag; the 206
// with Content-Range and Content-Length of a Range; the 416 of a Range
// past the end, each without a body.
func TestParquet_HeadAsGet(t *testing.T) {
	parquetCaches(t, func(t *testing.T, fo fixtureOpts) {
		f := newFixture(t, fo)
		v := f.run("products")
		writeTables(t, f.db, shopdbV1())
		for _, path := range []string{
			fmt.Sprintf("/v1/datasets/products/rows?format=parquet&version=%d", v),
			"/v1/datasets/shopdb/tables/public.orders/rows?format=parquet",
			fmt.Sprintf("/v1/datasets/products/diff?from=%d&to=%d&format=parquet", v, v),
		} {
			get := f.must(200, "GET", path, "")
			n := len(get.body)
			head := f.must(200, "HEAD", path, "")
			for _, h := range []string{"Content-Length", "Accept-Ranges", "ETag", "Content-Type", "Content-Disposition"} {
				if g, hd := get.header.Get(h), head.header.Get(h); g != hd || g == "" {
					t.Errorf("HEAD %s: %s %q, GET's %q", path, h, hd, g)
				}
			}
			if cl := head.header.Get("Content-Length"); cl != strconv.Itoa(n) {
				t.Errorf("HEAD %s: Content-Length %q, GET's body has %d bytes", path, cl, n)
			}
			part := f.must(206, "HEAD", path, "", "Range", "bytes=-8")
			if cr, want := part.header.Get("Content-Range"), fmt.Sprintf("bytes %d-%d/%d", n-8, n-1, n); cr != want {
				t.Errorf("HEAD %s of bytes=-8: Content-Range %q, want %q", path, cr, want)
			}
			if cl := part.header.Get("Content-Length"); cl != "8" {
				t.Errorf("HEAD %s of bytes=-8: Content-Length %q, want 8", path, cl)
			}
			past := f.must(416, "HEAD", path, "", "Range", fmt.Sprintf("bytes=%d-", n+10))
			if cr, want := past.header.Get("Content-Range"), fmt.Sprintf("bytes */%d", n); cr != want {
				t.Errorf("HEAD %s past the end: Content-Range %q, want %q", path, cr, want)
			}
			for _, r := range []response{head, part, past} {
				if len(r.body) != 0 {
					t.Errorf("HEAD %s: a body of %d bytes", path, len(r.body))
				}
			}
		}
	})
}

// TestParquet_ClientGoneWhileWritten: a client that goes away while its
// Parquet file is being written (nothing sent yet: the file goes only
// once whole) is logged and counted as 499, as any request whose client
// went away before the answer, not as a 200 that sent nothing. The test
// hangs up once the server opened the temporary file, which a dataset of
// 200000 rows keeps open well beyond the hang-up; the file has no name in
// the temporary directory meanwhile, so that a process killed while it
// writes leaves no copy of the rows behind.
func TestParquet_ClientGoneWhileWritten(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	f := newFixture(t, fixtureOpts{})
	f.exec(`INSERT INTO products (id, name, price, stock)
		WITH RECURSIVE n(i) AS (SELECT 1000 UNION ALL SELECT i + 1 FROM n WHERE i < 201000)
		SELECT i, 'product number ' || i, i % 1000 + 0.25, i % 77 FROM n`)
	v := f.run("products")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var leftInDir atomic.Bool
	go func() {
		for ctx.Err() == nil {
			if parquetTempOpen(t, tmp) {
				// A process killed now must leave no copy of the rows.
				if m, _ := filepath.Glob(filepath.Join(tmp, "*")); len(m) > 0 {
					leftInDir.Store(true)
				}
				cancel() // the client hangs up
				return
			}
			runtime.Gosched()
		}
	}()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", fmt.Sprintf("http://127.0.0.1/v1/datasets/products/rows?format=parquet&version=%d", v), nil)
	f.srv.Handler().ServeHTTP(rec, req.WithContext(ctx))
	if ctx.Err() == nil {
		t.Fatalf("the file was made before the client hung up: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	if rec.Body.Len() != 0 {
		t.Errorf("answered a client that went away: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	if leftInDir.Load() {
		t.Error("the Parquet file being written has a name in the temporary directory: a process killed meanwhile leaves a copy of the rows there")
	}
	logs := f.logs.String()
	if !strings.Contains(logs, `msg="http request" method=GET route=/v1/datasets/:dataset/rows status=499`) {
		t.Errorf("the request is not logged as 499:\n%s", logs)
	}
	body := string(f.must(200, "GET", "/metrics", "").body)
	if !strings.Contains(body, `snapstore_server_http_request_duration_seconds_count{method="GET",route="/v1/datasets/:dataset/rows",status="499"} 1`) {
		t.Errorf("metrics do not count a 499:\n%s", body)
	}
}

// parquetTempOpen reports whether this process has a file of directory
// dir open (Linux's /proc/self/fd), named or not: the temporary file of a
// Parquet answer.
func parquetTempOpen(t *testing.T, dir string) bool {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to find the open files: %v", err)
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			return true
		}
	}
	return false
}
