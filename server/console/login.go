package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/server"
)

// How a browser logs in: the login form takes a bearer token once, and
// the server's browser sessions (server.Server.Login,
// BrowserSession, Logout) do the rest.

// viewer is who looks at a console page: the browser's session, and the
// API operations it may call.
type viewer struct {
	server.Session
	// operation looks up an API operation (Server.Operation).
	operation func(op string) (server.Operation, bool)
}

// May reports whether the viewer may call the API operation op ("PUT
// /v1/datasets/{dataset}/tags/{tag}"), so that a template shows an action
// exactly to those the API lets do it: a global operation only to a
// token for every dataset. An unknown operation is an error, which fails
// the page (and its tests) rather than hiding a button.
func (v viewer) May(op string) (bool, error) {
	o, ok := v.operation(op)
	if !ok {
		return false, fmt.Errorf("console: no API operation %q", op)
	}
	return v.Role >= o.Role && (!o.Global() || v.Grant.All()), nil
}

// who returns the viewer of r.
func (c *console) who(r *http.Request) viewer {
	return viewer{Session: c.s.BrowserSession(r), operation: c.s.Operation}
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
	_, err := c.s.Login(w, r, r.PostFormValue("token"))
	var throttled *server.LoginThrottled
	switch {
	case errors.As(err, &throttled):
		w.Header().Set("Retry-After", strconv.Itoa(throttled.RetryAfter))
		if sw, ok := w.(*statusWriter); ok {
			sw.code = "too_many_requests"
		}
		return c.render(w, r, http.StatusTooManyRequests, "login", v, loginPage{Next: next,
			Problem: fmt.Sprintf("Too many failed logins from your address: try again in %d s.", throttled.RetryAfter)})
	case errors.Is(err, server.ErrLoginRefused):
		return c.render(w, r, http.StatusUnauthorized, "login", v, loginPage{Next: next, Problem: "That is not a valid token."})
	case err != nil:
		return err
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// logout answers POST /ui/logout: the session is ended on every node and
// the cookie cleared.
func (c *console) logout(w http.ResponseWriter, r *http.Request, v viewer) error {
	if err := c.s.Logout(w, r, v.Session); err != nil {
		return err
	}
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
