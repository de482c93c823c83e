package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// How a browser presents a token to the console.
//
// The login form takes a bearer token once; the server checks it as the
// API does (tokenSet.find) and answers with a session cookie that holds
// no token: the token's name, an expiry, and an HMAC-SHA256 of both under
// a key derived from the token itself (sessionKey). The session is
// stateless: any process with the same auth.tokens checks it without
// asking another, it ends at its expiry (sessionTTL after the login), at
// a logout (recorded for every node: sessions.go) or when its token leaves
// the configuration (or changes), and the role is the token's role at each
// request. A token given to the server by its hash, or made through the
// API, has no text for the server to derive a key from: its sessions are
// signed with a key drawn at start and end when the process does (API
// tokens: checkAPISession). The cookie is HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it), Secure when the
// request came over TLS, and scoped to /ui/. Forms are protected against cross-site requests by
// the API's own rule (browser.go: Sec-Fetch-Site, then Origin against
// Host) on every unsafe method, which also covers a server without
// tokens, where no cookie exists; such a server answers the console only
// under a loopback host name, so a DNS-rebound name cannot reach it.
// Tokens never appear in a URL, a page or a log line.

// sessionCookie is the console's session cookie.
const sessionCookie = "snapstore_session"

// sessionTTL is how long a console login lasts.
const sessionTTL = 12 * time.Hour

// sessionKey derives the key that signs the sessions of one token.
func sessionKey(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("snapstore console session key v1"))
	return m.Sum(nil)
}

// sessionMAC signs one session: the token name and the expiry.
func sessionMAC(key []byte, name string, expiry int64) []byte {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "v1\x00%s\x00%d", name, expiry)
	return m.Sum(nil)
}

// newSession returns the cookie value of a session of token i, valid
// until expiry.
func (s *tokenSet) newSession(i int, expiry time.Time) string {
	name := s.tokens[i].Name
	exp := expiry.Unix()
	b64 := base64.RawURLEncoding
	return "v1." + b64.EncodeToString([]byte(name)) + "." + strconv.FormatInt(exp, 10) + "." + b64.EncodeToString(sessionMAC(s.sessionKeys[i], name, exp))
}

// checkSession returns the token a session cookie value was made for,
// false when it is malformed, expired at now, or signed by no configured
// token.
func (s *tokenSet) checkSession(value string, now time.Time) (Token, bool) {
	parts := strings.Split(value, ".")
	if len(parts) != 4 || parts[0] != "v1" {
		return Token{}, false
	}
	b64 := base64.RawURLEncoding
	name, err1 := b64.DecodeString(parts[1])
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	mac, err3 := b64.DecodeString(parts[3])
	if err1 != nil || err2 != nil || err3 != nil || now.Unix() >= exp {
		return Token{}, false
	}
	found := -1
	for i, t := range s.tokens {
		if t.Name == string(name) && hmac.Equal(mac, sessionMAC(s.sessionKeys[i], t.Name, exp)) {
			found = i
		}
	}
	if found < 0 {
		return Token{}, false
	}
	return s.tokens[found], true
}

// viewer is who looks at a console page: the token behind the session, or
// everyone as admin when no tokens are configured.
type viewer struct {
	// Name is the token's name, "" without auth.
	Name string
	// Role is the token's role; RoleNone when not logged in.
	Role Role
	// Grant is the datasets the token may reach (grants.go).
	Grant Grant
	// Auth is true when tokens are configured (a login exists).
	Auth bool
	ops  map[string]apiOp
}

// LoggedIn reports whether the viewer has a role.
func (v viewer) LoggedIn() bool { return v.Role > RoleNone }

// May reports whether the viewer may call the API operation op ("PUT
// /v1/datasets/{dataset}/tags/{tag}"), so that a template shows an action
// exactly to those the API lets do it: a global operation (grantAll) only
// to a token for every dataset. An unknown operation is an error,
// which fails the page (and its tests) rather than hiding a button.
func (v viewer) May(op string) (bool, error) {
	o, ok := v.ops[op]
	if !ok {
		return false, fmt.Errorf("server: console: no API operation %q", op)
	}
	return v.Role >= o.role && (o.grant != grantAll || v.Grant.All()), nil
}

// who returns the viewer of r.
func (c *console) who(r *http.Request) viewer {
	v := viewer{Auth: c.s.tokens.enabled(), ops: c.s.api.ops}
	if !v.Auth {
		v.Role = RoleAdmin
		return v
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return v
	}
	if ended, err := c.s.endedSessions.isEnded(r.Context(), ck.Value, c.s.now()); ended || err != nil {
		if err != nil {
			// Refused while the store cannot say: a logout must hold.
			c.s.log.Warn("console session refused: reading the ended sessions", "err", err)
		}
		return v
	}
	if t, ok := c.s.tokens.checkSession(ck.Value, c.s.now()); ok {
		v.Name, v.Role, v.Grant = t.Name, t.Role, t.grant
	} else if t, ok := c.checkAPISession(r, ck.Value); ok {
		v.Name, v.Role, v.Grant = t.Name, t.Role, t.grant
	}
	return v
}

// Sessions of API tokens (POST /v1/tokens) are "a1.NAME.EXPIRY.MAC",
// signed with the node's apiTokens.sessionKey over the name, the expiry
// and the token's stored hash; the token is looked up again at each
// request, so that a revoked or expired token ends its sessions within
// TokenRefresh, and a token created later under the same name (another
// hash) does not take them over.

// apiSessionMAC signs a session of the API token name whose stored hash is
// hash.
func apiSessionMAC(key []byte, name, hash string, expiry int64) []byte {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "a1\x00%s\x00%s\x00%d", name, hash, expiry)
	return m.Sum(nil)
}

// newAPISession returns the cookie value of a session of API token name,
// whose stored hash is hash.
func (c *console) newAPISession(name, hash string, expiry time.Time) string {
	exp := expiry.Unix()
	b64 := base64.RawURLEncoding
	return "a1." + b64.EncodeToString([]byte(name)) + "." + strconv.FormatInt(exp, 10) + "." + b64.EncodeToString(apiSessionMAC(c.s.apiTokens.sessionKey, name, hash, exp))
}

// checkAPISession returns the API token of a session cookie value, false
// when it is malformed, expired, not signed by this node, or its token is
// gone or expired.
func (c *console) checkAPISession(r *http.Request, value string) (Token, bool) {
	parts := strings.Split(value, ".")
	if len(parts) != 4 || parts[0] != "a1" {
		return Token{}, false
	}
	b64 := base64.RawURLEncoding
	name, err1 := b64.DecodeString(parts[1])
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	mac, err3 := b64.DecodeString(parts[3])
	now := c.s.now()
	if err1 != nil || err2 != nil || err3 != nil || now.Unix() >= exp {
		return Token{}, false
	}
	t, ok, err := c.s.apiTokens.named(r.Context(), string(name), now)
	if err != nil || !ok || (!t.rec.Expires.IsZero() && !now.Before(t.rec.Expires)) ||
		!hmac.Equal(mac, apiSessionMAC(c.s.apiTokens.sessionKey, string(name), t.rec.Hash, exp)) {
		return Token{}, false
	}
	return Token{Name: t.rec.Name, Role: t.role, Datasets: t.grant.Patterns(), grant: t.grant}, true
}

// loginPage is what the login form shows.
type loginPage struct {
	Next    string
	Problem string
}

// loginForm answers GET /ui/login.
func (c *console) loginForm(w http.ResponseWriter, r *http.Request, v viewer) error {
	if !v.Auth {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return nil
	}
	return c.render(w, r, http.StatusOK, "login", v, loginPage{Next: safeNext(r.URL.Query().Get("next"))})
}

// login answers POST /ui/login: checks the token of the form and sets the
// session cookie.
func (c *console) login(w http.ResponseWriter, r *http.Request, v viewer) error {
	next := safeNext(r.PostFormValue("next"))
	if !v.Auth {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
	// Failed logins are slowed down per client address (loginthrottle.go),
	// before the token is looked at.
	addr := c.s.trail.clientAddr(r)
	if wait := c.s.logins.begin(addr, c.s.now()); wait > 0 {
		secs := retryAfter(wait)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		if sw, ok := w.(*statusWriter); ok {
			sw.code = "too_many_requests"
		}
		return c.render(w, r, http.StatusTooManyRequests, "login", v, loginPage{Next: next,
			Problem: fmt.Sprintf("Too many failed logins from your address: try again in %d s.", secs)})
	}
	failed := false
	defer func() {
		if c.s.logins.end(addr, failed, c.s.now()) {
			c.s.log.Warn("console logins throttled: too many failed logins", "remote", addr, "retry_after_s", retryAfter(loginRefill))
		}
	}()
	text := strings.TrimSpace(r.PostFormValue("token"))
	i := c.s.tokens.find(text)
	exp := c.s.now().Add(sessionTTL)
	var value string
	var t Token
	if i >= 0 {
		value, t = c.s.tokens.newSession(i, exp), c.s.tokens.tokens[i]
	} else {
		at, ok, err := c.s.lookupAPIToken(r.Context(), "Bearer "+text)
		if err != nil && !errors.Is(err, ErrTokenExpired) {
			return err // the store did not answer: not the client's failure
		}
		if !ok {
			failed = true
			c.s.log.Info("console login refused: unknown or expired token", "remote", addr)
			return c.render(w, r, http.StatusUnauthorized, "login", v, loginPage{Next: next, Problem: "That is not a valid token."})
		}
		rec, _, _ := c.s.apiTokens.named(r.Context(), at.Name, c.s.now())
		if !rec.rec.Expires.IsZero() && rec.rec.Expires.Before(exp) {
			exp = rec.rec.Expires
		}
		value, t = c.newAPISession(at.Name, rec.rec.Hash, exp), at
	}
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    value,
		Path:     "/ui/",
		Expires:  exp,
		MaxAge:   int(sessionTTL / time.Second),
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
	c.s.log.Info("console login", "token", t.Name, "role", t.Role.String())
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// logout answers POST /ui/logout: the session is ended on every node
// (sessions.go), so that a copy of the cookie no longer logs in, and the
// cookie is cleared.
func (c *console) logout(w http.ResponseWriter, r *http.Request, v viewer) error {
	if ck, err := r.Cookie(sessionCookie); err == nil && v.LoggedIn() && v.Auth {
		if exp, ok := sessionExpiry(ck.Value); ok {
			if err := c.s.endedSessions.end(r.Context(), ck.Value, exp); err != nil {
				return err
			}
			c.s.log.Info("console logout", "token", v.Name)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/ui/", MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
	return nil
}

// safeNext returns next when it is a console path of this server, else
// the console's first page: a login never redirects elsewhere.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/ui/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/ui/"
	}
	return next
}
