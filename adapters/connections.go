package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Record kinds in the metadata table (snapshot.PutRecord); adapters keeps
// no storage keys of its own.
const (
	recordConnection = "adapters.connection"
	recordAdapter    = "adapters.adapter"
	recordRun        = "adapters.run"
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func checkName(key, name string) error {
	if !nameRE.MatchString(name) {
		return &OptionError{Key: key, Msg: "want 1 to 128 letters, digits, '_', '.', '-', starting with a letter or digit"}
	}
	return nil
}

// connDef is one data connection definition. Its fields are immutable
// after creation except h, guarded by Service.mu.
type connDef struct {
	spec     ConnectionSpec // options as given (secrets as given)
	origin   Origin
	revision int64
	created  time.Time
	updated  time.Time
	conn     Connector
	opts     OptionValues // typed, secrets unresolved
	pool     PoolOptions
	// h is the shared handle of a shared or pooled connection, opened on
	// first use; nil for single-use or before first use.
	h *handle
}

// connRecord is the persisted form of an API connection.
type connRecord struct {
	Spec      ConnectionSpec `json:"spec"`
	Revision  int64          `json:"revision"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// handle is a reference-counted open Source of one connection revision.
// A run holds it from start to end; replacing or dropping the connection
// retires it: idle pooled connections close at once, the Source closes
// when the last run releases it (database/sql's Close alone would not wait
// for a long stream).
type handle struct {
	name     string
	revision int64
	// mu guards the fields below; held while opening (which does not dial).
	mu      sync.Mutex
	src     Source
	secrets []string
	refs    int
	retired bool
}

// lease is one run's hold on a connection revision.
type lease struct {
	src      Source
	revision int64
	secrets  []string
	release  func()
}

func (l *lease) scrub(err error) error { return scrubError(err, l.secrets...) }

// parseConnection validates a spec; key prefix names its place in the
// config ("connections[2].") or is empty for the API.
func parseConnection(prefix string, spec ConnectionSpec) (*connDef, error) {
	var errs []error
	if err := checkName(prefix+"name", spec.Name); err != nil {
		errs = append(errs, err)
	}
	switch spec.Sharing {
	case "":
		spec.Sharing = SharingShared
	case SharingShared, SharingPooled, SharingSingleUse:
	default:
		errs = append(errs, &OptionError{Key: prefix + "sharing", Msg: fmt.Sprintf("want %s, %s or %s, got %q", SharingShared, SharingPooled, SharingSingleUse, spec.Sharing)})
	}
	c, err := lookupConnector(spec.Type)
	if err != nil {
		errs = append(errs, optionErrorIs(&OptionError{Key: prefix + "type", Msg: fmt.Sprintf("unknown connection type %q, known: %s", spec.Type, strings.Join(Connectors(), ", "))}, ErrUnknownType))
		return nil, errors.Join(errs...)
	}
	opts, pool, err := parseOptions(prefix+"options.", c.Options(), spec.Sharing, spec.Options)
	if err != nil {
		errs = append(errs, err)
	}
	// Validate the options that parsed too, so a missing required option
	// is named along with a misspelt one; a key already reported is not
	// reported again.
	if verr := c.Validate(opts); verr != nil {
		reported := map[string]bool{}
		for _, e := range splitErrors(err) {
			var oe *OptionError
			if errors.As(e, &oe) {
				reported[oe.Key] = true
			}
		}
		for _, e := range splitErrors(prefixOptionErrors(prefix+"options.", verr)) {
			var oe *OptionError
			if errors.As(e, &oe) && reported[oe.Key] {
				continue
			}
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if spec.Options == nil {
		spec.Options = map[string]any{}
	}
	return &connDef{spec: spec, conn: c, opts: opts, pool: pool}, nil
}

// activeConnLocked returns the definition runs use: config over API.
func (s *Service) activeConnLocked(name string) *connDef {
	if d, ok := s.cfgConns[name]; ok {
		return d
	}
	return s.apiConns[name]
}

func (s *Service) notFoundConn(name string) error {
	return fmt.Errorf("%w: data connection %q does not exist", ErrConnectionNotFound, name)
}

// acquire takes a lease on the current revision of connection name.
func (s *Service) acquire(ctx context.Context, name string) (*lease, error) {
	s.mu.Lock()
	d := s.activeConnLocked(name)
	if d == nil {
		s.mu.Unlock()
		return nil, s.notFoundConn(name)
	}
	if d.spec.Sharing == SharingSingleUse {
		s.mu.Unlock()
		src, secrets, err := s.openSource(ctx, d)
		if err != nil {
			return nil, err
		}
		return &lease{src: src, revision: d.revision, secrets: secrets, release: func() {
			if err := src.Close(); err != nil {
				s.log.Warn("closing single-use data connection", "connection", name, "err", scrubError(err, secrets...))
			}
		}}, nil
	}
	h := d.h
	if h == nil {
		h = &handle{name: d.spec.Name, revision: d.revision}
		d.h = h
	}
	h.mu.Lock()
	h.refs++
	s.mu.Unlock()
	defer h.mu.Unlock()
	if h.src == nil {
		src, secrets, err := s.openSource(ctx, d)
		if err != nil {
			h.refs--
			return nil, err
		}
		h.src, h.secrets = src, secrets
	}
	return &lease{src: h.src, revision: h.revision, secrets: h.secrets, release: func() { s.releaseHandle(h) }}, nil
}

func (s *Service) releaseHandle(h *handle) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refs--
	if h.refs == 0 && h.retired && h.src != nil {
		if err := h.src.Close(); err != nil {
			s.log.Warn("closing retired data connection", "connection", h.name, "revision", h.revision, "err", scrubError(err, h.secrets...))
		}
		h.src = nil
	}
}

// retireLocked retires d's shared handle (replace, drop, close). Caller
// holds s.mu.
func (s *Service) retireLocked(d *connDef) {
	h := d.h
	if h == nil {
		return
	}
	d.h = nil
	h.mu.Lock()
	defer h.mu.Unlock()
	h.retired = true
	if h.src == nil {
		return
	}
	if h.refs == 0 {
		if err := h.src.Close(); err != nil {
			s.log.Warn("closing data connection", "connection", h.name, "err", scrubError(err, h.secrets...))
		}
		h.src = nil
		return
	}
	if ic, ok := h.src.(IdleCloser); ok {
		ic.CloseIdle()
	}
	s.log.Info("data connection retired while runs hold it; it closes when they end", "connection", h.name, "revision", h.revision, "runs", h.refs)
}

// openSource resolves secrets and opens a Source for d.
func (s *Service) openSource(ctx context.Context, d *connDef) (Source, []string, error) {
	resolved, err := resolveSecrets("options.", d.opts)
	if err != nil {
		return nil, nil, fmt.Errorf("opening data connection %q: %w", d.spec.Name, err)
	}
	var secrets []string
	for _, v := range resolved {
		if sec, ok := v.(Secret); ok {
			secrets = append(secrets, sec.Reveal())
		}
	}
	src, err := d.conn.Open(ctx, SourceConfig{Name: d.spec.Name, Options: resolved, Pool: d.pool, Logger: s.log.With("connection", d.spec.Name)})
	if err != nil {
		return nil, nil, scrubError(fmt.Errorf("opening data connection %q: %w", d.spec.Name, err), secrets...)
	}
	return src, secrets, nil
}

// adaptersUsingLocked lists the adapters (both origins) that name conn.
func (s *Service) adaptersUsingLocked(conn string) []string {
	seen := map[string]bool{}
	for _, m := range []map[string]*adapterDef{s.cfgAdapters, s.apiAdapters} {
		for n, a := range m {
			if a.spec.Connection == conn {
				seen[n] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (s *Service) reportConnLocked(d *connDef, status string) Connection {
	return Connection{
		Name:      d.spec.Name,
		Type:      d.spec.Type,
		Sharing:   d.spec.Sharing,
		Options:   redactOptions(d.conn.Options(), d.spec.Options),
		Source:    d.origin,
		Status:    status,
		Revision:  d.revision,
		CreatedAt: d.created,
		UpdatedAt: d.updated,
		Adapters:  s.adaptersUsingLocked(d.spec.Name),
	}
}

func (s *Service) listConnections() []Connection {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Connection
	for _, d := range s.cfgConns {
		out = append(out, s.reportConnLocked(d, "active"))
	}
	for n, d := range s.apiConns {
		status := "active"
		if _, shadowed := s.cfgConns[n]; shadowed {
			status = "shadowed"
		}
		out = append(out, s.reportConnLocked(d, status))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Source < out[j].Source
	})
	return out
}

func (s *Service) getConnection(name string) (Connection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.activeConnLocked(name)
	if d == nil {
		return Connection{}, s.notFoundConn(name)
	}
	return s.reportConnLocked(d, "active"), nil
}

// putConnection creates (mustCreate) or creates-or-replaces an API
// connection, persisting it before it becomes visible.
func (s *Service) putConnection(ctx context.Context, spec ConnectionSpec, mustCreate bool) (Connection, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	spec, err := keepRedactedSecrets(spec, s.apiConns[spec.Name])
	if err != nil {
		return Connection{}, false, err
	}
	d, err := parseConnection("", spec)
	if err != nil {
		return Connection{}, false, err
	}
	if s.closing {
		return Connection{}, false, ErrShuttingDown
	}
	if _, ok := s.cfgConns[spec.Name]; ok {
		if mustCreate {
			return Connection{}, false, fmt.Errorf("%w: %q (defined in the config file)", ErrConnectionExists, spec.Name)
		}
		return Connection{}, false, fmt.Errorf("%w: %q", ErrConnectionReadOnly, spec.Name)
	}
	old := s.apiConns[spec.Name]
	if old != nil && mustCreate {
		return Connection{}, false, fmt.Errorf("%w: %q", ErrConnectionExists, spec.Name)
	}
	now := s.now().UTC()
	d.origin, d.created, d.updated, d.revision = OriginAPI, now, now, 1
	if old != nil {
		d.created, d.revision = old.created, old.revision+1
	}
	b, err := json.Marshal(connRecord{Spec: d.spec, Revision: d.revision, CreatedAt: d.created, UpdatedAt: d.updated})
	if err != nil {
		return Connection{}, false, fmt.Errorf("adapters: encoding connection %q: %w", spec.Name, err)
	}
	if err := s.db.PutRecord(ctx, recordConnection, spec.Name, b); err != nil {
		return Connection{}, false, fmt.Errorf("adapters: saving connection %q: %w", spec.Name, err)
	}
	if old != nil {
		s.retireLocked(old)
	}
	s.apiConns[spec.Name] = d
	s.log.Info("data connection saved", "connection", spec.Name, "revision", d.revision, "type", d.spec.Type)
	return s.reportConnLocked(d, "active"), old == nil, nil
}

func (s *Service) dropConnection(ctx context.Context, name string, force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cfgConns[name]; ok {
		return fmt.Errorf("%w: %q", ErrConnectionReadOnly, name)
	}
	d := s.apiConns[name]
	if d == nil {
		return s.notFoundConn(name)
	}
	if users := s.adaptersUsingLocked(name); len(users) > 0 && !force {
		return fmt.Errorf("%w: %q is named by adapters %s; delete or change them, or drop with force", ErrConnectionInUse, name, strings.Join(users, ", "))
	}
	if err := s.db.DeleteRecord(ctx, recordConnection, name); err != nil {
		return fmt.Errorf("adapters: dropping connection %q: %w", name, err)
	}
	delete(s.apiConns, name)
	s.retireLocked(d)
	s.log.Info("data connection dropped", "connection", name, "revision", d.revision, "forced", force)
	return nil
}

// testConnection opens the connection's current revision (a fresh
// single-use Source, so a test never disturbs a pool) and tests it.
func (s *Service) testConnection(ctx context.Context, name string) (TestResult, error) {
	s.mu.Lock()
	d := s.activeConnLocked(name)
	s.mu.Unlock()
	if d == nil {
		return TestResult{}, s.notFoundConn(name)
	}
	start := s.now()
	src, secrets, err := s.openSource(ctx, d)
	if err != nil {
		var oe *OptionError
		cause := "error"
		if errors.As(err, &oe) {
			cause = "config"
		}
		return TestResult{Cause: cause, Message: err.Error(), Latency: s.now().Sub(start)}, nil
	}
	defer src.Close()
	t, ok := src.(Tester)
	if !ok {
		return TestResult{OK: true, Message: "connection type has no test", Latency: s.now().Sub(start)}, nil
	}
	res := t.Test(ctx)
	res.Message = scrubError(errors.New(res.Message), secrets...).Error()
	return res, nil
}

func (s *Service) resources(ctx context.Context, name string) ([]Resource, error) {
	l, err := s.acquire(ctx, name)
	if err != nil {
		return nil, err
	}
	defer l.release()
	rl, ok := l.src.(ResourceLister)
	if !ok {
		return nil, fmt.Errorf("adapters: data connection %q cannot list resources", name)
	}
	res, err := rl.Resources(ctx)
	return res, l.scrub(err)
}

// loadConnections reads the API connections from the metadata table.
// upgradeDurations rewrites the numeric duration options of a stored
// connection, which were seconds before numbers were refused, as "Ns".
func upgradeDurations(spec ConnectionSpec) {
	c, err := lookupConnector(spec.Type)
	if err != nil {
		return
	}
	defs := append(append([]OptionDef(nil), c.Options()...), poolOptionDefs...)
	for _, d := range defs {
		if d.Type != OptDuration {
			continue
		}
		if v, ok := spec.Options[d.Key]; ok {
			if n, err := toInt(v); err == nil && n > 0 {
				if _, isString := v.(string); !isString {
					spec.Options[d.Key] = fmt.Sprintf("%ds", n)
				}
			}
		}
	}
}

func (s *Service) loadConnections(ctx context.Context) error {
	recs, err := s.db.ListRecords(ctx, recordConnection)
	if err != nil {
		return fmt.Errorf("adapters: loading connections: %w", err)
	}
	for _, r := range recs {
		var cr connRecord
		if err := json.Unmarshal(r.Value, &cr); err != nil {
			s.log.Error("skipping unreadable stored connection", "connection", r.Name, "err", err)
			continue
		}
		upgradeDurations(cr.Spec)
		d, err := parseConnection("", cr.Spec)
		if err != nil {
			s.log.Error("skipping invalid stored connection", "connection", r.Name, "err", err)
			continue
		}
		d.origin, d.revision, d.created, d.updated = OriginAPI, cr.Revision, cr.CreatedAt, cr.UpdatedAt
		s.apiConns[d.spec.Name] = d
	}
	return nil
}

// keepRedactedSecrets lets a client GET a connection, change a field and PUT
// the body back: a secret option whose value is the placeholder "REDACTED"
// (what responses show for a literal secret) keeps the secret of the
// connection it replaces, as Grafana does with its secure fields. Without
// a previous literal secret of the same type and key, the placeholder is
// refused with an *OptionError rather than stored as a password. spec is
// returned with the previous secrets filled in; its Options map is copied,
// never modified.
func keepRedactedSecrets(spec ConnectionSpec, old *connDef) (ConnectionSpec, error) {
	c, err := lookupConnector(spec.Type)
	if err != nil {
		return spec, nil // parseConnection reports the unknown type
	}
	var opts map[string]any
	for _, def := range c.Options() {
		if def.Type != OptSecret {
			continue
		}
		v, ok := spec.Options[def.Key].(string)
		if !ok || v != redacted {
			continue
		}
		var prev any
		if old != nil && old.spec.Type == spec.Type {
			prev = old.spec.Options[def.Key]
		}
		if ps, ok := prev.(string); !ok || ps == redacted || isSecretRef(ps) {
			return spec, &OptionError{Key: "options." + def.Key, Msg: `"REDACTED" is the placeholder responses show for a secret; give the secret itself or an env:NAME / file:/path reference`}
		}
		if opts == nil {
			opts = make(map[string]any, len(spec.Options))
			for k, v := range spec.Options {
				opts[k] = v
			}
		}
		opts[def.Key] = prev
	}
	if opts != nil {
		spec.Options = opts
	}
	return spec, nil
}
