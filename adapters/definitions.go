package adapters

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// Data connections and adapters are both named definitions of one of two
// origins, under one rule: a config-file definition shadows an API one of
// the same name. The shadowed API definition is kept (stored, listed with
// status "shadowed", never deleted) and is in force again once the config
// one is removed. definitions implements that rule for both kinds.

// Origin says where a definition comes from.
type Origin string

const (
	// OriginConfig is a definition from the config file, read-only
	// through the API.
	OriginConfig Origin = "config"
	// OriginAPI is a definition made through the admin API, persisted in
	// the metadata table.
	OriginAPI Origin = "api"
)

// Status of a reported definition (Connection.Status, Adapter.Status).
const (
	statusActive   = "active"
	statusShadowed = "shadowed" // an API definition hidden by a config one
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// checkName checks a connection, adapter or dataset name; key is the
// option key named in the error.
func checkName(key, name string) error {
	if !nameRE.MatchString(name) {
		return &OptionError{Key: key, Msg: "want 1 to 128 letters, digits, '_', '.', '-', starting with a letter or digit"}
	}
	return nil
}

// defMeta is what every definition carries besides its spec.
type defMeta struct {
	origin   Origin
	revision int64 // 1 at creation, +1 at every replace
	created  time.Time
	updated  time.Time
}

func (m *defMeta) meta() *defMeta { return m }

// definition is a *connDef or an *adapterDef (both embed defMeta).
type definition interface {
	comparable
	meta() *defMeta
}

// defKind names one kind of definition in errors, log lines and records.
type defKind struct {
	noun     string // "connection" or "adapter": error texts and log keys
	record   string // record kind in the metadata table
	notFound error  // sentinel of an unknown name
	exists   error  // sentinel of a create over an existing name
	readOnly error  // sentinel of a change to a config definition
}

// definitions holds the definitions of one kind by origin and name. The
// Service's mu guards it.
type definitions[D definition] struct {
	kind   defKind
	config map[string]D
	api    map[string]D
}

func newDefinitions[D definition](kind defKind) definitions[D] {
	return definitions[D]{kind: kind, config: map[string]D{}, api: map[string]D{}}
}

// active returns the definition in force under name: the config one, else
// the API one; ok is false when neither exists.
func (ds *definitions[D]) active(name string) (d D, ok bool) {
	if d, ok = ds.config[name]; ok {
		return d, true
	}
	d, ok = ds.api[name]
	return d, ok
}

// get is active with the kind's not-found error.
func (ds *definitions[D]) get(name string) (D, error) {
	d, ok := ds.active(name)
	if !ok {
		return d, ds.notFound(name)
	}
	return d, nil
}

func (ds *definitions[D]) notFound(name string) error {
	return fmt.Errorf("%w: %q", ds.kind.notFound, name)
}

// defEntry is one definition with its name and status.
type defEntry[D definition] struct {
	name   string
	def    D
	status string // statusActive or statusShadowed
}

// entries returns every definition of both origins with its status, sorted
// by name, then origin (so a shadowed API definition comes just before the
// config one that hides it).
func (ds *definitions[D]) entries() []defEntry[D] {
	out := make([]defEntry[D], 0, len(ds.config)+len(ds.api))
	for n, d := range ds.config {
		out = append(out, defEntry[D]{n, d, statusActive})
	}
	for n, d := range ds.api {
		status := statusActive
		if _, shadowed := ds.config[n]; shadowed {
			status = statusShadowed
		}
		out = append(out, defEntry[D]{n, d, status})
	}
	slices.SortFunc(out, func(a, b defEntry[D]) int {
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.def.meta().origin, b.def.meta().origin))
	})
	return out
}

// report returns every definition as reported by f, in entries order.
func report[D definition, R any](ds *definitions[D], f func(d D, status string) R) []R {
	var out []R
	for _, e := range ds.entries() {
		out = append(out, f(e.def, e.status))
	}
	return out
}

// checkPut checks that name may be stored as an API definition, created
// (mustCreate) or created or replaced, and returns the API definition it
// replaces (zero for a new name).
func (ds *definitions[D]) checkPut(name string, mustCreate bool) (old D, err error) {
	if _, ok := ds.config[name]; ok {
		if mustCreate {
			return old, fmt.Errorf("%w: %q (defined in the config file)", ds.kind.exists, name)
		}
		return old, fmt.Errorf("%w: %q", ds.kind.readOnly, name)
	}
	old, ok := ds.api[name]
	if ok && mustCreate {
		return old, fmt.Errorf("%w: %q", ds.kind.exists, name)
	}
	return old, nil
}

// checkDelete returns the API definition a drop or delete of name removes.
func (ds *definitions[D]) checkDelete(name string) (D, error) {
	var zero D
	if _, ok := ds.config[name]; ok {
		return zero, fmt.Errorf("%w: %q", ds.kind.readOnly, name)
	}
	d, ok := ds.api[name]
	if !ok {
		return zero, ds.notFound(name)
	}
	return d, nil
}

// addConfig adds a config-file definition: revision 1, made now.
func (ds *definitions[D]) addConfig(name string, d D, now time.Time) {
	m := d.meta()
	m.origin, m.revision, m.created, m.updated = OriginConfig, 1, now, now
	ds.config[name] = d
}

// store persists d, with spec as given, as the API definition name that
// replaces old (zero for a new name: revision 1), then makes it the one
// in force. The record is written before d becomes visible.
func (ds *definitions[D]) store(ctx context.Context, db *snapshot.DB, name string, spec any, d, old D, now time.Time) error {
	m := d.meta()
	m.origin, m.created, m.updated, m.revision = OriginAPI, now, now, 1
	var zero D
	if old != zero {
		m.created, m.revision = old.meta().created, old.meta().revision+1
	}
	b, err := json.Marshal(defRecord[any]{Spec: spec, Revision: m.revision, CreatedAt: m.created, UpdatedAt: m.updated})
	if err != nil {
		return fmt.Errorf("adapters: encoding %s %q: %w", ds.kind.noun, name, err)
	}
	if err := db.PutRecord(ctx, ds.kind.record, name, b); err != nil {
		return fmt.Errorf("adapters: saving %s %q: %w", ds.kind.noun, name, err)
	}
	ds.api[name] = d
	return nil
}

// loadDefinitions reads the stored API definitions of ds's kind into it
// (readDefinitions).
func loadDefinitions[S any, D definition](ctx context.Context, db *snapshot.DB, log *slog.Logger, ds *definitions[D], parse func(S) (D, error)) error {
	fresh, err := readDefinitions(ctx, db, log, ds.kind, parse)
	if err != nil {
		return err
	}
	maps.Copy(ds.api, fresh)
	return nil
}

// readDefinitions reads the stored API definitions of kind; parse checks
// a stored spec as the API checks a new one. A record that does not
// decode or no longer parses is logged and skipped, so that one bad record
// never stops the service.
func readDefinitions[S any, D definition](ctx context.Context, db *snapshot.DB, log *slog.Logger, kind defKind, parse func(S) (D, error)) (map[string]D, error) {
	noun := kind.noun
	recs, err := db.ListRecords(ctx, kind.record)
	if err != nil {
		return nil, fmt.Errorf("adapters: loading %ss: %w", noun, err)
	}
	out := make(map[string]D, len(recs))
	for _, r := range recs {
		var rec defRecord[S]
		if err := json.Unmarshal(r.Value, &rec); err != nil {
			log.Error("skipping unreadable stored "+noun, noun, r.Name, "err", err)
			continue
		}
		d, err := parse(rec.Spec)
		if err != nil {
			log.Error("skipping invalid stored "+noun, noun, r.Name, "err", err)
			continue
		}
		m := d.meta()
		m.origin, m.revision, m.created, m.updated = OriginAPI, rec.Revision, rec.CreatedAt, rec.UpdatedAt
		out[r.Name] = d
	}
	return out, nil
}

// defChange is one API definition that another node created (old zero),
// replaced or deleted (new zero).
type defChange[D definition] struct {
	name     string
	old, new D
}

// sync makes fresh, as read from the metadata table, the API definitions
// of ds and returns what changed: a name whose revision or update time
// differs was replaced (a delete then a create of one name gives the same
// revision, never the same time).
func (ds *definitions[D]) sync(fresh map[string]D) []defChange[D] {
	var out []defChange[D]
	var zero D
	for name, d := range fresh {
		old, ok := ds.api[name]
		if ok && old.meta().revision == d.meta().revision && old.meta().updated.Equal(d.meta().updated) {
			continue
		}
		out = append(out, defChange[D]{name: name, old: old, new: d})
		ds.api[name] = d
	}
	for name, old := range ds.api {
		if _, ok := fresh[name]; !ok {
			out = append(out, defChange[D]{name: name, old: old, new: zero})
			delete(ds.api, name)
		}
	}
	slices.SortFunc(out, func(a, b defChange[D]) int { return cmp.Compare(a.name, b.name) })
	return out
}
