package server

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/notify"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
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
	// Cluster is this node's cluster; nil when it runs alone (the
	// cluster routes then answer 404 not_clustered).
	Cluster Cluster
	// Transfer is this node's transfer layer (the backlog); nil when it
	// has no transfer listener.
	Transfer Transfer
	// Partitions is this node's partition table of partitioned runs; nil
	// when it has no transfer listener.
	Partitions PartitionTable
	// Audit configures the audit trail (audit.go).
	Audit AuditOptions
	// Notifier sends the test events of webhooks (notifications.go); nil:
	// none is configured.
	Notifier *notify.Notifier
	// SessionIdle ends a console session no request used for this long
	// (consoleauth.go), at most SessionLifetime; default
	// DefaultSessionIdle.
	SessionIdle time.Duration
	// Console, when set, returns the handler of /ui and everything under
	// /ui/, the web console (package console's New); package daemon sets
	// it. Nil: the server has no console, and those paths are the API's
	// (404).
	Console func(*Server) (http.Handler, error)
	// Now is the server's clock (sessions, the version-age gauge);
	// default time.Now.
	Now func() time.Time
	// Cache is the store's block cache, which Arrow and Parquet answers
	// longer than one batch reserve their memory from
	// (exportmemory.go); nil: no cache in the process (store/hbase).
	Cache store.CacheReserver
	// ParquetCache bounds the cache of built Parquet files
	// (parquetcache.go); the zero value: none, each request builds its
	// file.
	ParquetCache ParquetCacheOptions
}

// Server is the HTTP API. Create it with New, serve its Handler with an
// http.Server (package daemon does, and calls CollectGarbage and
// TrimAudit from its periodic loop), and call
// SetShuttingDown when shutdown begins so /readyz turns 503.
type Server struct {
	db    *snapshot.DB
	cache store.CacheReserver // nil: none (Options.Cache)
	// parquetFiles is the cache of built Parquet files; nil: none
	// (Options.ParquetCache).
	parquetFiles *parquetCache
	svc          *adapters.Service
	tokens       *tokenSet
	// apiTokens are the tokens created through the API (apitokens.go).
	apiTokens *apiTokens
	// endedSessions are the console sessions ended by a logout
	// (sessions.go).
	endedSessions *endedSessions
	log           *slog.Logger
	api           *apiDoc
	echo          *echo.Echo
	console       http.Handler // nil: no console
	handler       http.Handler
	metrics       *metrics
	gatherer      prometheus.Gatherer
	build         string
	cluster       Cluster
	transfer      Transfer
	// partitions is the partition table; nil without a transfer
	partitions PartitionTable
	trail      *auditTrail
	notifier   *notify.Notifier // nil: no webhook
	now        func() time.Time
	stopping   atomic.Bool
	// byRoute holds the registered routes; read-only after New.
	byRoute map[routeKey]*route
	// skipValidation turns request validation off (benchmark baseline only).
	skipValidation bool
	// crossOrigin refuses the state-changing requests of other sites'
	// pages, for the API and the console (browser.go).
	crossOrigin *http.CrossOriginProtection
	// logins slows down failed console logins (loginthrottle.go).
	logins *loginThrottle
	// sessionIdle is Options.SessionIdle with its default.
	sessionIdle time.Duration
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
		db:            opts.DB,
		cache:         opts.Cache,
		svc:           opts.Adapters,
		tokens:        ts,
		apiTokens:     newAPITokens(opts.DB),
		endedSessions: newEndedSessions(opts.DB),
		log:           opts.Logger,
		api:           api,
		gatherer:      opts.Gatherer,
		build:         opts.BuildVersion,
		cluster:       opts.Cluster,
		transfer:      opts.Transfer,
		partitions:    opts.Partitions,
		notifier:      opts.Notifier,
		now:           opts.Now,
		logins:        newLoginThrottle(),
		sessionIdle:   opts.SessionIdle,
	}
	if s.sessionIdle <= 0 {
		s.sessionIdle = DefaultSessionIdle
	}
	s.crossOrigin = http.NewCrossOriginProtection()
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.trail = newAuditTrail(opts.Audit, s.log)
	if s.gatherer == nil {
		s.gatherer = prometheus.NewRegistry()
	}
	if s.metrics, err = newMetrics(opts.Registerer, s); err != nil {
		return nil, err
	}
	if pc := opts.ParquetCache; pc.Dir != "" && pc.Size > 0 {
		if s.parquetFiles, err = openParquetCache(pc.Dir, pc.Size, s.metrics); err != nil {
			return nil, err
		}
	}
	s.echo = s.newEcho()
	if opts.Console != nil {
		if s.console, err = opts.Console(s); err != nil {
			return nil, err
		}
	}
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s, nil
}

// Handler returns the HTTP handler serving every route: the API and,
// under /ui/, the console.
func (s *Server) Handler() http.Handler { return s.handler }

// serveHTTP sends /ui and /ui/... to the console, GET / to the console
// (a redirect) and everything else to the API; without a console,
// everything to the API.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case s.console == nil:
		s.echo.ServeHTTP(w, r)
	case p == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		http.Redirect(w, r, "/ui/", http.StatusFound)
	case p == "/ui" || strings.HasPrefix(p, "/ui/"):
		s.console.ServeHTTP(w, r)
	default:
		s.echo.ServeHTTP(w, r)
	}
}

// DB is the dataset store the server serves.
func (s *Server) DB() *snapshot.DB { return s.db }

// Adapters is the service of connections, adapters and runs the server
// serves.
func (s *Server) Adapters() *adapters.Service { return s.svc }

// Logger is the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// Now is the server's clock.
func (s *Server) Now() time.Time { return s.now() }

// Notifier sends the test events of webhooks; nil when none is
// configured.
func (s *Server) Notifier() *notify.Notifier { return s.notifier }

// Cluster is this node's cluster; nil when it runs alone.
func (s *Server) Cluster() Cluster { return s.cluster }

// BuildVersion is the version /healthz reports.
func (s *Server) BuildVersion() string { return s.build }

// SetShuttingDown makes /readyz answer 503 from now on.
func (s *Server) SetShuttingDown() { s.stopping.Store(true) }

// newEcho builds the router: the error handler, the one middleware, and
// the route table, each route an operation of openapi.yaml.
func (s *Server) newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	// One middleware rather than a chain: echo builds the chain's closures
	// again for every request.
	e.Use(s.middleware)

	e.Match(readMethods, "/healthz", s.healthz)
	e.Match(readMethods, "/readyz", s.readyz)
	e.Match(readMethods, "/metrics", s.serveMetrics)
	e.Match(readMethods, "/openapi.json", s.openapiJSON)

	v1 := e.Group("/v1")
	v1.Match(readMethods, "/audit", s.listAudit)
	v1.Match(readMethods, "/notifications/deliveries", s.listDeliveries)
	v1.POST("/notifications/webhooks/:name/test", s.testWebhook)

	v1.Match(readMethods, "/datasets", s.listDatasets)
	v1.Match(readMethods, "/datasets/:dataset", s.getDataset)
	v1.DELETE("/datasets/:dataset", s.dropDataset)
	v1.Match(readMethods, "/datasets/:dataset/rows", s.scanRows)
	v1.Match(readMethods, "/datasets/:dataset/rows/*", s.getRow)
	v1.Match(readMethods, "/datasets/:dataset/versions", s.listVersions)
	v1.Match(readMethods, "/datasets/:dataset/versions/:version", s.getVersion)
	v1.Match(readMethods, "/datasets/:dataset/diff", s.diff)
	v1.Match(readMethods, "/datasets/:dataset/tables", s.listTables)
	v1.Match(readMethods, "/datasets/:dataset/tables/:table/rows", s.scanRows)
	v1.Match(readMethods, "/datasets/:dataset/tables/:table/rows/*", s.getRow)
	v1.Match(readMethods, "/datasets/:dataset/tables/:table/diff", s.diff)
	v1.POST("/datasets/:dataset/gc", s.gc)
	v1.PUT("/datasets/:dataset/tags/:tag", s.putTag)
	v1.DELETE("/datasets/:dataset/tags/:tag", s.deleteTag)
	v1.POST("/datasets/:dataset/rollback", s.rollback)

	v1.Match(readMethods, "/connections", s.listConnections)
	v1.POST("/connections", s.createConnection)
	v1.Match(readMethods, "/connections/:name", s.getConnection)
	v1.PUT("/connections/:name", s.putConnection)
	v1.DELETE("/connections/:name", s.dropConnection)
	v1.POST("/connections/:name/test", s.testConnection)
	v1.Match(readMethods, "/connections/:name/resources", s.listResources)

	v1.Match(readMethods, "/adapters", s.listAdapters)
	v1.POST("/adapters", s.createAdapter)
	v1.Match(readMethods, "/adapters/:name", s.getAdapter)
	v1.PUT("/adapters/:name", s.putAdapter)
	v1.DELETE("/adapters/:name", s.deleteAdapter)
	v1.POST("/adapters/:name/runs", s.startRun)
	v1.Match(readMethods, "/adapters/:name/runs", s.listRuns)
	v1.Match(readMethods, "/runs", s.listAllRuns)
	v1.Match(readMethods, "/runs/:id", s.getRun)

	v1.Match(readMethods, "/tokens", s.listTokens)
	v1.POST("/tokens", s.createToken)
	v1.DELETE("/tokens/:name", s.revokeToken)

	v1.POST("/secrets/rotate", s.rotateSecrets)

	v1.Match(readMethods, "/cluster/nodes", s.clusterNodes)
	v1.DELETE("/cluster/nodes/:id", s.forgetNode)
	v1.POST("/cluster/nodes/:id/drain", s.drainNode)
	v1.DELETE("/cluster/nodes/:id/drain", s.resumeNode)
	v1.Match(readMethods, "/cluster/keys", s.listKeys)
	v1.POST("/cluster/keys/:op", s.keyOp)
	v1.POST("/cluster/runs", s.takeRun)
	v1.Match(readMethods, "/cluster/backlog", s.clusterBacklog)
	v1.Match(readMethods, "/cluster/partitions", s.clusterPartitions)

	// The documented operation of each registered route, found once here
	// rather than by rewriting the echo path on every request. The HEAD of
	// a route is its GET operation: the same role, grant and parameters.
	s.byRoute = map[routeKey]*route{}
	for _, r := range e.Routes() {
		if op, ok := s.api.ops[documentedMethod(r.Method)+" "+openapiPath(r.Path)]; ok {
			s.byRoute[routeKey{r.Method, r.Path}] = &route{apiOp: op, method: r.Method, label: r.Path}
		}
	}
	return e
}

// readMethods are the methods of every read route: HEAD answers as GET
// does, with the same status and headers and no body (RFC 9110, 9.3.2),
// for clients that ask for an answer's headers before its body (HTTP
// readers of Parquet and CSV files, fsspec, DuckDB's httpfs). The API
// document lists the GET; docs/api.md states the rule.
var readMethods = []string{http.MethodGet, http.MethodHead}

// documentedMethod is the method under which openapi.yaml documents a
// route of method m: GET for HEAD (readMethods), m itself otherwise.
func documentedMethod(m string) string {
	if m == http.MethodHead {
		return http.MethodGet
	}
	return m
}

// routeKey is a registered route: method and echo path (c.Path()).
type routeKey struct{ method, path string }

// route is a registered route with its documented operation and the
// latency observers of its statuses.
type route struct {
	apiOp
	// method is the request method: HEAD for the HEAD of a GET operation,
	// whose apiOp.method is GET.
	method string
	label  string // the route label of metrics and logs: the echo path
	// obs holds one observer per status seen so far; copied on write.
	obs atomic.Pointer[[]statusObserver]
}

// routes lists the registered routes as "METHOD /openapi/{template}",
// but for the HEAD of each GET (readMethods), which the document does not
// list.
func (s *Server) routes() []string {
	var out []string
	for _, r := range s.echo.Routes() {
		if r.Method == echo.RouteNotFound || r.Method == http.MethodHead {
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
