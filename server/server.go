package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
)

// VersionHeader is the response header carrying the version a read was
// pinned to.
const VersionHeader = "Snapstore-Version"

// Default limits.
const (
	// DefaultPageSize is the number of rows of a JSON scan page without limit.
	DefaultPageSize = 100
	// MaxPageSize is the largest limit of a JSON page.
	MaxPageSize = 10000
	// MaxBodyBytes is the largest request body accepted (1 MiB).
	MaxBodyBytes = 1 << 20
)

// Options configure a Server.
type Options struct {
	// DB is the dataset store; required.
	DB *snapshot.DB
	// Adapters owns connections, adapters and runs; required.
	Adapters *adapters.Service
	// Tokens are the accepted bearer tokens; none means no authentication
	// (CheckListen then restricts the listen address to loopback).
	Tokens []Token
	// Logger receives request and error logs; nil discards.
	Logger *slog.Logger
	// Registerer registers the server's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Gatherer is what /metrics exposes; nil serves an empty exposition.
	Gatherer prometheus.Gatherer
	// BuildVersion is reported by /healthz.
	BuildVersion string
	// now is the clock for the version-age gauge; default time.Now.
	now func() time.Time
}

// Server is the HTTP API. Create it with New, serve its Handler with an
// http.Server (cmd/snapstore does), run RunGCLoop beside it, and call
// SetShuttingDown when shutdown begins so /readyz turns 503.
type Server struct {
	db       *snapshot.DB
	svc      *adapters.Service
	tokens   *tokenSet
	log      *slog.Logger
	api      *apiDoc
	echo     *echo.Echo
	metrics  *metrics
	gatherer prometheus.Gatherer
	build    string
	now      func() time.Time
	stopping atomic.Bool
	// byRoute holds the registered routes; read-only after New.
	byRoute map[routeKey]*route
	// skipValidation turns request validation off (benchmark baseline only).
	skipValidation bool
}

// New builds the server and registers its routes and metrics. Errors: a bad
// token list, an OpenAPI document that does not load, a metric registration
// clash.
func New(opts Options) (*Server, error) {
	if opts.DB == nil || opts.Adapters == nil {
		return nil, errors.New("server: Options.DB and Options.Adapters are required")
	}
	ts, err := newTokenSet(opts.Tokens)
	if err != nil {
		return nil, err
	}
	api, err := loadAPIDoc()
	if err != nil {
		return nil, err
	}
	s := &Server{
		db:       opts.DB,
		svc:      opts.Adapters,
		tokens:   ts,
		log:      opts.Logger,
		api:      api,
		gatherer: opts.Gatherer,
		build:    opts.BuildVersion,
		now:      opts.now,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.gatherer == nil {
		s.gatherer = prometheus.NewRegistry()
	}
	if s.metrics, err = newMetrics(opts.Registerer, s); err != nil {
		return nil, err
	}
	s.echo = s.newEcho()
	return s, nil
}

// Handler returns the HTTP handler serving every route.
func (s *Server) Handler() http.Handler { return s.echo }

// SetShuttingDown makes /readyz answer 503 from now on.
func (s *Server) SetShuttingDown() { s.stopping.Store(true) }

func (s *Server) newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	// One middleware rather than a chain: echo builds the chain's closures
	// again for every request.
	e.Use(s.middleware)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.serveMetrics)
	e.GET("/openapi.json", s.openapiJSON)

	v1 := e.Group("/v1")
	v1.GET("/datasets", s.listDatasets)
	v1.GET("/datasets/:dataset", s.getDataset)
	v1.DELETE("/datasets/:dataset", s.dropDataset)
	v1.GET("/datasets/:dataset/rows", s.scanRows)
	v1.GET("/datasets/:dataset/rows/*", s.getRow)
	v1.GET("/datasets/:dataset/versions", s.listVersions)
	v1.GET("/datasets/:dataset/versions/:version", s.getVersion)
	v1.GET("/datasets/:dataset/diff", s.diff)
	v1.POST("/datasets/:dataset/gc", s.gc)
	v1.PUT("/datasets/:dataset/tags/:tag", s.putTag)
	v1.DELETE("/datasets/:dataset/tags/:tag", s.deleteTag)
	v1.POST("/datasets/:dataset/rollback", s.rollback)

	v1.GET("/connections", s.listConnections)
	v1.POST("/connections", s.createConnection)
	v1.GET("/connections/:name", s.getConnection)
	v1.PUT("/connections/:name", s.putConnection)
	v1.DELETE("/connections/:name", s.dropConnection)
	v1.POST("/connections/:name/test", s.testConnection)
	v1.GET("/connections/:name/resources", s.listResources)

	v1.GET("/adapters", s.listAdapters)
	v1.POST("/adapters", s.createAdapter)
	v1.GET("/adapters/:name", s.getAdapter)
	v1.PUT("/adapters/:name", s.putAdapter)
	v1.DELETE("/adapters/:name", s.deleteAdapter)
	v1.POST("/adapters/:name/runs", s.startRun)
	v1.GET("/adapters/:name/runs", s.listRuns)
	v1.GET("/runs/:id", s.getRun)

	// The documented operation of each registered route, found once here
	// rather than by rewriting the echo path on every request.
	s.byRoute = map[routeKey]*route{}
	for _, r := range e.Routes() {
		if op, ok := s.api.ops[r.Method+" "+openapiPath(r.Path)]; ok {
			s.byRoute[routeKey{r.Method, r.Path}] = &route{apiOp: op, label: r.Path}
		}
	}
	return e
}

// routeKey is a registered route: method and echo path (c.Path()).
type routeKey struct{ method, path string }

// route is a registered route with its documented operation and the
// latency observers of its statuses.
type route struct {
	apiOp
	label string // the route label of metrics and logs: the echo path
	// obs holds one observer per status seen so far; copied on write.
	obs atomic.Pointer[[]statusObserver]
}

type statusObserver struct {
	status int
	obs    prometheus.Observer
}

// observer returns the latency observer of the route's status, creating it
// on first use.
func (rt *route) observer(m *metrics, status int) prometheus.Observer {
	if p := rt.obs.Load(); p != nil {
		for _, so := range *p {
			if so.status == status {
				return so.obs
			}
		}
	}
	m.obsMu.Lock()
	defer m.obsMu.Unlock()
	var cur []statusObserver
	if p := rt.obs.Load(); p != nil {
		cur = *p
		for _, so := range cur {
			if so.status == status {
				return so.obs
			}
		}
	}
	o := m.httpDuration.WithLabelValues(rt.method, rt.label, strconv.Itoa(status))
	next := append(cur[:len(cur):len(cur)], statusObserver{status, o})
	rt.obs.Store(&next)
	return o
}

// routes lists the registered routes as "METHOD /openapi/{template}".
func (s *Server) routes() []string {
	var out []string
	for _, r := range s.echo.Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		out = append(out, r.Method+" "+openapiPath(r.Path))
	}
	return out
}

// route returns the matched route, nil when the request matched none (404,
// 405: echo answers those).
func (s *Server) route(c echo.Context) *route {
	return s.byRoute[routeKey{c.Request().Method, c.Path()}]
}

// operation returns the documented operation of the matched route.
func (s *Server) operation(c echo.Context) (apiOp, bool) {
	if rt := s.route(c); rt != nil {
		return rt.apiOp, true
	}
	return apiOp{}, false
}

// statusClientClosed is the status that logs and metrics give a
// request whose client went away before the answer (nginx's 499); nothing
// is sent.
const statusClientClosed = 499

// clientGone reports whether err comes from the request's connection going
// away: err is a cancellation and the request's context is canceled, which
// net/http does when the client closes the connection (a graceful shutdown
// leaves requests running; only a forced close cuts them, and then nothing
// can be answered either). Cancellations of the server's own contexts leave
// the request's alive and are answered as problems.
func clientGone(c echo.Context, err error) bool {
	return errors.Is(err, context.Canceled) && errors.Is(c.Request().Context().Err(), context.Canceled)
}

// handleError is echo's error handler: every error becomes a problem.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		// A stream already started: the status is sent; log and cut.
		level := slog.LevelWarn
		if clientGone(c, err) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			level = slog.LevelDebug // the client hung up mid-answer
		}
		s.log.Log(c.Request().Context(), level, "error after the response started", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
		return
	}
	if clientGone(c, err) {
		// Nobody is listening: nothing to answer, not a server error.
		c.Response().Status = statusClientClosed
		s.log.Debug("client went away", "method", c.Request().Method, "route", c.Path(), "status", statusClientClosed, "err", err)
		return
	}
	if errors.Is(err, context.Canceled) && s.stopping.Load() {
		// The server's own work was cancelled because it is stopping: safe
		// to retry elsewhere.
		err = fmt.Errorf("%w: %w", adapters.ErrShuttingDown, err)
	}
	err = s.explainNoDataset(c, err)
	p := ProblemFor(err)
	p.Instance = c.Request().URL.Path
	if p.Status >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "route", c.Path(), "status", p.Status, "code", p.Code, "err", err)
	}
	if p.Status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="snapstore"`)
	}
	writeProblem(c, p)
}

// explainNoDataset turns the dataset_not_found of a read into no_version
// when an adapter writes that dataset but has not committed yet: the
// dataset will exist, and the detail says which adapter and when it runs.
func (s *Server) explainNoDataset(c echo.Context, err error) error {
	ds := c.Param("dataset")
	if ds == "" || c.Request().Method != http.MethodGet || !errors.Is(err, snapshot.ErrDatasetNotFound) {
		return err
	}
	if u, uerr := url.PathUnescape(ds); uerr == nil && c.Request().URL.RawPath != "" {
		ds = u
	}
	for _, a := range s.svc.ListAdapters() {
		if a.Dataset != ds && !(a.Dataset == "" && a.Name == ds) { // Dataset defaults to Name
			continue
		}
		when := "when started (POST /v1/adapters/" + a.Name + "/runs)"
		if a.NextRun != nil {
			when = "at its next run, " + a.NextRun.UTC().Format(time.RFC3339)
		}
		return fmt.Errorf("%w: dataset %q has nothing committed yet; adapter %q writes it, %s", snapshot.ErrNoVersion, ds, a.Name, when)
	}
	return err
}

func writeProblem(c echo.Context, p Problem) {
	c.Response().Header().Set(echo.HeaderContentType, ProblemContentType)
	if c.Request().Method == http.MethodHead {
		c.Response().WriteHeader(p.Status)
		return
	}
	_ = c.JSON(p.Status, p)
}

// middleware runs around every request, in order: the latency histogram
// and debug log (observe), panic recovery, the body limit, authorisation and
// request validation.
func (s *Server) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		rt := s.route(c)
		if err := s.guard(c, rt, next); err != nil {
			c.Error(err)
		}
		s.observe(c, rt, time.Since(start))
		return nil
	}
}

// guard recovers panics of the checks and the handler, then limits the
// body, authorises and validates before calling next.
func (s *Server) guard(c echo.Context, rt *route, next echo.HandlerFunc) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.Error("handler panicked", "method", c.Request().Method, "route", c.Path(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("server: handler panicked: %v", r)
		}
	}()
	if err := limitBody(c); err != nil {
		return err
	}
	if rt != nil { // else route not found or method not allowed: answered by echo
		if err := s.authorize(c, rt); err != nil {
			return err
		}
		if raw := c.Request().URL.RawQuery; raw != "" {
			if err := checkQuery(raw, rt.query); err != nil {
				return err
			}
		}
		if !s.skipValidation {
			if err := s.validateRequest(c, rt); err != nil {
				return err
			}
		}
	}
	return next(c)
}

// limitBody caps request bodies at MaxBodyBytes; reading more fails with
// *http.MaxBytesError, answered 413.
func limitBody(c echo.Context) error {
	r := c.Request()
	if r.ContentLength > MaxBodyBytes {
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxBodyBytes))
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes)
	}
	return nil
}

// authorize checks the bearer token against the operation's role.
func (s *Server) authorize(c echo.Context, rt *route) error {
	if !s.tokens.enabled() || rt.role == RoleNone {
		return nil
	}
	tok, ok := s.tokens.lookup(c.Request().Header.Get(echo.HeaderAuthorization))
	if !ok {
		return echo.NewHTTPError(http.StatusUnauthorized, "a valid bearer token is required (Authorization: Bearer TOKEN)")
	}
	if tok.Role < rt.role {
		return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("token %q has role %s; this operation needs %s", tok.Name, tok.Role, rt.role))
	}
	c.Set("token", tok.Name)
	return nil
}

// validateRequest checks parameters and bodies against the OpenAPI
// document: the operation's quick check when it is sure, else kin-openapi
// (validate.go, V1 and V2).
func (s *Server) validateRequest(c echo.Context, rt *route) error {
	r := c.Request()
	if rt.quick != nil {
		var q url.Values // none: parsing an empty query would cost a map
		if r.URL.RawQuery != "" {
			q = c.QueryParams()
		}
		if rt.quick.accepts(r, c, q) {
			return nil
		}
	}
	if err := normalizeContentType(r, rt.apiOp); err != nil {
		return err
	}
	params := map[string]string{}
	for i, n := range c.ParamNames() {
		v := c.ParamValues()[i]
		if n == "*" {
			n = keyParam
			if v == "" {
				// The empty key of a one-column text key (rowKeyParts).
				// kin-openapi refuses an empty path parameter; the key's
				// schema is a plain string, so any non-empty text stands
				// in for it.
				v = "-"
			}
		}
		params[n] = v
	}
	return s.api.validate(r.Context(), r, rt.apiOp, params)
}

// normalizeContentType lets a JSON body arrive without a Content-Type or
// with curl's default for -d (application/x-www-form-urlencoded): both are
// read as JSON. Any other non-JSON media type, a charset other than UTF-8
// and a Content-Encoding (gzip) are a 415: the body would be misread.
func normalizeContentType(r *http.Request, op apiOp) error {
	if op.op.RequestBody == nil || r.ContentLength == 0 {
		return nil
	}
	if ce := r.Header.Get(echo.HeaderContentEncoding); ce != "" && !strings.EqualFold(ce, "identity") {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, fmt.Sprintf("request bodies are plain JSON; Content-Encoding %q is not accepted", ce))
	}
	ct := r.Header.Get(echo.HeaderContentType)
	mt, params, _ := mime.ParseMediaType(ct)
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, fmt.Sprintf("request bodies are UTF-8 JSON, not charset %q", cs))
	}
	switch {
	case mt == echo.MIMEApplicationJSON:
		return nil
	case ct == "" || mt == echo.MIMEApplicationForm:
		r.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		return nil
	}
	return echo.NewHTTPError(http.StatusUnsupportedMediaType, fmt.Sprintf("request bodies are JSON (application/json), not %q", mt))
}

// methodLabel is the method label of metrics: the standard methods as
// they are, any other token "other", so that clients cannot add series by
// inventing methods (unknown paths are "unmatched" for the same reason).
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// observe records the latency histogram and logs the request at debug.
func (s *Server) observe(c echo.Context, rt *route, d time.Duration) {
	status := c.Response().Status
	if rt != nil {
		rt.observer(s.metrics, status).Observe(d.Seconds())
	} else {
		s.metrics.observeHTTP(methodLabel(c.Request().Method), "unmatched", status, d)
	}
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		label := "unmatched"
		if rt != nil {
			label = rt.label
		}
		s.log.Debug("http request", "method", c.Request().Method, "route", label, "status", status, "bytes", c.Response().Size)
	}
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "version": s.build})
}

func (s *Server) readyz(c echo.Context) error {
	if s.stopping.Load() {
		return fmt.Errorf("server: %w", adapters.ErrShuttingDown)
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	if _, err := s.db.Datasets(ctx); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) serveMetrics(c echo.Context) error {
	promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}).ServeHTTP(c.Response(), c.Request())
	return nil
}

func (s *Server) openapiJSON(c echo.Context) error {
	return c.JSONBlob(http.StatusOK, s.api.json)
}
