package console

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/server"
)

// TestConsoleLogin_Throttled: after some failed logins an address gets
// 429 with Retry-After, its right token included, and no cookie; other
// addresses log in; Retry-After later it may try again. The refusal is
// in the audit trail (too_many_requests) and in the log once, naming the
// address and never a token.
func TestConsoleLogin_Throttled(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	f := newFixture(t, fixtureOpts{audit: server.AuditOptions{TrustedProxies: trusted}, now: func() time.Time { return time.Unix(0, clock.Load()) },
		tokens: []server.Token{{Name: "root", Token: auditAdminTok, Role: server.RoleAdmin}, {Name: "viewer", Token: auditReaderTok, Role: server.RoleReader}}})
	from := func(addr string) []string { return []string{"X-Forwarded-For", addr} }
	attacker := newBrowser(t, f)
	failed := 0
	for ; failed < 100; failed++ {
		r := attacker.post("/ui/login", url.Values{"token": {"wrong-" + strconv.Itoa(failed)}}, from("198.51.100.7")...)
		if r.status == http.StatusTooManyRequests {
			break
		}
		if r.status != http.StatusUnauthorized {
			t.Fatalf("failed login %d: %d", failed, r.status)
		}
	}
	if failed == 0 || failed == 100 {
		t.Fatalf("throttled after %d failed logins", failed)
	}
	var wait int
	for _, tok := range []string{"wrong-again", auditAdminTok} {
		r := attacker.post("/ui/login", url.Values{"token": {tok}}, from("198.51.100.7")...)
		if r.status != http.StatusTooManyRequests {
			t.Fatalf("login after %d failures: %d, want 429", failed, r.status)
		}
		var err error
		if wait, err = strconv.Atoi(r.header.Get("Retry-After")); err != nil || wait <= 0 {
			t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
		}
		if len(r.header.Values("Set-Cookie")) != 0 {
			t.Error("a throttled login got a cookie")
		}
		if !strings.Contains(string(r.body), "Too many failed logins") {
			t.Errorf("the login page does not say why: %s", r.body)
		}
	}
	if r := newBrowser(t, f).post("/ui/login", url.Values{"token": {auditReaderTok}}, from("198.51.100.8")...); r.status != http.StatusSeeOther {
		t.Fatalf("another address's login: %d", r.status)
	}
	clock.Add(int64(time.Duration(wait)*time.Second + time.Millisecond))
	if r := attacker.post("/ui/login", url.Values{"token": {auditAdminTok}}, from("198.51.100.7")...); r.status != http.StatusSeeOther {
		t.Fatalf("Retry-After later, the right token: %d", r.status)
	}
	attacker.page("/ui/")

	var throttled []server.AuditEntry
	for _, e := range f.auditTrail("action=login") {
		if e.Status == http.StatusTooManyRequests {
			throttled = append(throttled, e)
		}
	}
	if len(throttled) != 3 {
		t.Fatalf("%d throttled logins in the trail, want 3", len(throttled))
	}
	for _, e := range throttled {
		if e.Code != "too_many_requests" || e.Remote != "198.51.100.7" || e.Actor != "anonymous" {
			t.Errorf("throttled login recorded as %+v", e)
		}
	}
	logs := f.logs.String()
	if n := strings.Count(logs, "console logins throttled"); n != 1 || !strings.Contains(logs, "remote=198.51.100.7") {
		t.Errorf("%d throttle log lines:\n%s", n, logs)
	}
	for _, tok := range []string{auditAdminTok, auditReaderTok} {
		if strings.Contains(logs, tok) {
			t.Error("the log holds a token")
		}
	}
}

// TestConsole_LoginWithAPIToken: the console's login takes an API token;
// its session ends when the token is revoked, and a token created later
// under the same name does not revive it.
func TestConsole_LoginWithAPIToken(t *testing.T) {
	const admin = "admin-token-0123456789"
	f := newFixture(t, fixtureOpts{tokens: []server.Token{{Name: "ops", Token: admin, Role: server.RoleAdmin}}})
	f.token = admin
	r := f.must(201, "POST", "/v1/tokens", `{"name":"analyst","role":"reader","expires_in":"1h"}`)
	var created struct{ Token string }
	r.json(t, &created)

	b := newBrowser(t, f)
	r = b.post("/ui/login", url.Values{"token": {created.Token}, "next": {"/ui/"}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/" {
		t.Fatalf("login with an API token: %d %q %s", r.status, r.header.Get("Location"), r.body)
	}
	if ck := r.header.Get("Set-Cookie"); strings.Contains(ck, created.Token) {
		t.Fatalf("the session cookie holds the token: %s", ck)
	}
	b.page("/ui/", "analyst")
	wantStatus(t, "reader connections page", b.get("/ui/connections"), http.StatusForbidden)
	// The audit trail names the API token that logged in.
	var trail server.AuditPage
	f.must(200, "GET", "/v1/audit?action=login", "").json(t, &trail)
	if len(trail.Entries) != 1 || trail.Entries[0].Actor != "analyst" || trail.Entries[0].Status != http.StatusSeeOther {
		t.Fatalf("login entries: %+v", trail.Entries)
	}

	f.must(204, "DELETE", "/v1/tokens/analyst", "")
	if r := b.get("/ui/"); r.status != http.StatusSeeOther {
		t.Fatalf("a session of a revoked token: %d", r.status)
	}
	r = newBrowser(t, f).post("/ui/login", url.Values{"token": {created.Token}})
	wantStatus(t, "login with a revoked token", r, http.StatusUnauthorized)
	// Another token of the same name: the old session stays ended.
	f.must(201, "POST", "/v1/tokens", `{"name":"analyst","role":"admin"}`)
	if r := b.get("/ui/"); r.status != http.StatusSeeOther {
		t.Fatalf("a session of a revoked token, revived by a new token of its name: %d", r.status)
	}
}
