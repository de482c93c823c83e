package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestBrowser_CrossSiteRefused sends, to a server without tokens, each
// request a page of another site can make a browser send (browser.go): a
// form post, a text/plain post, a body with no Content-Type, a cross-site
// Origin, Sec-Fetch-Site cross-site and same-site, and a rebound Host.
// Each is refused with its code, nothing it asked for happens, and the
// same request as a client that is not a browser sends it succeeds.
func TestBrowser_CrossSiteRefused(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	conn := `{"name":"x","type":"sqlite","options":{"path":"/nonexistent/x.db"}}`
	for _, c := range []struct {
		what         string
		method, path string
		body         string
		status       int
		code         string
		hdr          []string
	}{
		{"form post", "POST", "/v1/connections", "name=x&type=sqlite", 415, "unsupported_media_type", []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"form post of JSON text", "POST", "/v1/connections", conn, 415, "unsupported_media_type", []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"text/plain post", "POST", "/v1/connections", conn, 415, "unsupported_media_type", []string{"Content-Type", "text/plain;charset=UTF-8"}},
		{"multipart post", "POST", "/v1/connections", conn, 415, "unsupported_media_type", []string{"Content-Type", "multipart/form-data; boundary=b"}},
		{"no Content-Type", "POST", "/v1/connections", conn, 415, "unsupported_media_type", []string{"Content-Type", noHeader}},
		{"cross-site Origin", "POST", "/v1/connections", conn, 403, "cross_origin", []string{"Origin", "http://evil.example"}},
		{"another port's Origin", "POST", "/v1/connections", conn, 403, "cross_origin", []string{"Origin", "http://127.0.0.1:1"}},
		{"null Origin", "POST", "/v1/connections", conn, 403, "cross_origin", []string{"Origin", "null"}},
		{"Sec-Fetch-Site cross-site", "POST", "/v1/connections", conn, 403, "cross_origin", []string{"Sec-Fetch-Site", "cross-site"}},
		{"Sec-Fetch-Site same-site", "POST", "/v1/connections", conn, 403, "cross_origin", []string{"Sec-Fetch-Site", "same-site", "Origin", "http://other.localhost"}},
		{"cross-site GC", "POST", "/v1/datasets/products/gc", "", 403, "cross_origin", []string{"Sec-Fetch-Site", "cross-site"}},
		{"cross-site run", "POST", "/v1/adapters/products/runs", "", 403, "cross_origin", []string{"Origin", "https://evil.example"}},
		{"cross-site delete", "DELETE", "/v1/adapters/notes", "", 403, "cross_origin", []string{"Sec-Fetch-Site", "cross-site"}},
		{"cross-site tag", "PUT", "/v1/datasets/products/tags/t1", "", 403, "cross_origin", []string{"Origin", "http://evil.example"}},
		{"rebound Host, read", "GET", "/v1/datasets", "", 421, "host_not_loopback", []string{"Host", "evil.example:8080"}},
		{"rebound Host, health", "GET", "/healthz", "", 421, "host_not_loopback", []string{"Host", "evil.example"}},
		{"rebound Host, post", "POST", "/v1/connections", conn, 421, "host_not_loopback", []string{"Host", "evil.example:8080", "Origin", "http://evil.example:8080"}},
		{"loopback-looking name", "GET", "/v1/datasets", "", 421, "host_not_loopback", []string{"Host", "127.0.0.1.evil.example"}},
	} {
		p := f.wantProblem(c.status, c.code, "", c.method, c.path, c.body, c.hdr...)
		if c.code == "cross_origin" && !strings.Contains(p.Detail, "cross-origin") {
			t.Errorf("%s: detail %q", c.what, p.Detail)
		}
	}
	// Nothing the refused requests asked for happened.
	f.must(404, "GET", "/v1/connections/x", "")
	f.must(200, "GET", "/v1/adapters/notes", "")
	if body := string(f.must(200, "GET", "/v1/datasets/products/versions", "").body); strings.Contains(body, "t1") {
		t.Errorf("a refused cross-site PUT tagged a version: %s", body)
	}
	var runs struct {
		Runs []any `json:"runs"`
	}
	f.must(200, "GET", "/v1/adapters/products/runs", "").json(t, &runs)
	if len(runs.Runs) != 1 {
		t.Errorf("a refused cross-site POST started runs: %v", runs.Runs)
	}
	if !strings.Contains(f.logs.String(), "request refused: cross-origin") || !strings.Contains(f.logs.String(), "request refused: host is not loopback") {
		t.Errorf("refusals not logged:\n%s", f.logs.String())
	}

	// What a client that is not a browser sends (no Origin, no
	// Sec-Fetch-Site, application/json), and what a browser sends from
	// the server's own origin, is served, under any loopback name.
	f.must(201, "POST", "/v1/connections", conn)
	f.must(204, "DELETE", "/v1/connections/x", "", "Origin", f.ts.URL)
	f.must(201, "POST", "/v1/connections", conn, "Sec-Fetch-Site", "same-origin", "Origin", f.ts.URL)
	f.must(200, "PUT", "/v1/connections/x", conn, "Sec-Fetch-Site", "none")
	f.must(200, "POST", "/v1/datasets/products/gc?dry_run=true", "")
	port := f.ts.URL[strings.LastIndexByte(f.ts.URL, ':'):]
	for _, host := range []string{"localhost" + port, "LOCALHOST", "127.0.0.1", "127.9.8.7" + port, "[::1]" + port} {
		f.must(200, "GET", "/v1/datasets", "", "Host", host)
	}
	// Reads are never cross-origin refusals: a browser cannot read the
	// answer of another site without CORS, which this server never grants.
	f.must(200, "GET", "/v1/datasets", "", "Sec-Fetch-Site", "cross-site")
}

// TestBrowser_TokensAnswerAnyHost: a server with tokens answers any Host
// (it may listen off loopback; a rebound page has no token), but refuses
// cross-site writes even with a valid token.
func TestBrowser_TokensAnswerAnyHost(t *testing.T) {
	f := newFixture(t, fixtureOpts{tokens: []Token{{Name: "admin", Token: "admin-token-long-enough", Role: RoleAdmin}}})
	f.token = "admin-token-long-enough"
	f.run("products")
	f.must(200, "GET", "/v1/datasets", "", "Host", "snapstore.example.com")
	f.wantProblem(403, "cross_origin", "", "POST", "/v1/datasets/products/gc", "", "Host", "snapstore.example.com", "Origin", "https://evil.example")
	f.must(200, "POST", "/v1/datasets/products/gc?dry_run=true", "", "Host", "snapstore.example.com", "Origin", "https://snapstore.example.com")
	if r := f.do("GET", "/v1/datasets", "", "Host", "snapstore.example.com", "Authorization", "Bearer wrong"); r.status != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", r.status)
	}
}
