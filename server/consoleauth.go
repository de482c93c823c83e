package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
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
// asking another, it ends at its expiry or when its token leaves the
// configuration (or changes), and the role is the token's role at each
// request. The cookie is HttpOnly (no script reads it), SameSite=Strict
// (no other site's page sends it), Secure when the request came over TLS,
// and scoped to /ui/. Forms are protected against cross-site requests by
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
	// Auth is true when tokens are configured (a login exists).
	Auth bool
	ops  map[string]apiOp
}

// LoggedIn reports whether the viewer has a role.
func (v viewer) LoggedIn() bool { return v.Role > RoleNone }

// May reports whether the viewer may call the API operation op ("PUT
// /v1/datasets/{dataset}/tags/{tag}"), so that a template shows an action
// exactly to those the API lets do it. An unknown operation is an error,
// which fails the page (and its tests) rather than hiding a button.
func (v viewer) May(op string) (bool, error) {
	o, ok := v.ops[op]
	if !ok {
		return false, fmt.Errorf("server: console: no API operation %q", op)
	}
	return v.Role >= o.role, nil
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
	if t, ok := c.s.tokens.checkSession(ck.Value, c.s.now()); ok {
		v.Name, v.Role = t.Name, t.Role
	}
	return v
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
	i := c.s.tokens.find(strings.TrimSpace(r.PostFormValue("token")))
	if i < 0 {
		c.s.log.Info("console login refused: unknown token", "remote", r.RemoteAddr)
		return c.render(w, r, http.StatusUnauthorized, "login", v, loginPage{Next: next, Problem: "That is not a configured token."})
	}
	exp := c.s.now().Add(sessionTTL)
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    c.s.tokens.newSession(i, exp),
		Path:     "/ui/",
		Expires:  exp,
		MaxAge:   int(sessionTTL / time.Second),
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
	t := c.s.tokens.tokens[i]
	c.s.log.Info("console login", "token", t.Name, "role", t.Role.String())
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// logout answers POST /ui/logout: the cookie is cleared (the session
// value itself stays valid until it expires, as a stateless session must;
// rotating the token ends every session of it).
func (c *console) logout(w http.ResponseWriter, r *http.Request, v viewer) error {
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
