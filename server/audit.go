package server

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

// The audit trail: every request that changes something (every
// documented operation but GET and HEAD, in the API and through the
// console), every refused request (401, 403), and every read of the rows
// of a dataset whose adapter asks for it (audit_reads) is one entry, kept
// in the store's journal "audit" (snapshot/journal.go: each entry a row of
// its own, so the nodes of a cluster on HBase write one trail without
// coordination) and logged as one JSON line with logger=audit. Entries
// name the token (never its text), the client address, the operation and
// its targets, the status and the problem code. Retention removes entries
// older than AuditOptions.Retention (TrimAudit, which package daemon
// calls beside its GC loop).
//
// Operations registered later need nothing more: an operation is an
// action by its operationId. A handler whose target is not in its path (a
// create whose name is in the body) names it with setAuditTarget; work
// done outside a request is recorded with Server.RecordAudit.

// AuditOptions configure the audit trail.
type AuditOptions struct {
	// Retention is how long entries are kept; default
	// DefaultAuditRetention.
	Retention time.Duration
	// TrustedProxies are the addresses whose X-Forwarded-For header is
	// believed: the client address of a request from one of them is the
	// nearest address of that header that is not itself trusted. None:
	// the header is ignored and the client is the peer address.
	TrustedProxies []netip.Prefix
	// Logger receives one line per entry (msg "audit", logger=audit);
	// nil: the server's Logger.
	Logger *slog.Logger
}

// DefaultAuditRetention is AuditOptions.Retention when zero: 90 days.
const DefaultAuditRetention = 90 * 24 * time.Hour

// auditJournal is the journal of the audit trail in the store.
const auditJournal = "audit"

// Actors that are not token names.
const (
	// actorAnonymous asks without a token that the server knows: on a
	// server without tokens, or a request refused with 401.
	actorAnonymous = "anonymous"
)

// AuditEntry is one entry of the audit trail: the stored form and the
// wire form of GET /v1/audit.
type AuditEntry struct {
	// ID is the entry's id in the trail (set when read).
	ID string `json:"id,omitempty"`
	// Time is when the request ended.
	Time time.Time `json:"time"`
	// Actor is the token's name, "node:ID" for a cluster node's call, or
	// "anonymous".
	Actor string `json:"actor"`
	// Remote is the client's address (AuditOptions.TrustedProxies).
	Remote string `json:"remote,omitempty"`
	// Node is the cluster node that answered; empty alone.
	Node string `json:"node,omitempty"`
	// Action is the operationId of the API operation (createConnection,
	// startRun, scanRows), for the console the operation its form mirrors,
	// or login and logout.
	Action string `json:"action"`
	// Method and Route are the request's method and route: the OpenAPI
	// path template, or the console's pattern.
	Method string `json:"method,omitempty"`
	Route  string `json:"route,omitempty"`
	// Dataset, Adapter and Connection name what the request acted on.
	Dataset    string `json:"dataset,omitempty"`
	Adapter    string `json:"adapter,omitempty"`
	Connection string `json:"connection,omitempty"`
	// Params holds the other path parameters (tag, node, op, run, token),
	// the query flags that change what an action does (force, dry_run),
	// and grant=outside for a request refused outside a limited token's
	// grant.
	Params map[string]string `json:"params,omitempty"`
	// Status is the HTTP status answered; Code the problem's stable code
	// when it is an error.
	Status int    `json:"status"`
	Code   string `json:"code,omitempty"`
}

// auditTrail is a server's audit settings.
type auditTrail struct {
	retention time.Duration
	proxies   []netip.Prefix
	log       *slog.Logger
	node      atomic.Pointer[string] // this node's id once known
}

func newAuditTrail(o AuditOptions, log *slog.Logger) *auditTrail {
	a := &auditTrail{retention: o.Retention, proxies: o.TrustedProxies, log: o.Logger}
	if a.retention <= 0 {
		a.retention = DefaultAuditRetention
	}
	if a.log == nil {
		a.log = log
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("logger", "audit")
	return a
}

// Context keys of the audit trail on an echo context.
const (
	// ctxProblemCode holds the code of the problem answered (handleError).
	ctxProblemCode = "audit.code"
	// ctxAuditTargets holds the targets a handler named (setAuditTarget).
	ctxAuditTargets = "audit.targets"
	// ctxOutsideGrant is true for a request checkGrant refused as outside
	// a limited token's grant.
	ctxOutsideGrant = "audit.outside_grant"
)

// setAuditTarget names a target of the request's audit entry that its
// path does not: key dataset, adapter or connection fills that field,
// any other key a parameter (token).
func setAuditTarget(c echo.Context, key, value string) {
	m, _ := c.Get(ctxAuditTargets).(map[string]string)
	if m == nil {
		m = map[string]string{}
		c.Set(ctxAuditTargets, m)
	}
	m[key] = value
}

// rowReads are the operations that read a dataset's rows, recorded for a
// dataset whose adapter has audit_reads.
var rowReads = map[string]bool{"scanRows": true, "getRow": true, "diff": true, "scanTableRows": true, "getTableRow": true, "tableDiff": true}

// nameParamOf maps the route prefix of an operation to what its path
// parameter "name" names.
var nameParamOf = map[string]string{"/v1/connections/": "connection", "/v1/adapters/": "adapter", "/v1/tokens/": "token", "/v1/notifications/webhooks/": "webhook"}

// auditFlags are the query flags recorded in Params.
var auditFlags = []string{"force", "dry_run", "wait"}

// audit records the request in the trail when it is audited: called by
// middleware once the answer is written.
func (s *Server) audit(c echo.Context, rt *route) {
	if rt == nil {
		return // unmatched: echo's 404 or 405
	}
	r := c.Request()
	status := c.Response().Status
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	outside, _ := c.Get(ctxOutsideGrant).(bool)
	refused := status == http.StatusUnauthorized || status == http.StatusForbidden || outside
	var ds string
	if read && !refused {
		if !rowReads[rt.op.OperationID] {
			return
		}
		ds, _ = pathParam(c, "dataset")
		if ds == "" || !s.svc.AuditsReads(ds) {
			return
		}
	}
	e := AuditEntry{Action: rt.op.OperationID, Method: r.Method, Route: rt.path, Status: status}
	e.Code, _ = c.Get(ctxProblemCode).(string)
	e.Actor, _ = c.Get("token").(string)
	for i, name := range c.ParamNames() {
		v := c.ParamValues()[i]
		if u, err := pathParam(c, name); err == nil {
			v = u
		}
		switch name {
		case "*":
			// A row key may itself be personal data: not recorded.
		case "name":
			kind := "name"
			for p, k := range nameParamOf {
				if strings.HasPrefix(rt.path, p) {
					kind = k
				}
			}
			e.setTarget(kind, v)
		case "id":
			if strings.HasPrefix(rt.path, "/v1/cluster/nodes/") {
				e.setTarget("node", v)
			} else {
				e.setTarget("run", v)
			}
		default:
			e.setTarget(name, v)
		}
	}
	if outside {
		e.setTarget("grant", "outside")
	}
	if m, ok := c.Get(ctxAuditTargets).(map[string]string); ok {
		for k, v := range m {
			e.setTarget(k, v)
		}
	}
	q := r.URL.Query()
	for _, f := range auditFlags {
		if v := q.Get(f); v != "" {
			e.setTarget(f, v)
		}
	}
	s.record(r, e)
}

// setTarget sets the field key names, or the parameter key.
func (e *AuditEntry) setTarget(key, value string) {
	switch key {
	case "dataset":
		e.Dataset = value
	case "adapter":
		e.Adapter = value
	case "connection":
		e.Connection = value
	default:
		if e.Params == nil {
			e.Params = map[string]string{}
		}
		e.Params[key] = value
	}
}

// ConsoleRequest records a console request to the route pattern ("POST
// /ui/login"), mirroring the API operation op ("" for none), answered
// with status and problem code (code, "" for none) after d, outside
// when CheckGrant refused it (OutsideGrant): the latency histogram counts
// it under the pattern's path, and the audit trail records it when it is
// audited (auditConsole).
func (s *Server) ConsoleRequest(r *http.Request, pattern, op string, status int, code string, outside bool, d time.Duration) {
	label := pattern
	if i := strings.IndexByte(label, ' '); i >= 0 {
		label = label[i+1:]
	}
	s.metrics.observeHTTP(methodLabel(r.Method), label, status, d)
	s.auditConsole(r, pattern, op, status, code, outside)
}

// auditConsole records a console request when it is audited: a form
// post (a change, or a login or logout), a refusal (outside: by the
// grant of a limited token), or a page that reads the rows of a dataset
// whose adapter has audit_reads. op is the API operation the route
// mirrors ("" for none), pattern its route, status and code the answer.
func (s *Server) auditConsole(r *http.Request, pattern, op string, status int, code string, outside bool) {
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	refused := status == http.StatusUnauthorized || status == http.StatusForbidden || outside
	ds := r.PathValue("dataset")
	action := ""
	login := pattern == "POST /ui/login" || pattern == "POST /ui/logout"
	if apiOp, ok := s.api.ops[op]; ok {
		action = apiOp.op.OperationID
	} else if login {
		action = strings.TrimPrefix(pattern, "POST /ui/")
	}
	switch {
	case refused, login:
	case read:
		if !rowReads[action] || ds == "" || !s.svc.AuditsReads(ds) {
			return
		}
	case action == "" || strings.HasPrefix(op, "GET "):
		return // a form that changes nothing
	}
	if action == "" {
		action = "console"
	}
	route := pattern
	if i := strings.IndexByte(route, ' '); i >= 0 {
		route = route[i+1:]
	}
	e := AuditEntry{Action: action, Method: r.Method, Route: route, Status: status, Code: code, Dataset: ds}
	if outside {
		e.setTarget("grant", "outside")
	}
	if v := s.BrowserSession(r); v.Name != "" {
		e.Actor = v.Name
	}
	if pattern == "POST /ui/login" && status != http.StatusTooManyRequests {
		// The session starts with the answer: the token of the form says
		// who logs in (its name; the text is never kept): a token of the
		// configuration, or one made through the API. A throttled login
		// (429) was refused before its token was looked at, and is not
		// looked at here either.
		text := strings.TrimSpace(r.PostFormValue("token"))
		if i := s.tokens.find(text); i >= 0 {
			e.Actor = s.tokens.tokens[i].Name
		} else if t, ok, err := s.lookupAPIToken(r.Context(), "Bearer "+text); err == nil && ok {
			e.Actor = t.Name
		}
	}
	if e.Code == "" && refused {
		e.Code = map[int]string{http.StatusUnauthorized: "unauthorized", http.StatusForbidden: "forbidden"}[status]
	}
	for _, k := range []string{"name", "tag"} {
		if v := r.PathValue(k); v != "" {
			kind := k
			if k == "name" {
				kind = "adapter"
				if strings.HasPrefix(route, "/ui/connections/") {
					kind = "connection"
				} else if strings.HasPrefix(route, "/ui/notifications/") {
					kind = "webhook"
				}
			}
			e.setTarget(kind, v)
		}
	}
	if r.Method == http.MethodPost {
		if e.Adapter == "" && strings.HasPrefix(route, "/ui/adapters") {
			e.Adapter = r.PostFormValue("name")
		}
		if ds == "" && strings.HasPrefix(route, "/ui/connections") && e.Connection == "" {
			e.Connection = r.PostFormValue("name")
		}
		if t := r.PostFormValue("tag"); t != "" && strings.HasSuffix(route, "/tags") {
			e.setTarget("tag", t)
		}
		for _, f := range auditFlags {
			if v := r.PostFormValue(f); v != "" {
				e.setTarget(f, v)
			}
		}
	}
	s.record(r, e)
}

// record completes e with what the request tells (time, client address,
// node, anonymous actor) and the dataset of the adapter it names, when it
// names no dataset (a refusal too: a grant is a dataset's), and records
// it.
func (s *Server) record(r *http.Request, e AuditEntry) {
	e.Remote = s.trail.clientAddr(r)
	if e.Adapter != "" && e.Dataset == "" {
		if a, err := s.svc.GetAdapter(r.Context(), e.Adapter); err == nil {
			e.Dataset = a.Dataset
		}
	}
	// The request's context may be cancelled by now (a client that hung
	// up): the entry is written all the same, within a bound.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	s.RecordAudit(ctx, e)
}

// RecordAudit records e in the audit trail and logs it: Time defaults to
// now, Actor to anonymous, Node to this node. It is for changes made
// outside a request (a token expired by a loop); requests, whatever their
// route, are recorded by the server itself. A failed write is logged,
// never returned: the change it records is done.
func (s *Server) RecordAudit(ctx context.Context, e AuditEntry) {
	if e.Time.IsZero() {
		e.Time = s.now().UTC()
	}
	if e.Node == "" {
		e.Node = s.nodeID()
	}
	var err error
	e.ID, err = AppendAudit(ctx, s.db, e)
	if e.Actor == "" {
		e.Actor = actorAnonymous
	}
	attrs := []slog.Attr{slog.String("id", e.ID), slog.String("actor", e.Actor), slog.String("remote", e.Remote),
		slog.String("action", e.Action), slog.String("method", e.Method), slog.String("route", e.Route), slog.Int("status", e.Status)}
	for _, kv := range [][2]string{{"code", e.Code}, {"node", e.Node}, {"dataset", e.Dataset}, {"adapter", e.Adapter}, {"connection", e.Connection}} {
		if kv[1] != "" {
			attrs = append(attrs, slog.String(kv[0], kv[1]))
		}
	}
	if len(e.Params) > 0 {
		ps := make([]any, 0, 2*len(e.Params))
		for k, v := range e.Params {
			ps = append(ps, k, v)
		}
		attrs = append(attrs, slog.Group("params", ps...))
	}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
		s.trail.log.LogAttrs(ctx, slog.LevelError, "audit", attrs...)
		return
	}
	s.trail.log.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
}

// AppendAudit writes e to the audit trail of db and returns its id, for
// a command that changes the store without a server (a key rotation run
// against the store): Time defaults to now, Actor to anonymous; e.ID is
// ignored. It logs nothing; a server records through RecordAudit.
func AppendAudit(ctx context.Context, db *snapshot.DB, e AuditEntry) (string, error) {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	if e.Actor == "" {
		e.Actor = actorAnonymous
	}
	e.ID = ""
	b, err := json.Marshal(e)
	if err != nil {
		return "", fmt.Errorf("server: encoding an audit entry: %w", err)
	}
	return db.AppendJournal(ctx, auditJournal, e.Time, b)
}

// nodeID returns this node's cluster id, "" alone.
func (s *Server) nodeID() string {
	if s.cluster == nil {
		return ""
	}
	if p := s.trail.node.Load(); p != nil {
		return *p
	}
	for _, n := range s.cluster.Nodes() {
		if n.Self {
			id := n.ID
			s.trail.node.Store(&id)
			return id
		}
	}
	return ""
}

// clientAddr returns the address of the client of r: the peer's, or,
// from a trusted proxy, the nearest X-Forwarded-For address that is not
// a trusted proxy (the leftmost when all are).
func (a *auditTrail) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(a.proxies) == 0 || !a.trusted(host) {
		return host
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		for _, p := range strings.Split(h, ",") {
			if p = strings.TrimSpace(p); p != "" {
				hops = append(hops, p)
			}
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		if _, err := netip.ParseAddr(hops[i]); err != nil {
			return host // a forged or mangled header: the proxy is what is known
		}
		if !a.trusted(hops[i]) || i == 0 {
			return hops[i]
		}
	}
	return host
}

// trusted reports whether addr is in a trusted proxy's prefix.
func (a *auditTrail) trusted(addr string) bool {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range a.proxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// TrimAudit applies the trail's retention: it removes the entries older
// than AuditOptions.Retention; in a cluster, on the node that owns the
// trail's name alone (Cluster.Owns). Failures are logged.
func (s *Server) TrimAudit(ctx context.Context) {
	if s.cluster != nil && !s.cluster.Owns(auditJournal) {
		return
	}
	cut := s.now().Add(-s.trail.retention)
	n, err := s.db.TrimJournal(ctx, auditJournal, cut)
	switch {
	case err != nil:
		s.log.Warn("audit trail retention", "err", err)
	case n > 0:
		s.log.Info("audit trail retention", "removed", n, "before", cut.UTC().Format(time.RFC3339))
	}
}

// Audit lists are pages: limit entries (default defaultAuditListed, at
// most maxAuditListed), newest first, and a next_page_token while older
// ones may remain. A filtered page may hold fewer entries, even none,
// and still a token: it stopped after reading maxAuditScanned entries.
const (
	defaultAuditListed = 100
	maxAuditListed     = 1000
	// maxAuditScanned bounds the entries one page reads to find those a
	// filter keeps; a page that reaches it ends early, with a token.
	maxAuditScanned = 10000
)

// AuditPage is the answer of GET /v1/audit.
type AuditPage struct {
	Entries       []AuditEntry `json:"entries"`
	NextPageToken string       `json:"next_page_token,omitempty"`
}

// listAudit answers GET /v1/audit: a page of the trail, newest first,
// filtered by since, until, actor, action and dataset.
func (s *Server) listAudit(c echo.Context) error {
	limit, err := parseLimit(c, maxAuditListed)
	if err != nil {
		return err
	}
	f := AuditFilter{Limit: limit, Actor: c.QueryParam("actor"), Action: c.QueryParam("action"), Dataset: c.QueryParam("dataset"), PageToken: c.QueryParam("page_token")}
	if f.Action != "" {
		if known := s.auditActions(); !slices.Contains(known, f.Action) {
			return BadField("action", "unknown %q; the actions are %s", f.Action, strings.Join(known, ", "))
		}
	}
	if f.Since, err = ParseTime("since", c.QueryParam("since")); err != nil {
		return err
	}
	if f.Until, err = ParseTime("until", c.QueryParam("until")); err != nil {
		return err
	}
	page, err := s.AuditList(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// auditActions lists, sorted, the actions the trail records: the API's
// operationIds, the console's login and logout, and console (a console
// request that mirrors no API operation).
func (s *Server) auditActions() []string {
	actions := []string{"console", "login", "logout"}
	for _, op := range s.api.ops {
		actions = append(actions, op.op.OperationID)
	}
	slices.Sort(actions)
	return slices.Compact(actions)
}

// AuditFilter selects a page of the trail: GET /v1/audit's parameters.
type AuditFilter struct {
	Since, Until           time.Time // zero: unbounded
	Actor, Action, Dataset string    // "": any
	PageToken              string
	Limit                  int // 0: defaultAuditListed
}

// AuditList returns the page of the trail that f selects, newest first:
// what GET /v1/audit and the console's audit page show.
func (s *Server) AuditList(ctx context.Context, f AuditFilter) (AuditPage, error) {
	q := snapshot.JournalQuery{Since: f.Since, Until: f.Until, Limit: f.Limit, MaxScan: maxAuditScanned}
	if q.Limit == 0 {
		q.Limit = defaultAuditListed
	}
	if f.PageToken != "" {
		var err error
		if q.After, err = decodeAuditToken(f.PageToken); err != nil {
			return AuditPage{}, err
		}
	}
	if f.Actor != "" || f.Action != "" || f.Dataset != "" {
		q.Match = func(v []byte) bool {
			var e AuditEntry
			if json.Unmarshal(v, &e) != nil {
				return false
			}
			return (f.Actor == "" || e.Actor == f.Actor) && (f.Action == "" || e.Action == f.Action) && (f.Dataset == "" || e.Dataset == f.Dataset)
		}
	}
	page, next, err := s.db.JournalPage(ctx, auditJournal, q)
	if err != nil {
		return AuditPage{}, err
	}
	out := AuditPage{Entries: make([]AuditEntry, 0, len(page))}
	for _, je := range page {
		var e AuditEntry
		if err := json.Unmarshal(je.Value, &e); err != nil {
			return AuditPage{}, fmt.Errorf("%w: audit entry %s: %v", snapshot.ErrCorrupt, je.ID, err)
		}
		e.ID = je.ID
		out.Entries = append(out.Entries, e)
	}
	if next != "" {
		out.NextPageToken = encodeAuditToken(next)
	}
	return out, nil
}

// ParseTime reads v, the RFC 3339 time of input field name; zero when v
// is empty.
func ParseTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, BadField(name, "want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", v)
	}
	return t, nil
}

// An audit page token holds the id of the last entry of the page:
// base64url of 'a' and the id's 16 bytes.

func encodeAuditToken(id string) string {
	b, _ := hex.DecodeString(id)
	return base64.RawURLEncoding.EncodeToString(append([]byte{'a'}, b...))
}

// decodeAuditToken returns the entry id an audit page token continues
// after; snapshot.ErrBadPageToken for anything else.
func decodeAuditToken(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != 17 || b[0] != 'a' {
		return "", fmt.Errorf("%w: not a token of an audit list", snapshot.ErrBadPageToken)
	}
	return hex.EncodeToString(b[1:]), nil
}
