package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"sync/atomic"
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
	e.Use(s.observe)
	e.Use(s.recoverPanic)
	e.Use(limitBody)
	e.Use(s.authorize)
	e.Use(s.validateRequest)

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
	return e
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

// operation returns the documented operation of the matched route.
func (s *Server) operation(c echo.Context) (apiOp, bool) {
	op, ok := s.api.ops[c.Request().Method+" "+openapiPath(c.Path())]
	return op, ok
}

// handleError is echo's error handler: every error becomes a problem.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		// A stream already started: the status is sent; log and cut.
		s.log.Warn("error after the response started", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
		return
	}
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

func writeProblem(c echo.Context, p Problem) {
	c.Response().Header().Set(echo.HeaderContentType, ProblemContentType)
	if c.Request().Method == http.MethodHead {
		c.Response().WriteHeader(p.Status)
		return
	}
	_ = c.JSON(p.Status, p)
}

// limitBody caps request bodies at MaxBodyBytes; reading more fails with
// *http.MaxBytesError, answered 413.
func limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > MaxBodyBytes {
			return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxBodyBytes))
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes)
		return next(c)
	}
}

// recoverPanic turns a handler panic into a logged 500 problem.
func (s *Server) recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error("handler panicked", "method", c.Request().Method, "route", c.Path(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = fmt.Errorf("server: handler panicked: %v", r)
			}
		}()
		return next(c)
	}
}

// authorize checks the bearer token against the operation's role.
func (s *Server) authorize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.tokens.enabled() {
			return next(c)
		}
		op, ok := s.operation(c)
		if !ok {
			return next(c) // route not found or method not allowed: answered by echo
		}
		if op.role == RoleNone {
			return next(c)
		}
		tok, ok := s.tokens.lookup(c.Request().Header.Get(echo.HeaderAuthorization))
		if !ok {
			return echo.NewHTTPError(http.StatusUnauthorized, "a valid bearer token is required (Authorization: Bearer TOKEN)")
		}
		if tok.Role < op.role {
			return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("token %q has role %s; this operation needs %s", tok.Name, tok.Role, op.role))
		}
		c.Set("token", tok.Name)
		return next(c)
	}
}

// validateRequest checks parameters and bodies against the OpenAPI document.
func (s *Server) validateRequest(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		op, ok := s.operation(c)
		if !ok || s.skipValidation {
			return next(c)
		}
		if err := normalizeContentType(c.Request(), op); err != nil {
			return err
		}
		params := map[string]string{}
		for i, n := range c.ParamNames() {
			v := c.ParamValues()[i]
			if n == "*" {
				n = "key"
			}
			params[n] = v
		}
		if err := s.api.validate(c.Request().Context(), c.Request(), op, params); err != nil {
			return err
		}
		return next(c)
	}
}

// normalizeContentType lets a JSON body arrive without a Content-Type or
// with curl's default for -d (application/x-www-form-urlencoded): both are
// read as JSON. Any other non-JSON media type is a 415.
func normalizeContentType(r *http.Request, op apiOp) error {
	if op.op.RequestBody == nil || r.ContentLength == 0 {
		return nil
	}
	ct := r.Header.Get(echo.HeaderContentType)
	mt, _, _ := mime.ParseMediaType(ct)
	switch {
	case mt == echo.MIMEApplicationJSON:
		return nil
	case ct == "" || mt == echo.MIMEApplicationForm:
		r.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		return nil
	}
	return echo.NewHTTPError(http.StatusUnsupportedMediaType, fmt.Sprintf("request bodies are JSON (application/json), not %q", mt))
}

// observe records the latency histogram and logs each request at debug.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		route := c.Path()
		if _, ok := s.operation(c); !ok {
			route = "unmatched"
		}
		status := c.Response().Status
		s.metrics.observeHTTP(c.Request().Method, route, status, time.Since(start))
		s.log.Debug("http request", "method", c.Request().Method, "route", route, "status", status, "bytes", c.Response().Size)
		return nil
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
