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
// asking another, it ends at its expiry (SessionLifetime after the
// login), when no request used it for the idle timeout (a session
// cookie value, below), at a logout (recorded for every node: sessions.go) or when its token leaves
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

// SessionLifetime is how long a console login lasts at most, however
// busy the session: the absolute expiry.
const SessionLifetime = 12 * time.Hour

// DefaultSessionIdle is Options.SessionIdle when zero.
const DefaultSessionIdle = 30 * time.Minute

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

// A session cookie value is "LOGIN.IDLE.IMAC": LOGIN is what the login
// made ("v1.NAME.EXPIRY.MAC", or "a1.NAME.EXPIRY.MAC" for an API token),
// fixed for the session's life, which a logout ends (sessions.go); IDLE
// is the idle deadline in Unix seconds, and IMAC an HMAC-SHA256 of LOGIN
// and IDLE under the key that signed LOGIN. Each request of a session
// answers with IDLE moved to the request's time plus the idle timeout
// (Options.SessionIdle), never past EXPIRY; a session unused until IDLE
// has ended on every node, as it has past EXPIRY.

// session is a parsed session cookie value; its signatures are checked
// by checkSession and checkAPISession.
type session struct {
	login   string // "v1.NAME.EXPIRY.MAC" or "a1.NAME.EXPIRY.MAC"
	kind    string // "v1" or "a1"
	name    string
	expires time.Time // the absolute expiry
	mac     []byte    // LOGIN's
	idle    time.Time // the idle deadline
	idleMAC []byte
}

// parseSession parses a session cookie value; false when it is malformed.
func parseSession(value string) (session, bool) {
	parts := strings.Split(value, ".")
	if len(parts) != 6 || (parts[0] != "v1" && parts[0] != "a1") {
		return session{}, false
	}
	b64 := base64.RawURLEncoding
	name, err1 := b64.DecodeString(parts[1])
	exp, err2 := strconv.ParseInt(parts[2], 10, 64)
	mac, err3 := b64.DecodeString(parts[3])
	idle, err4 := strconv.ParseInt(parts[4], 10, 64)
	idleMAC, err5 := b64.DecodeString(parts[5])
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return session{}, false
	}
	return session{login: strings.Join(parts[:4], "."), kind: parts[0], name: string(name),
		expires: time.Unix(exp, 0), mac: mac, idle: time.Unix(idle, 0), idleMAC: idleMAC}, true
}

// live reports whether the session is neither past its expiry nor idle
// at now.
func (s session) live(now time.Time) bool {
	return now.Unix() < s.expires.Unix() && now.Unix() < s.idle.Unix()
}

// idleValid reports whether the idle deadline is signed by key.
func (s session) idleValid(key []byte) bool {
	return hmac.Equal(s.idleMAC, idleMAC(key, s.login, s.idle.Unix()))
}

// idleMAC signs the idle deadline of the session login.
func idleMAC(key []byte, login string, idle int64) []byte {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "idle\x00%s\x00%d", login, idle)
	return m.Sum(nil)
}

// withIdle returns the cookie value of the session login, signed by key,
// idle at idle.
func withIdle(key []byte, login string, idle time.Time) string {
	return login + "." + strconv.FormatInt(idle.Unix(), 10) + "." + base64.RawURLEncoding.EncodeToString(idleMAC(key, login, idle.Unix()))
}

// idleDeadline is the idle deadline of a session used at now: now plus
// the idle timeout, never past the session's expiry.
func idleDeadline(now time.Time, idle time.Duration, expires time.Time) time.Time {
	if d := now.Add(idle); d.Before(expires) {
		return d
	}
	return expires
}

// newSession returns the cookie value of a session of token i, valid
// until expiry and idle at idle.
func (s *tokenSet) newSession(i int, expiry, idle time.Time) string {
	name := s.tokens[i].Name
	exp := expiry.Unix()
	b64 := base64.RawURLEncoding
	login := "v1." + b64.EncodeToString([]byte(name)) + "." + strconv.FormatInt(exp, 10) + "." + b64.EncodeToString(sessionMAC(s.sessionKeys[i], name, exp))
	return withIdle(s.sessionKeys[i], login, idle)
}

// checkSession returns the token a session cookie value was made for and
// the key that signed it, false when it is malformed, expired or idle at
// now, or signed by no configured token.
func (s *tokenSet) checkSession(value string, now time.Time) (Token, []byte, bool) {
	ss, ok := parseSession(value)
	if !ok || ss.kind != "v1" || !ss.live(now) {
		return Token{}, nil, false
	}
	found := -1
	for i, t := range s.tokens {
		if t.Name == ss.name && hmac.Equal(ss.mac, sessionMAC(s.sessionKeys[i], t.Name, ss.expires.Unix())) && ss.idleValid(s.sessionKeys[i]) {
			found = i
		}
	}
	if found < 0 {
		return Token{}, nil, false
	}
	return s.tokens[found], s.sessionKeys[found], true
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
	// session is the viewer's session and key the key that signed it;
	// zero without one.
	session session
	key     []byte
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
	ss, ok := parseSession(ck.Value)
	if !ok {
		return v
	}
	if ended, err := c.s.endedSessions.isEnded(r.Context(), ss.login, c.s.now()); ended || err != nil {
		if err != nil {
			// Refused while the store cannot say: a logout must hold.
			c.s.log.Warn("console session refused: reading the ended sessions", "err", err)
		}
		return v
	}
	if t, key, ok := c.s.tokens.checkSession(ck.Value, c.s.now()); ok {
		v.Name, v.Role, v.Grant, v.session, v.key = t.Name, t.Role, t.grant, ss, key
	} else if t, ok := c.checkAPISession(r, ss); ok {
		v.Name, v.Role, v.Grant, v.session, v.key = t.Name, t.Role, t.grant, ss, c.s.apiTokens.sessionKey
	}
	return v
}

// slide answers a request of v's session with the session's idle
// deadline moved to now plus the idle timeout (never past its expiry).
func (c *console) slide(w http.ResponseWriter, r *http.Request, v viewer) {
	if v.key == nil {
		return
	}
	now := c.s.now()
	idle := idleDeadline(now, c.s.sessionIdle, v.session.expires)
	if idle.Unix() <= v.session.idle.Unix() {
		return
	}
	setSessionCookie(w, r, withIdle(v.key, v.session.login, idle), v.session.expires, now)
}

// setSessionCookie sets the session cookie to value, kept by the browser
// until expires.
func setSessionCookie(w http.ResponseWriter, r *http.Request, value string, expires, now time.Time) {
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    value,
		Path:     "/ui/",
		Expires:  expires,
		MaxAge:   max(1, int(expires.Sub(now)/time.Second)),
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
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
// whose stored hash is hash, valid until expiry and idle at idle.
func (c *console) newAPISession(name, hash string, expiry, idle time.Time) string {
	exp := expiry.Unix()
	b64 := base64.RawURLEncoding
	login := "a1." + b64.EncodeToString([]byte(name)) + "." + strconv.FormatInt(exp, 10) + "." + b64.EncodeToString(apiSessionMAC(c.s.apiTokens.sessionKey, name, hash, exp))
	return withIdle(c.s.apiTokens.sessionKey, login, idle)
}

// checkAPISession returns the API token of a session, false when it is
// not an API token's, expired or idle, not signed by this node, or its
// token is gone or expired.
func (c *console) checkAPISession(r *http.Request, ss session) (Token, bool) {
	now := c.s.now()
	if ss.kind != "a1" || !ss.live(now) || !ss.idleValid(c.s.apiTokens.sessionKey) {
		return Token{}, false
	}
	t, ok, err := c.s.apiTokens.named(r.Context(), ss.name, now)
	if err != nil || !ok || (!t.rec.Expires.IsZero() && !now.Before(t.rec.Expires)) ||
		!hmac.Equal(ss.mac, apiSessionMAC(c.s.apiTokens.sessionKey, ss.name, t.rec.Hash, ss.expires.Unix())) {
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
	now := c.s.now()
	exp := now.Add(SessionLifetime)
	var value string
	var t Token
	if i >= 0 {
		value, t = c.s.tokens.newSession(i, exp, idleDeadline(now, c.s.sessionIdle, exp)), c.s.tokens.tokens[i]
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
		value, t = c.newAPISession(at.Name, rec.rec.Hash, exp, idleDeadline(now, c.s.sessionIdle, exp)), at
	}
	w.Header().Del("Set-Cookie") // a session this request slid is replaced
	setSessionCookie(w, r, value, exp, now)
	c.s.log.Info("console login", "token", t.Name, "role", t.Role.String())
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// logout answers POST /ui/logout: the session is ended on every node
// (sessions.go), so that a copy of the cookie no longer logs in, and the
// cookie is cleared.
func (c *console) logout(w http.ResponseWriter, r *http.Request, v viewer) error {
	if v.LoggedIn() && v.Auth && v.key != nil {
		if err := c.s.endedSessions.end(r.Context(), v.session.login, v.session.expires); err != nil {
			return err
		}
		c.s.log.Info("console logout", "token", v.Name)
	}
	w.Header().Del("Set-Cookie") // the session this request slid ends
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
