package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// parquetCounts are the cache's metrics, read from GET /metrics.
type parquetCounts struct {
	builds, hits, evictions, bytes, spills int64
}

func (f *fixture) parquetCounts() parquetCounts {
	f.t.Helper()
	body := string(f.must(200, "GET", "/metrics", "").body)
	val := func(name string) int64 {
		for _, l := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(l, name+" "); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					f.t.Fatalf("%s: %v", l, err)
				}
				return int64(n)
			}
		}
		f.t.Fatalf("no metric %s in:\n%s", name, body)
		return 0
	}
	return parquetCounts{
		builds:    val("snapstore_server_parquet_cache_builds_total"),
		hits:      val("snapstore_server_parquet_cache_hits_total"),
		evictions: val("snapstore_server_parquet_cache_evictions_total"),
		bytes:     val("snapstore_server_parquet_cache_bytes"),
		spills:    val("snapstore_server_parquet_cache_spills_total"),
	}
}

// wantBuilds fails unless the server built want Parquet files so far.
func (f *fixture) wantBuilds(want int64, what string) {
	f.t.Helper()
	if got := f.parquetCounts().builds; got != want {
		f.t.Errorf("%s: %d Parquet builds, want %d", what, got, want)
	}
}

// parquetFiles lists the cache directory's files by suffix.
func (f *fixture) parquetFiles() (whole, building []string) {
	f.t.Helper()
	ents, err := os.ReadDir(f.parquetDir)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, e := range ents {
		switch filepath.Ext(e.Name()) {
		case parquetCachedSuffix:
			whole = append(whole, e.Name())
		case parquetBuildSuffix:
			building = append(building, e.Name())
		default:
			f.t.Errorf("an unknown file in the Parquet cache: %s", e.Name())
		}
	}
	return whole, building
}

// TestParquetCache_OneBuildPerKey: a reader's HEAD, three Range
// requests and a GET of one answer build its file once, and are slices
// of that one file; the same request spelled otherwise (the version
// pinned to the current one's number, the default compression named,
// Accept rather than format) is the same file; another parameter,
// another version and a diff build their own.
func TestParquetCache_OneBuildPerKey(t *testing.T) {
	f := newFixture(t, fixtureOpts{parquetCache: 64 << 20})
	v1 := f.run("products")
	const path = "/v1/datasets/products/rows?format=parquet"
	head := f.must(200, "HEAD", path, "")
	n, err := strconv.Atoi(head.header.Get("Content-Length"))
	if err != nil || n < 100 {
		t.Fatalf("HEAD: Content-Length %q", head.header.Get("Content-Length"))
	}
	tail := f.must(206, "GET", path, "", "Range", "bytes=-8")
	first := f.must(206, "GET", path, "", "Range", "bytes=0-3")
	mid := f.must(206, "GET", path, "", "Range", fmt.Sprintf("bytes=4-%d", n-9))
	whole := f.must(200, "GET", path, "")
	if got := append(append(append([]byte(nil), first.body...), mid.body...), tail.body...); !bytes.Equal(got, whole.body) {
		t.Errorf("the three ranges (%d bytes) are not the GET's file (%d bytes)", len(got), len(whole.body))
	}
	etag := whole.header.Get("ETag")
	for _, r := range []response{head, tail, first, mid} {
		if r.header.Get("ETag") != etag || r.header.Get("Last-Modified") != whole.header.Get("Last-Modified") {
			t.Errorf("ETag %q Last-Modified %q; the GET's %q %q", r.header.Get("ETag"), r.header.Get("Last-Modified"), etag, whole.header.Get("Last-Modified"))
		}
	}
	if whole.header.Get("Last-Modified") == "" || !strings.HasPrefix(etag, `"`) {
		t.Errorf("ETag %q, Last-Modified %q: want a strong tag and a date", etag, whole.header.Get("Last-Modified"))
	}
	if c := f.parquetCounts(); c.builds != 1 || c.hits != 4 || c.bytes != int64(n) {
		t.Errorf("HEAD, three ranges and a GET: %+v, want 1 build, 4 hits, %d bytes held", c, n)
	}
	if whole, _ := f.parquetFiles(); len(whole) != 1 {
		t.Errorf("cache files %v, want one", whole)
	}
	for _, same := range [][]string{
		{fmt.Sprintf("/v1/datasets/products/rows?version=%d&format=parquet&compression=zstd", v1)},
		{"/v1/datasets/products/rows", "Accept", "application/vnd.apache.parquet"},
	} {
		r := f.must(200, "GET", same[0], "", same[1:]...)
		if !bytes.Equal(r.body, whole.body) || r.header.Get("ETag") != etag {
			t.Errorf("%s: not the file of %s", same, path)
		}
	}
	f.wantBuilds(1, "the same request spelled otherwise")
	builds := int64(1)
	for _, other := range []string{"&columns=id,name", "&limit=3", "&start=4", "&prefix=4", "&compression=snappy"} {
		r := f.must(200, "GET", path+other, "")
		f.must(206, "GET", path+other, "", "Range", "bytes=-8")
		builds++
		f.wantBuilds(builds, other)
		if bytes.Equal(r.body, whole.body) || r.header.Get("ETag") == etag {
			t.Errorf("%s: the file of %s", other, path)
		}
	}
	f.exec(`UPDATE products SET stock = 7 WHERE id = 1`)
	v2 := f.run("products")
	now := f.must(200, "HEAD", path, "")
	builds++
	if now.header.Get("ETag") == etag || versionOf(t, now) != v2 {
		t.Errorf("after a commit: ETag %q (was %q), version %d, want %d", now.header.Get("ETag"), etag, versionOf(t, now), v2)
	}
	f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/rows?format=parquet&version=%d", v2), "")
	old := f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/rows?format=parquet&version=%d", v1), "")
	if !bytes.Equal(old.body, whole.body) {
		t.Errorf("version %d pinned: not its file", v1)
	}
	f.wantBuilds(builds, "the current version after a commit, then both pinned")
	diff := fmt.Sprintf("/v1/datasets/products/diff?from=%d&to=%d&format=parquet", v1, v2)
	d := f.must(200, "HEAD", diff, "")
	f.must(206, "GET", diff, "", "Range", "bytes=-8")
	dw := f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/diff?to=%d&format=parquet", v2), "")
	if dw.header.Get("ETag") != d.header.Get("ETag") || dw.header.Get("Content-Length") != d.header.Get("Content-Length") {
		t.Errorf("a diff with from defaulted to %d: not the file of from=%d", v1, v1)
	}
	f.wantBuilds(builds+1, "a diff's HEAD, range and GET")
}

// TestParquetCache_MovedTag: a tag is resolved to its version at each
// request, so once it moves its URL answers the new version's file, not
// the one cached for the old.
func TestParquetCache_MovedTag(t *testing.T) {
	f := newFixture(t, fixtureOpts{parquetCache: 64 << 20})
	v1 := f.run("products")
	f.exec(`UPDATE products SET name = 'mug' WHERE id = 1`)
	v2 := f.run("products")
	f.must(200, "PUT", "/v1/datasets/products/tags/pinned", fmt.Sprintf(`{"version":%d}`, v1))
	const path = "/v1/datasets/products/rows?format=parquet&tag=pinned"
	one := f.must(200, "GET", path, "")
	f.must(206, "GET", path, "", "Range", "bytes=-8")
	if want := f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/rows?format=parquet&version=%d", v1), ""); !bytes.Equal(one.body, want.body) {
		t.Errorf("tag at %d: not the file of version %d", v1, v1)
	}
	f.wantBuilds(1, "a tag and its version")
	f.must(200, "PUT", "/v1/datasets/products/tags/pinned", fmt.Sprintf(`{"version":%d}`, v2))
	two := f.must(200, "GET", path, "")
	want := f.must(200, "GET", fmt.Sprintf("/v1/datasets/products/rows?format=parquet&version=%d", v2), "")
	if !bytes.Equal(two.body, want.body) || bytes.Equal(two.body, one.body) || versionOf(t, two) != v2 {
		t.Errorf("tag moved to %d: not the file of version %d (version header %d)", v2, v2, versionOf(t, two))
	}
	if two.header.Get("ETag") == one.header.Get("ETag") {
		t.Errorf("tag moved: the ETag stayed %s", one.header.Get("ETag"))
	}
	f.wantBuilds(2, "the tag moved")
}

// TestParquetCache_Conditional: If-None-Match of the answer's ETag is
// 304 without a body, on GET and HEAD, cached or not; another tag is the
// file.
func TestParquetCache_Conditional(t *testing.T) {
	f := newFixture(t, fixtureOpts{parquetCache: 64 << 20})
	f.run("products")
	const path = "/v1/datasets/products/rows?format=parquet"
	whole := f.must(200, "GET", path, "")
	etag := whole.header.Get("ETag")
	for _, m := range []string{"GET", "HEAD"} {
		r := f.must(304, m, path, "", "If-None-Match", etag)
		if len(r.body) != 0 || r.header.Get("ETag") != etag {
			t.Errorf("%s If-None-Match: %d bytes, ETag %q", m, len(r.body), r.header.Get("ETag"))
		}
		f.must(304, m, path, "", "If-None-Match", `"other", `+etag)
	}
	if r := f.must(200, "GET", path, "", "If-None-Match", `"other"`); !bytes.Equal(r.body, whole.body) {
		t.Error("If-None-Match of another tag: not the file")
	}
	f.must(206, "GET", path, "", "Range", "bytes=0-3", "If-Range", etag)
	f.must(206, "GET", path, "", "Range", "bytes=0-3", "If-Range", whole.header.Get("Last-Modified"))
	f.must(200, "GET", path, "", "Range", "bytes=0-3", "If-Range", `"other"`)
	f.wantBuilds(1, "conditional requests")
}

// TestParquetCache_Grant: a token limited to other datasets is answered
// 404 for a Parquet file the cache holds, as for one it does not, and
// nothing is served from the cache for it.
func TestParquetCache_Grant(t *testing.T) {
	const admin, limited = "admin-token-0123456789", "limited-token-0123456789"
	f := newFixture(t, fixtureOpts{parquetCache: 64 << 20, tokens: []Token{
		{Name: "admin", Token: admin, Role: RoleAdmin},
		{Name: "limited", Token: limited, Role: RoleReader, Datasets: []string{"notes"}},
	}})
	f.token = admin
	v := f.run("products")
	f.run("notes")
	path := fmt.Sprintf("/v1/datasets/products/rows?format=parquet&version=%d", v)
	whole := f.must(200, "GET", path, "")
	before := f.parquetCounts()
	f.token = limited
	for _, hdr := range [][]string{nil, {"Range", "bytes=-8"}, {"If-None-Match", whole.header.Get("ETag")}} {
		for _, m := range []string{"GET", "HEAD"} {
			r := f.do(m, path, "", hdr...)
			if r.status != 404 || bytes.Contains(r.body, []byte("PAR1")) {
				t.Errorf("%s %v by a token outside the grant: %d %q", m, hdr, r.status, r.body)
			}
		}
	}
	f.must(200, "GET", "/v1/datasets/notes/rows?format=parquet", "")
	f.token = admin
	if after := f.parquetCounts(); after.hits != before.hits || after.builds != before.builds+1 {
		t.Errorf("requests outside the grant moved the cache: %+v, then %+v", before, after)
	}
}

// TestParquetCache_Evicts: past its bound the cache removes the least
// recently used files, from disk too, and builds them again when asked;
// a file larger than the bound is served and not kept.
func TestParquetCache_Evicts(t *testing.T) {
	f := newFixture(t, fixtureOpts{parquetCache: 64 << 20})
	f.run("products")
	const base = "/v1/datasets/products/rows?format=parquet"
	a := f.must(200, "GET", base, "")
	b := f.must(200, "GET", base+"&compression=snappy", "")
	na, nb := int64(len(a.body)), int64(len(b.body))
	if c := f.parquetCounts(); c.bytes != na+nb {
		t.Fatalf("two files of %d and %d bytes: %+v", na, nb, c)
	}
	// Bound the cache below the two files and one more: the next file
	// evicts the least recently used, a.
	pc := f.srv.parquetFiles
	pc.mu.Lock()
	pc.size = na + nb - 1
	pc.mu.Unlock()
	c := f.must(200, "GET", base+"&columns=id", "")
	nc := int64(len(c.body))
	if nc >= na {
		t.Fatalf("the file of one column has %d bytes, the whole one %d", nc, na)
	}
	if got := f.parquetCounts(); got.builds != 3 || got.evictions != 1 || got.bytes != nb+nc {
		t.Errorf("a third file past the bound: %+v, want 3 builds, 1 eviction, %d bytes", got, nb+nc)
	}
	if whole, _ := f.parquetFiles(); len(whole) != 2 {
		t.Errorf("cache files %v, want two once one is evicted", whole)
	}
	f.must(200, "GET", base+"&compression=snappy", "")
	f.wantBuilds(3, "a file kept")
	if again := f.must(200, "GET", base, ""); !bytes.Equal(again.body, a.body) {
		t.Error("the evicted file built again is not the same")
	}
	f.wantBuilds(4, "an evicted file")
	pc.mu.Lock()
	pc.size = 10
	pc.mu.Unlock()
	held := f.parquetCounts().bytes
	for range 2 {
		if r := f.must(200, "GET", base+"&limit=2", ""); !bytes.HasSuffix(r.body, []byte("PAR1")) {
			t.Error("a file larger than the bound: not served whole")
		}
	}
	if got := f.parquetCounts(); got.builds != 6 || got.bytes != held || got.spills != 2 {
		t.Errorf("a file larger than the bound, twice: %+v, want 6 builds, 2 spills and %d bytes still held", got, held)
	}
}

// TestParquetCache_ClientGoneMidBuild: a client that hangs up while its
// file is built stops the build, which leaves no file, whole or partial,
// in the cache; the next request builds the file again and gets it
// whole. Concurrent requests of one key wait for one build.
func TestParquetCache_ClientGoneMidBuild(t *testing.T) {
	f := newFixture(t, fixtureOpts{parquetCache: 256 << 20})
	f.exec(`INSERT INTO products (id, name, price, stock)
		WITH RECURSIVE n(i) AS (SELECT 1000 UNION ALL SELECT i + 1 FROM n WHERE i < 201000)
		SELECT i, 'product number ' || i, i % 1000 + 0.25, i % 77 FROM n`)
	v := f.run("products")
	path := fmt.Sprintf("/v1/datasets/products/rows?format=parquet&version=%d", v)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if _, building := f.parquetFiles(); len(building) > 0 {
				cancel() // the client hangs up once the build began
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	req, err := http.NewRequestWithContext(ctx, "GET", f.ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the file was made before the client hung up: %d", resp.StatusCode)
	}
	// The server's handler ends once the build stopped: it counts a 499.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		body := string(f.must(200, "GET", "/metrics", "").body)
		if strings.Contains(body, `snapstore_server_http_request_duration_seconds_count{method="GET",route="/v1/datasets/:dataset/rows",status="499"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 499 counted for the client that hung up:\n%s", body)
		}
	}
	if whole, building := f.parquetFiles(); len(whole)+len(building) != 0 {
		t.Fatalf("after a build whose client went away the cache holds %v %v", whole, building)
	}
	if parquetTempOpen(t, f.parquetDir) {
		t.Error("the file of the stopped build is still open")
	}
	f.wantBuilds(1, "the build whose client went away")

	// Four clients at once, then a HEAD and a range: one build.
	bodies := make([][]byte, 4)
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(f.ts.URL + path)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("concurrent GET: %d", resp.StatusCode)
			}
			bodies[i], _ = io.ReadAll(resp.Body)
		}()
	}
	wg.Wait()
	head := f.must(200, "HEAD", path, "")
	tail := f.must(206, "GET", path, "", "Range", "bytes=-4")
	for i, b := range bodies {
		if strconv.Itoa(len(b)) != head.header.Get("Content-Length") || !bytes.Equal(b, bodies[0]) || !bytes.HasPrefix(b, []byte("PAR1")) {
			t.Errorf("client %d: %d bytes, HEAD says %s", i, len(b), head.header.Get("Content-Length"))
		}
	}
	if string(tail.body) != "PAR1" {
		t.Errorf("the last bytes: %q", tail.body)
	}
	if c := f.parquetCounts(); c.builds != 2 || c.hits != 5 {
		t.Errorf("four concurrent GETs, a HEAD and a range: %+v, want 2 builds in all and 5 hits", c)
	}
	if whole, building := f.parquetFiles(); len(whole) != 1 || len(building) != 0 {
		t.Errorf("cache files %v %v, want one whole", whole, building)
	}
}

// TestParquetCache_WaiterOfAbandonedBuild: a request waiting for the
// build of another whose client hangs up is not answered with that
// client's error: it builds the file itself and gets it whole.
func TestParquetCache_WaiterOfAbandonedBuild(t *testing.T) {
	f := newFixture(t, fixtureOpts{parquetCache: 256 << 20})
	f.exec(`INSERT INTO products (id, name, price, stock)
		WITH RECURSIVE n(i) AS (SELECT 1000 UNION ALL SELECT i + 1 FROM n WHERE i < 201000)
		SELECT i, 'product number ' || i, i % 1000 + 0.25, i % 77 FROM n`)
	v := f.run("products")
	path := fmt.Sprintf("/v1/datasets/products/rows?format=parquet&version=%d", v)
	waiting := make(chan struct{}, 1)
	f.srv.parquetFiles.onWait = func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, "GET", f.ts.URL+path, nil)
		if err == nil {
			var resp *http.Response
			if resp, err = http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		first <- err
	}()
	for {
		if _, building := f.parquetFiles(); len(building) > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	type answer struct {
		status int
		body   []byte
		err    error
	}
	second := make(chan answer, 1)
	go func() {
		resp, err := http.Get(f.ts.URL + path)
		if err != nil {
			second <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		second <- answer{resp.StatusCode, b, err}
	}()
	<-waiting // the second request waits for the first's build
	cancel()
	if err := <-first; err == nil {
		t.Fatal("the first request's file was made before its client hung up")
	}
	a := <-second
	if a.err != nil || a.status != 200 || !bytes.HasPrefix(a.body, []byte("PAR1")) || !bytes.HasSuffix(a.body, []byte("PAR1")) {
		t.Fatalf("the waiting request: %d, %d bytes, %v", a.status, len(a.body), a.err)
	}
	head := f.must(200, "HEAD", path, "")
	if head.header.Get("Content-Length") != strconv.Itoa(len(a.body)) {
		t.Errorf("the waiting request got %d bytes, HEAD says %s", len(a.body), head.header.Get("Content-Length"))
	}
	if c := f.parquetCounts(); c.builds != 2 || c.hits != 1 {
		t.Errorf("an abandoned build, the waiter's and a HEAD: %+v, want 2 builds and 1 hit", c)
	}
}

// TestParquetCache_BoundHoldsBuilds: the files of the cache, whole and
// being built, never hold more than parquet_cache.size bytes together,
// with many builds at once over HTTP: a build counts its bytes as it
// writes them, evicting whole files to make room, and one that finds no
// room beside the others is served from the temporary directory and not
// kept. Every answer is whole, and the same for the same key. The bytes
// are measured from the directory, with the cache's lock held so that no
// build takes more room meanwhile: whenever a build is done writing
// (its peak) and, between, as often as the test can.
func TestParquetCache_BoundHoldsBuilds(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	f := newFixture(t, fixtureOpts{parquetCache: 64 << 20})
	f.exec(`INSERT INTO products (id, name, price, stock)
		WITH RECURSIVE n(i) AS (SELECT 1000 UNION ALL SELECT i + 1 FROM n WHERE i < 46000)
		SELECT i, hex(randomblob(64)), i % 1000 + 0.25, i % 77 FROM n`)
	v := f.run("products")
	// Files of some MiB, written a MiB at a time (writeParquetFile's
	// buffer): a build can find no room in the middle of its file.
	pathOf := func(i int) string {
		return fmt.Sprintf("/v1/datasets/products/rows?format=parquet&version=%d&limit=%d", v, 40000+i)
	}
	// Bound the cache to two and a half files of one key.
	one := int64(len(f.must(200, "GET", pathOf(-1), "").body))
	if one < 2<<20 {
		t.Fatalf("a file of %d bytes: not written in several parts", one)
	}
	pc := f.srv.parquetFiles
	pc.mu.Lock()
	pc.size = one * 5 / 2
	bound := pc.size
	pc.mu.Unlock()

	var mu sync.Mutex
	var peak int64
	measure := func() {
		pc.mu.Lock()
		defer pc.mu.Unlock()
		var n int64
		ents, err := os.ReadDir(f.parquetDir)
		if err != nil {
			t.Error(err)
			return
		}
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		mu.Lock()
		peak = max(peak, n)
		mu.Unlock()
	}
	pc.onBuilt = measure
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
				measure()
			}
		}
	}()

	const keys, each = 6, 2
	bodies := make([][]byte, keys*each)
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(f.ts.URL + pathOf(i%keys))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != 200 || strconv.Itoa(len(b)) != resp.Header.Get("Content-Length") ||
				!bytes.HasPrefix(b, []byte("PAR1")) || !bytes.HasSuffix(b, []byte("PAR1")) {
				t.Errorf("GET %s: %d, %d bytes of %s, %v", pathOf(i%keys), resp.StatusCode, len(b), resp.Header.Get("Content-Length"), err)
			}
			bodies[i] = b
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	for i := keys; i < len(bodies); i++ {
		if !bytes.Equal(bodies[i], bodies[i%keys]) {
			t.Errorf("two answers of %s differ", pathOf(i%keys))
		}
	}
	if peak > bound {
		t.Errorf("the cache's files held %d bytes at once, over the bound of %d (a file is %d)", peak, bound, one)
	}
	c := f.parquetCounts()
	if c.bytes > bound || c.builds < keys+1 {
		t.Errorf("%+v: want at most %d bytes held and a build per key", c, bound)
	}
	if _, building := f.parquetFiles(); len(building) != 0 {
		t.Errorf("builds left behind: %v", building)
	}
	if m, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "*")); len(m) > 0 {
		t.Errorf("files left in the temporary directory: %v", m)
	}
}
