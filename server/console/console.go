// Package console is the web console: server-rendered pages at /ui/
// over the same services as the JSON API (snapshot.DB, adapters.Service),
// never a second path to the data. Package server mounts it through
// server.Options.Console (New), and exports to it what it shares with the
// API: browser sessions (a login, the session of a request, a logout),
// the role and grant of each API operation, the lists and problems the
// API handlers use too. Its templates and static files live in the
// templates and static folders, embedded here, one template per page
// (pprof's internal/driver/html, pkgsite's static/): each page file
// defines "title" and "content" and the fragments that htmx fetches
// alone, and is parsed with layout.html into a template set of its own.
// Each route names the API operation it mirrors, whose x-snapstore-role
// is the least role that may use it, so the OpenAPI document stays the
// one authorisation table (server/consoleauth.go says how a browser's
// session is kept). Handlers gather data and call render; adding a page
// is one template and one handler registered in routes.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/notify"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

//go:embed templates static
var consoleFiles embed.FS

// console serves /ui/.
type console struct {
	s     *backend
	pages map[string]*template.Template // by page name (file name without .html)
	// static holds the files of static/ by path under it.
	static map[string]staticFile
	mux    *http.ServeMux
}

// consoleHandler is one console route's handler: it gathers data for v
// and renders, or returns an error that fail turns into a page.
type consoleHandler func(w http.ResponseWriter, r *http.Request, v viewer) error

// staticFile is one embedded static file.
type staticFile struct {
	body  []byte
	etag  string
	ctype string
}

// backend is what the console reads and changes: the server's exported
// surface (browser sessions, operations and grants, the API's lists and
// problems) and the services it serves.
type backend struct {
	*server.Server
	db       *snapshot.DB
	svc      *adapters.Service
	log      *slog.Logger
	now      func() time.Time
	notifier *notify.Notifier // nil: no webhook
	cluster  server.Cluster   // nil: the node runs alone
	build    string
}

// New returns the console of s: the handler of /ui and everything under
// /ui/ (server.Options.Console). Errors: a page that does not parse, a
// route mirroring an operation openapi.yaml does not document.
func New(s *server.Server) (http.Handler, error) {
	return newConsole(&backend{Server: s, db: s.DB(), svc: s.Adapters(), log: s.Logger(), now: s.Now,
		notifier: s.Notifier(), cluster: s.Cluster(), build: s.BuildVersion()})
}

// newConsole parses every page and registers the routes.
func newConsole(s *backend) (*console, error) {
	c := &console{s: s, pages: map[string]*template.Template{}, static: map[string]staticFile{}, mux: http.NewServeMux()}
	pages, err := fs.Glob(consoleFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, p := range pages {
		name := strings.TrimSuffix(path.Base(p), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New(name).Funcs(consoleFuncs).ParseFS(consoleFiles, "templates/layout.html", p)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		c.pages[name] = t
	}
	err = fs.WalkDir(consoleFiles, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := consoleFiles.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = http.DetectContentType(b)
		}
		c.static[strings.TrimPrefix(p, "static/")] = staticFile{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: ct}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := c.routes(); err != nil {
		return nil, err
	}
	return c, nil
}

// routes registers every console route: its pattern, the API operation
// whose role it needs ("" for none), and its handler.
func (c *console) routes() error {
	for _, rt := range []struct {
		pattern, op string
		h           consoleHandler
	}{
		{"GET /ui/{$}", "GET /v1/datasets", c.datasets},
		{"GET /ui/login", "", c.loginForm},
		{"POST /ui/login", "", c.login},
		{"POST /ui/logout", "", c.logout},
		{"GET /ui/api", "GET /openapi.json", c.apiDocs},
		{"GET /ui/static/{file...}", "", c.serveStatic},

		{"GET /ui/datasets/{dataset}", "GET /v1/datasets/{dataset}", c.dataset},
		{"GET /ui/datasets/{dataset}/rows", "GET /v1/datasets/{dataset}/rows", c.rows},
		{"GET /ui/datasets/{dataset}/diff", "GET /v1/datasets/{dataset}/diff", c.diff},
		{"GET /ui/datasets/{dataset}/rows/download", "GET /v1/datasets/{dataset}/rows", c.download(c.s.ServeRows)},
		{"GET /ui/datasets/{dataset}/diff/download", "GET /v1/datasets/{dataset}/diff", c.download(c.s.ServeDiff)},
		{"POST /ui/datasets/{dataset}/tags", "PUT /v1/datasets/{dataset}/tags/{tag}", c.tag},
		{"POST /ui/datasets/{dataset}/tags/{tag}/delete", "DELETE /v1/datasets/{dataset}/tags/{tag}", c.untag},
		{"GET /ui/datasets/{dataset}/rollback", "POST /v1/datasets/{dataset}/rollback", c.rollbackConfirm},
		{"POST /ui/datasets/{dataset}/rollback", "POST /v1/datasets/{dataset}/rollback", c.rollback},

		{"GET /ui/adapters", "GET /v1/adapters", c.adapters},
		{"GET /ui/adapters/new", "POST /v1/adapters", c.newAdapterForm},
		{"POST /ui/adapters", "POST /v1/adapters", c.createAdapter},
		{"GET /ui/adapters/{name}/edit", "PUT /v1/adapters/{name}", c.editAdapterForm},
		{"POST /ui/adapters/{name}", "PUT /v1/adapters/{name}", c.replaceAdapter},
		{"POST /ui/adapters/{name}/delete", "DELETE /v1/adapters/{name}", c.deleteAdapter},
		{"POST /ui/adapters/{name}/run", "POST /v1/adapters/{name}/runs", c.runAdapter},
		{"GET /ui/resources", "GET /v1/connections/{name}/resources", c.resourceOptions},

		{"GET /ui/runs", "GET /v1/adapters/{name}/runs", c.runs},
		{"GET /ui/runs/{id}", "GET /v1/runs/{id}", c.run},
		{"GET /ui/runs/{id}/live", "GET /v1/runs/{id}", c.runLive},

		{"GET /ui/connections", "GET /v1/connections", c.connections},
		{"GET /ui/connections/new", "POST /v1/connections", c.newConnectionForm},
		{"POST /ui/connections", "POST /v1/connections", c.createConnection},
		{"GET /ui/connections/{name}", "GET /v1/connections/{name}", c.connection},
		{"POST /ui/connections/{name}/test", "POST /v1/connections/{name}/test", c.testConnection},
		{"POST /ui/connections/{name}/delete", "DELETE /v1/connections/{name}", c.dropConnection},

		{"GET /ui/cluster", "GET /v1/cluster/backlog", c.clusterPage},

		{"GET /ui/audit", "GET /v1/audit", c.auditPageUI},
		{"GET /ui/notifications", "GET /v1/notifications/deliveries", c.notificationsPage},
		{"POST /ui/notifications/webhooks/{name}/test", "POST /v1/notifications/webhooks/{name}/test", c.testWebhook},

		{"GET /ui/gc", "GET /v1/datasets", c.gcPage},
		{"POST /ui/gc/{dataset}", "POST /v1/datasets/{dataset}/gc", c.gc},

		{"/ui/", "", c.notFound},
	} {
		var op server.Operation
		if rt.op != "" {
			var ok bool
			if op, ok = c.s.Operation(rt.op); !ok {
				return fmt.Errorf("console: route %s mirrors %q, which openapi.yaml does not document", rt.pattern, rt.op)
			}
		}
		c.handle(rt.pattern, rt.op, op, rt.h)
	}
	return nil
}

// ServeHTTP serves /ui and everything under /ui/.
func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ui" {
		http.Redirect(w, r, "/ui/", http.StatusFound)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// handle registers one route mirroring the API operation op (apiOp, its
// role and grant): security headers, the loopback-host rule, cross-origin
// protection and a size limit on forms, the viewer and the role check,
// then h; the server records the request (Server.ConsoleRequest: the
// latency histogram, and the audit trail when it is audited).
func (c *console) handle(pattern, op string, apiOp server.Operation, h consoleHandler) {
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		c.serve(sw, r, apiOp, h)
		c.s.ConsoleRequest(r, pattern, op, sw.statusCode(), sw.code, sw.outsideGrant, time.Since(start))
	})
}

// serve runs one request through the checks of handle.
func (c *console) serve(w http.ResponseWriter, r *http.Request, op server.Operation, h consoleHandler) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	v := viewer{Session: server.Session{Auth: c.s.AuthEnabled()}, operation: c.s.Operation}
	defer func() {
		if rec := recover(); rec != nil {
			if rec == http.ErrAbortHandler {
				panic(rec)
			}
			c.s.log.Error("console handler panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
			c.fail(w, r, v, fmt.Errorf("console: handler panicked: %v", rec))
		}
	}()
	if err := c.s.CheckBrowser(r); err != nil {
		c.fail(w, r, v, err)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		r.Body = http.MaxBytesReader(w, r.Body, server.MaxBodyBytes)
		if err := r.ParseForm(); err != nil {
			c.fail(w, r, v, &consoleError{status: http.StatusBadRequest, code: "bad_request", msg: "the form does not parse: " + err.Error()})
			return
		}
	}
	v = c.who(r)
	c.s.SlideSession(w, r, v.Session)
	if v.Role < op.Role {
		c.refuse(w, r, v, op.Role)
		return
	}
	if op.Global() && !v.Grant.All() {
		c.fail(w, r, v, &consoleError{status: http.StatusForbidden, code: "forbidden",
			msg: fmt.Sprintf("token %q is limited to some datasets; this needs a token for every dataset", v.Name)})
		return
	}
	if err := c.s.CheckGrant(r.Context(), v.Grant, op, func(name string) (string, error) { return r.PathValue(name), nil }); err != nil {
		if sw, ok := w.(*statusWriter); ok && server.OutsideGrant(err) {
			sw.outsideGrant = true
		}
		c.fail(w, r, v, err)
		return
	}
	if err := h(w, r, v); err != nil {
		// A handler may refuse outside the grant too, by a query
		// parameter (the runs page's adapter).
		if sw, ok := w.(*statusWriter); ok && server.OutsideGrant(err) {
			sw.outsideGrant = true
		}
		c.fail(w, r, v, err)
	}
}

// refuse answers a viewer whose role is below role: a login for one not
// logged in (a redirect for a page, 401 with HX-Redirect for htmx, a 401
// page for a form), 403 for one whose token's role is too low.
func (c *console) refuse(w http.ResponseWriter, r *http.Request, v viewer, role server.Role) {
	if v.LoggedIn() {
		c.fail(w, r, v, &consoleError{status: http.StatusForbidden, code: "forbidden",
			msg: fmt.Sprintf("token %q has role %s; this needs %s", v.Name, v.Role, role)})
		return
	}
	login := "/ui/login?next=" + url.QueryEscape(r.URL.RequestURI())
	switch {
	case r.Header.Get("HX-Request") != "":
		w.Header().Set("HX-Redirect", login)
		w.WriteHeader(http.StatusUnauthorized)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		http.Redirect(w, r, login, http.StatusSeeOther)
	default:
		c.fail(w, r, v, &consoleError{status: http.StatusUnauthorized, code: "unauthorized", msg: "log in first"})
	}
}

// consoleError is a refusal of the console's own checks, shown as a
// problem page.
type consoleError struct {
	status    int
	code, msg string
	field     string
}

func (e *consoleError) Error() string { return e.msg }

// pageData is what every page template gets: the viewer, the page's data
// and the server's build version.
type pageData struct {
	V     viewer
	D     any
	Build string
	// Section names the navigation entry to mark current.
	Section string
	// Clustered shows the cluster page in the navigation.
	Clustered bool
}

// sections maps a page to its navigation entry.
var sections = map[string]string{
	"datasets": "datasets", "dataset": "datasets", "rows": "datasets", "diff": "datasets", "rollback": "datasets",
	"adapters": "adapters", "adapter_form": "adapters",
	"runs": "runs", "run": "runs",
	"connections": "connections", "connection": "connections", "connection_form": "connections",
	"gc": "gc", "api": "api", "cluster": "cluster", "audit": "audit",
	"notifications": "notifications",
}

// render answers status with page, whole: its template set executed from
// "page" (layout.html). A request from htmx for the same page gets the
// same answer; fragments go through fragment.
func (c *console) render(w http.ResponseWriter, r *http.Request, status int, page string, v viewer, data any) error {
	return c.execute(w, status, page, "page", v, data)
}

// fragment answers status with the template name of page alone (a part
// that htmx swaps in).
func (c *console) fragment(w http.ResponseWriter, status int, page, name string, v viewer, data any) error {
	return c.execute(w, status, page, name, v, data)
}

// execute runs a template into a buffer first, so that a template error
// becomes a clean 500 page rather than half a page.
func (c *console) execute(w http.ResponseWriter, status int, page, name string, v viewer, data any) error {
	t, ok := c.pages[page]
	if !ok {
		return fmt.Errorf("console: no page %q", page)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, pageData{V: v, D: data, Build: c.s.build, Section: sections[page], Clustered: c.s.cluster != nil}); err != nil {
		return fmt.Errorf("console: rendering %s/%s: %w", page, name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	if err != nil {
		return errResponseStarted
	}
	return nil
}

// errResponseStarted marks an error after the answer was written: fail
// then only logs.
var errResponseStarted = errors.New("console: the answer was already written")

// fail answers err with the status and code of ProblemFor, the API's one
// translation: as a page to a browser (Accept naming text/html), as a
// fragment to htmx, and as problem+json to any other client, as the API
// would.
func (c *console) fail(w http.ResponseWriter, r *http.Request, v viewer, err error) {
	if errors.Is(err, errResponseStarted) {
		return
	}
	var p server.Problem
	var ce *consoleError
	if errors.As(err, &ce) {
		p = server.NewProblem(ce.status, ce.code, ce.msg)
		p.Field = ce.field
	} else {
		p = server.ProblemFor(err)
	}
	p.Instance = r.URL.Path
	if sw, ok := w.(*statusWriter); ok {
		sw.code = p.Code
	}
	if p.Status >= 500 {
		c.s.log.Error("console request failed", "method", r.Method, "path", r.URL.Path, "status", p.Status, "code", p.Code, "err", err)
	}
	name := "page"
	switch {
	case r.Header.Get("HX-Request") != "":
		name = "problem"
	case !strings.Contains(r.Header.Get("Accept"), "text/html"):
		w.Header().Set("Content-Type", server.ProblemContentType)
		w.WriteHeader(p.Status)
		_ = json.NewEncoder(w).Encode(p)
		return
	}
	if rerr := c.execute(w, p.Status, "error", name, v, p); rerr != nil {
		c.s.log.Error("console error page", "err", rerr)
		http.Error(w, p.Detail, p.Status)
	}
}

// notFound answers a console path that names no page.
func (c *console) notFound(w http.ResponseWriter, r *http.Request, v viewer) error {
	return &consoleError{status: http.StatusNotFound, code: "route_not_found", msg: "no console page at " + r.URL.Path}
}

// serveStatic answers GET /ui/static/{file...} from the embedded files,
// with an ETag so that a browser revalidates rather than refetches.
func (c *console) serveStatic(w http.ResponseWriter, r *http.Request, v viewer) error {
	f, ok := c.static[r.PathValue("file")]
	if !ok {
		return &consoleError{status: http.StatusNotFound, code: "not_found", msg: "no static file " + r.PathValue("file")}
	}
	w.Header().Set("Content-Type", f.ctype)
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	return nil
}

// apiDocs answers GET /ui/api: Swagger UI over /openapi.json.
func (c *console) apiDocs(w http.ResponseWriter, r *http.Request, v viewer) error {
	return c.render(w, r, http.StatusOK, "api", v, nil)
}

// statusWriter records the status a handler wrote, for the histogram.
type statusWriter struct {
	http.ResponseWriter
	status       int
	code         string // the problem's code, when fail answered
	outsideGrant bool   // refused outside a limited token's grant
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
