package adapters

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/snapstore/snapstore/api"
)

// Connection is a data connection as reported: secrets redacted.
type Connection struct {
	Name    string         `json:"name"`
	Type    string         `json:"type"`
	Sharing Sharing        `json:"sharing"`
	Options map[string]any `json:"options"` // secret values are "REDACTED"
	Source  Origin         `json:"source"`
	// Status is "active", or "shadowed" for an API definition hidden by a
	// config definition of the same name.
	Status    string    `json:"status"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Adapters names the adapters that use the connection.
	Adapters []string `json:"adapters,omitempty"`
}

// connDef is one data connection definition. Its fields are immutable
// once it is in a Service's definitions, except h, guarded by Service.mu.
type connDef struct {
	defMeta
	spec api.Connection // options as given (secrets as given)
	conn Connector
	opts OptionValues // typed, secrets unresolved
	pool PoolOptions
	// h is the shared handle of a shared or pooled connection, opened on
	// first use; nil for single-use or before first use.
	h *handle
}

// connectionKind names data connections in definitions.
var connectionKind = defKind{
	noun:     "connection",
	record:   recordConnection,
	notFound: ErrConnectionNotFound,
	exists:   ErrConnectionExists,
	readOnly: ErrConnectionReadOnly,
}

// parseConnection checks a spec and types its options; prefix names its
// place in the config file ("connections[2].") or is empty for the API.
// Every problem is an *OptionError, joined.
func parseConnection(prefix string, spec api.Connection) (*connDef, error) {
	var errs []error
	if err := checkName(prefix+"name", spec.Name); err != nil {
		errs = append(errs, err)
	}
	sharing, err := parseSharing(prefix+"sharing", Sharing(spec.Sharing))
	if err != nil {
		errs = append(errs, err)
	}
	spec.Sharing = string(sharing)
	c, err := lookupConnector(spec.Type)
	if err != nil {
		errs = append(errs, optionErrorIs(&OptionError{Key: prefix + "type", Msg: fmt.Sprintf("unknown connection type %q, known: %s", spec.Type, strings.Join(connectorNames(), ", "))}, ErrUnknownType))
		return nil, errors.Join(errs...)
	}
	opts, pool, err := parseOptions(prefix+"options.", c.Options(), sharing, spec.Options)
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

// ListConnections lists every data connection, sorted by name, then
// origin; an API definition hidden by a config one of the same name is
// listed with status "shadowed".
func (s *Service) ListConnections() []Connection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return report(&s.conns, s.reportConnLocked)
}

// GetConnection returns the active connection named name (the config
// definition when both origins define it). ErrConnectionNotFound.
func (s *Service) GetConnection(ctx context.Context, name string) (Connection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.conns.get(name)
	if err != nil {
		return Connection{}, err
	}
	return s.reportConnLocked(d, statusActive), nil
}

// CreateConnection creates an API connection. ErrConnectionExists when the
// name is defined (either origin); *OptionError for a bad spec.
func (s *Service) CreateConnection(ctx context.Context, spec api.Connection) (Connection, error) {
	c, _, err := s.putConnection(ctx, spec, true)
	return c, err
}

// PutConnection creates or replaces an API connection; a replace makes a
// new revision and retires the old one's pool (N1, N2). created reports
// which. ErrConnectionReadOnly for a config connection; *OptionError for a
// bad spec, a secret option given as "REDACTED" where it cannot keep
// the replaced revision's secret (keepRedactedSecrets), or a secret
// reference or a file option the limits do not allow (SecretRefLimits,
// FileOptionLimits).
func (s *Service) PutConnection(ctx context.Context, spec api.Connection) (c Connection, created bool, err error) {
	return s.putConnection(ctx, spec, false)
}

// putConnection implements CreateConnection (mustCreate) and PutConnection:
// the definition is persisted before it becomes visible.
func (s *Service) putConnection(ctx context.Context, spec api.Connection, mustCreate bool) (Connection, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	spec, d, err := s.parseAPIConnectionLocked(spec)
	if err != nil {
		return Connection{}, false, err
	}
	if err := errors.Join(s.checkSecretRefs(d), s.checkFileOptions(d)); err != nil {
		return Connection{}, false, err
	}
	if s.closing {
		return Connection{}, false, ErrShuttingDown
	}
	old, err := s.conns.checkPut(spec.Name, mustCreate)
	if err != nil {
		return Connection{}, false, err
	}
	stored, err := s.secrets.sealSpec(d.spec)
	if err != nil {
		return Connection{}, false, err
	}
	if err := s.conns.store(ctx, s.db, spec.Name, stored, d, old, s.now().UTC()); err != nil {
		return Connection{}, false, err
	}
	if old != nil {
		s.retireLocked(old)
	}
	s.changedLocked(connectionKind, spec.Name)
	s.log.Info("data connection saved", "connection", spec.Name, "revision", d.revision, "type", d.spec.Type)
	return s.reportConnLocked(d, statusActive), old == nil, nil
}

// ValidateConnection checks an API connection definition as
// CreateConnection and PutConnection first do, without opening anything:
// its name, type, sharing and options, a secret given as "REDACTED"
// taking the stored one (keepRedactedSecrets). Every problem is an
// *OptionError (some marked, as ErrUnknownType), joined, keyed as the API
// names them ("options.port"). The checks of the server's limits
// (secret references, file options) come after, in the create or put.
func (s *Service) ValidateConnection(spec api.Connection) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _, err := s.parseAPIConnectionLocked(spec)
	return err
}

// parseAPIConnectionLocked returns spec with the stored secrets its
// "REDACTED" options keep, and its definition; or every problem of the
// two, joined (a key the placeholder's refusal names is not reported
// again by the parse).
func (s *Service) parseAPIConnectionLocked(spec api.Connection) (api.Connection, *connDef, error) {
	spec, kerr := keepRedactedSecrets(spec, s.conns.api[spec.Name])
	d, err := parseConnection("", spec)
	if kerr == nil {
		return spec, d, err
	}
	var oe *OptionError
	errors.As(kerr, &oe)
	errs := []error{kerr}
	for _, e := range splitErrors(err) {
		var pe *OptionError
		if errors.As(e, &pe) && oe != nil && pe.Key == oe.Key {
			continue
		}
		errs = append(errs, e)
	}
	return spec, nil, errors.Join(errs...)
}

// checkSecretRefs refuses the secret references of an API definition d
// that the limits do not allow (F2); every refusal is an *OptionError,
// joined.
func (s *Service) checkSecretRefs(d *connDef) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(d.opts)) {
		if sec, ok := d.opts[k].(Secret); ok {
			if err := s.secretRefs.check("options."+k, sec.Reveal()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// DropConnection drops an API connection. Runs holding it finish on it; it
// closes when the last one ends (N1), and later runs fail with
// ErrConnectionNotFound (N2). ErrConnectionInUse, listing the adapters
// that name it, unless force (N3); ErrConnectionReadOnly for a config one.
func (s *Service) DropConnection(ctx context.Context, name string, force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.conns.checkDelete(name)
	if err != nil {
		return err
	}
	if users := s.adaptersUsingLocked(name); len(users) > 0 && !force {
		return fmt.Errorf("%w: %q is named by adapters %s; delete or change them, or drop with force", ErrConnectionInUse, name, strings.Join(users, ", "))
	}
	if err := s.db.DeleteRecord(ctx, recordConnection, name); err != nil {
		return fmt.Errorf("adapters: dropping connection %q: %w", name, err)
	}
	delete(s.conns.api, name)
	s.retireLocked(d)
	s.changedLocked(connectionKind, name)
	s.log.Info("data connection dropped", "connection", name, "revision", d.revision, "forced", force)
	return nil
}

func (s *Service) reportConnLocked(d *connDef, status string) Connection {
	return Connection{
		Name:      d.spec.Name,
		Type:      d.spec.Type,
		Sharing:   Sharing(d.spec.Sharing),
		Options:   redactOptions(d.conn.Options(), d.spec.Options),
		Source:    d.origin,
		Status:    status,
		Revision:  d.revision,
		CreatedAt: d.created,
		UpdatedAt: d.updated,
		Adapters:  s.adaptersUsingLocked(d.spec.Name),
	}
}

// adaptersUsingLocked lists the adapters of either origin, shadowed ones
// included, that name connection conn; sorted, each name once.
func (s *Service) adaptersUsingLocked(conn string) []string {
	out := []string{}
	for _, e := range s.adapters.entries() {
		if e.def.spec.Connection == conn && (len(out) == 0 || out[len(out)-1] != e.name) {
			out = append(out, e.name)
		}
	}
	return out
}

// loadConnections reads the API connections from the metadata table.
func (s *Service) loadConnections(ctx context.Context) error {
	return loadDefinitions(ctx, s.db, s.log, &s.conns, s.parseStoredConnection)
}

// upgradeDurations rewrites the numeric duration options of a stored
// connection, which were seconds before numbers were refused, as "Ns".
func upgradeDurations(spec api.Connection) {
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
