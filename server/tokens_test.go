package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestAPITokens_CreateListRevokeExpire walks an API token's life: created
// (shown once), accepted with its role, listed without its secret,
// expired, revoked; and a second server on the same store (a node of a
// cluster) sees the revoke within TokenRefresh.
func TestAPITokens_CreateListRevokeExpire(t *testing.T) {
	const admin = "admin-token-0123456789"
	f := newFixture(t, fixtureOpts{tokens: []Token{{Name: "ops", Token: admin, Role: RoleAdmin}}})
	f.token = admin

	r := f.must(201, "POST", "/v1/tokens", `{"name":"ci","role":"reader","expires_in":"1h"}`)
	var created struct {
		Name, Role, Token string
		Expires           *time.Time
	}
	r.json(t, &created)
	if created.Name != "ci" || created.Role != "reader" || len(created.Token) != 43 || created.Expires == nil {
		t.Fatalf("created %+v", created)
	}
	f.must(201, "POST", "/v1/tokens", `{"name":"forever","role":"admin"}`)
	f.wantProblem(409, "token_exists", "body.name", "POST", "/v1/tokens", `{"name":"ci","role":"admin"}`)
	f.wantProblem(409, "token_exists", "body.name", "POST", "/v1/tokens", `{"name":"ops","role":"admin"}`)
	f.wantProblem(400, "bad_request", "", "POST", "/v1/tokens", `{"name":"x","role":"root"}`)
	if p := f.wantProblem(400, "bad_request", "body.expires_in", "POST", "/v1/tokens", `{"name":"x","role":"reader","expires_in":"2562048h"}`); !strings.Contains(p.Detail, "at most 106751d") {
		t.Errorf("a duration too long: %q, want the largest named", p.Detail)
	}
	if p := f.wantProblem(400, "bad_request", "body.expires_in", "POST", "/v1/tokens", `{"name":"x","role":"reader","expires_in":"soon"}`); !strings.Contains(p.Detail, `"90s"`) {
		t.Errorf("a duration of no unit: %q, want examples", p.Detail)
	}
	// A life shorter than a minute would give a token expired when made
	// (its expiry is kept to the second): refused.
	for _, d := range []string{"1ns", "59s"} {
		if p := f.wantProblem(400, "bad_request", "body.expires_in", "POST", "/v1/tokens", `{"name":"x","role":"reader","expires_in":"`+d+`"}`); !strings.Contains(p.Detail, "want 1m0s or longer") {
			t.Errorf("expires_in %s: %q", d, p.Detail)
		}
	}

	// The new token reads, and is a reader only.
	bearer := []string{"Authorization", "Bearer " + created.Token}
	f.must(200, "GET", "/v1/datasets", "", bearer...)
	f.wantProblem(403, "forbidden", "", "GET", "/v1/tokens", "", bearer...)

	// Listed without the token or its hash.
	r = f.must(200, "GET", "/v1/tokens", "")
	if s := string(r.body); !strings.Contains(s, `"name":"ci"`) || !strings.Contains(s, `"name":"forever"`) ||
		strings.Contains(s, created.Token) || strings.Contains(s, created.Token[len(created.Token)-4:]) || strings.Contains(s, "sha256") {
		t.Fatalf("list: %s", s)
	}
	var list struct {
		Tokens []tokenJSON `json:"tokens"`
	}
	r.json(t, &list)
	if len(list.Tokens) != 3 || list.Tokens[0].Name != "ci" || list.Tokens[0].Source != "api" || list.Tokens[0].Created == nil ||
		list.Tokens[2].Name != "ops" || list.Tokens[2].Source != "config" || list.Tokens[2].Role != "admin" || list.Tokens[2].Created != nil {
		t.Fatalf("list with the config token: %s", r.body)
	}
	if strings.Contains(string(r.body), admin) {
		t.Fatalf("list shows the config token: %s", r.body)
	}

	// A second node on the same store.
	node2, err := New(Options{DB: f.db, Adapters: f.svc, Tokens: []Token{{Name: "ops", Token: admin, Role: RoleAdmin}}})
	if err != nil {
		t.Fatal(err)
	}
	ts2 := httptest.NewServer(node2.Handler())
	defer ts2.Close()
	get2 := func() int {
		req, _ := http.NewRequest("GET", ts2.URL+"/v1/datasets", nil)
		req.Header.Set("Authorization", "Bearer "+created.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get2(); got != 200 {
		t.Fatalf("node 2 with the new token: %d", got)
	}

	// Expired: 401 token_expired, on the clock of the server.
	f.srv.now = func() time.Time { return time.Now().Add(61 * time.Minute) }
	p := f.wantProblem(401, "token_expired", "", "GET", "/v1/datasets", "", bearer...)
	if strings.Contains(p.Detail, created.Token) {
		t.Fatalf("the token in a problem: %s", p.Detail)
	}
	r = f.must(200, "GET", "/v1/tokens", "")
	if !strings.Contains(string(r.body), `"expired":true`) {
		t.Fatalf("list after expiry: %s", r.body)
	}
	f.srv.now = time.Now

	// Revoked: refused at once here, within TokenRefresh on node 2, and
	// answered as an unknown token.
	start := time.Now()
	f.must(204, "DELETE", "/v1/tokens/ci", "")
	f.wantProblem(401, "unauthorized", "", "GET", "/v1/datasets", "", bearer...)
	for get2() != http.StatusUnauthorized {
		if time.Since(start) > TokenRefresh+time.Second {
			t.Fatalf("node 2 still accepts a token revoked %v ago", time.Since(start))
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.wantProblem(404, "token_not_found", "name", "DELETE", "/v1/tokens/ci", "")
	f.wantProblem(401, "unauthorized", "", "GET", "/v1/datasets", "", "Authorization", "Bearer not-a-token-of-anyone")
}

// TestAPITokens_NeedAuth: a server without tokens checks none, so it
// makes none.
func TestAPITokens_NeedAuth(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.wantProblem(409, "auth_disabled", "", "POST", "/v1/tokens", `{"name":"ci","role":"reader"}`)
}

// TestTokenSet_Hashes: a token given by its hash is accepted as the
// token itself would be.
func TestTokenSet_Hashes(t *testing.T) {
	ts, err := newTokenSet([]Token{{Name: "h", Hash: HashToken("the-secret-token-text"), Role: RoleReader}})
	if err != nil {
		t.Fatal(err)
	}
	if tok, ok := ts.lookup("Bearer the-secret-token-text"); !ok || tok.Name != "h" {
		t.Fatalf("lookup: %+v %v", tok, ok)
	}
	if _, ok := ts.lookup("Bearer " + HashToken("the-secret-token-text")); ok {
		t.Fatal("the hash itself accepted as a token")
	}
	for _, bad := range []Token{
		{Name: "a", Hash: "sha256:00", Role: RoleReader},
		{Name: "b", Token: "x", Hash: HashToken("x"), Role: RoleReader},
	} {
		if _, err := newTokenSet([]Token{bad}); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
