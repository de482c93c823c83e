package server

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func TestCheckListen(t *testing.T) {
	tok := []Token{{Name: "a", Token: "t", Role: RoleReader}}
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:1": true, "[::1]:80": true, "127.1.2.3:9": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.1:80": false, "[::]:80": false, "example.com:80": false, "nonsense": false,
	} {
		if err := CheckListen(addr, nil); (err == nil) != ok {
			t.Errorf("CheckListen(%q, no tokens) = %v", addr, err)
		}
		if addr != "nonsense" {
			if err := CheckListen(addr, tok); err != nil {
				t.Errorf("CheckListen(%q, tokens) = %v", addr, err)
			}
		}
	}
}

var pathParamRE = regexp.MustCompile(`\{[a-z_]+\}`)

// TestAuth_EveryRouteEveryRole walks every operation of the OpenAPI
// document with no token, a wrong token and each role: below the
// operation's role the answer is 401 or 403, at or above it the request
// reaches the handler (any answer but 401/403, never a 500).
func TestAuth_EveryRouteEveryRole(t *testing.T) {
	tokens := []Token{
		{Name: "r", Token: "reader-tok", Role: RoleReader},
		{Name: "o", Token: "operator-tok", Role: RoleOperator},
		{Name: "a", Token: "admin-tok", Role: RoleAdmin},
	}
	f := newFixture(t, fixtureOpts{tokens: tokens, cluster: testCluster()})
	var keys []string
	for k := range f.srv.api.ops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	counts := map[string]int{}
	for _, k := range keys {
		op := f.srv.api.ops[k]
		path := pathParamRE.ReplaceAllStringFunc(op.path, func(p string) string {
			if p == "{version}" {
				return "1"
			}
			return "zz"
		})
		// Destructive operations would break later checks; they target "zz".
		try := func(auth string) int {
			var hdr []string
			if auth != "" {
				hdr = []string{"Authorization", auth}
			}
			body := ""
			if op.op.RequestBody != nil && op.method != "PUT" || strings.Contains(op.path, "connections/{name}") && op.method == "PUT" || strings.Contains(op.path, "adapters/{name}") && op.method == "PUT" {
				body = "{}"
			}
			r := f.do(op.method, path, body, hdr...)
			if r.status >= 500 {
				t.Errorf("%s with %q: status %d: %s", k, auth, r.status, r.body)
			}
			return r.status
		}
		if op.role == RoleNone {
			if s := try(""); s == 401 || s == 403 {
				t.Errorf("%s needs no token but answered %d", k, s)
			}
			continue
		}
		if s := try(""); s != 401 {
			t.Errorf("%s without a token: %d, want 401", k, s)
		}
		if s := try("Bearer wrong"); s != 401 {
			t.Errorf("%s with a wrong token: %d, want 401", k, s)
		}
		if s := try("Basic YTpi"); s != 401 {
			t.Errorf("%s with basic auth: %d, want 401", k, s)
		}
		for _, tok := range tokens {
			s := try("Bearer " + tok.Token)
			allowed := tok.Role >= op.role
			switch {
			case allowed && (s == 401 || s == 403):
				t.Errorf("%s as %s: %d, want the handler's answer", k, tok.Role, s)
			case !allowed && s != 403:
				t.Errorf("%s as %s: %d, want 403", k, tok.Role, s)
			}
			counts[fmt.Sprintf("%s>=%s:%v", tok.Role, op.role, allowed)]++
		}
	}
	if len(keys) < 30 {
		t.Fatalf("walked only %d operations", len(keys))
	}
	t.Logf("walked %d operations: %v", len(keys), counts)
}

func TestTokenSet(t *testing.T) {
	if _, err := newTokenSet([]Token{{Name: "a", Token: "", Role: RoleAdmin}}); err == nil {
		t.Fatal("empty token accepted")
	}
	if _, err := newTokenSet([]Token{{Name: "a", Token: "x", Role: RoleAdmin}, {Name: "b", Token: "x", Role: RoleReader}}); err == nil {
		t.Fatal("duplicate token accepted")
	}
	ts, err := newTokenSet([]Token{{Name: "a", Token: "x", Role: RoleOperator}})
	if err != nil {
		t.Fatal(err)
	}
	for h, ok := range map[string]bool{"Bearer x": true, "bearer x": true, "Bearer  x ": true, "Bearer y": false, "x": false, "Bearer ": false, "": false} {
		tok, got := ts.lookup(h)
		if got != ok || (ok && (tok.Role != RoleOperator || tok.Token != "")) {
			t.Errorf("lookup(%q) = %+v %v", h, tok, got)
		}
	}
}

// TestLog_TokenNamedOnlyWhenOne: admin actions log the name of the token
// that asked; on a server without tokens they log no token attribute
// (never token=<nil> or token="").
func TestLog_TokenNamedOnlyWhenOne(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v := f.run("products")
	f.must(200, "PUT", "/v1/datasets/products/tags/first", "")
	f.must(200, "POST", "/v1/datasets/products/gc", "")
	f.run("products")
	f.must(200, "POST", "/v1/datasets/products/rollback", `{"version":`+itoa(v)+`}`)
	logs := f.logs.String()
	if !strings.Contains(logs, "dataset rolled back") || !strings.Contains(logs, "garbage collected") {
		t.Fatalf("no admin log lines:\n%s", logs)
	}
	if strings.Contains(logs, "token=") {
		t.Errorf("a token attribute on a server without tokens:\n%s", logs)
	}
	f = newFixture(t, fixtureOpts{tokens: []Token{{Name: "ops", Token: "ops-token-Kq3", Role: RoleAdmin}}})
	f.must(200, "POST", "/v1/adapters/products/runs?wait=true", "", "Authorization", "Bearer ops-token-Kq3")
	f.must(200, "POST", "/v1/datasets/products/gc", "", "Authorization", "Bearer ops-token-Kq3")
	if logs = f.logs.String(); !strings.Contains(logs, "token=ops") {
		t.Errorf("no token name with tokens:\n%s", logs)
	}
}
