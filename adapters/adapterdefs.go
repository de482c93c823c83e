package adapters

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/api"
)

// Adapter is an adapter as reported.
type Adapter struct {
	api.Adapter
	Source    Origin    `json:"source"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// NextRun is the next scheduled start, if scheduled (and the
	// scheduler runs).
	NextRun *time.Time `json:"next_run,omitempty"`
	// Status is "active", or "shadowed" for an API definition hidden by a
	// config definition of the same name.
	Status string `json:"status"`
	// Owner is, in a cluster, the node that fires the adapter's scheduled
	// ticks (L1); SingleNode, for a single-node adapter, the node its runs
	// go to (L3). Empty alone, or when no node is active.
	Owner      string `json:"owner,omitempty"`
	SingleNode string `json:"single_node,omitempty"`
	// Warnings, in the answer of a create or replace only, say what was
	// accepted unchecked: a source that could not be reached or refused
	// the credentials (checkResource); or, for several tables, what
	// every run will fail on: selected tables without a usable key.
	Warnings []string `json:"warnings,omitempty"`
}

// adapterDef is one adapter definition; immutable once it is in a
// Service's definitions (a replace swaps the pointer).
type adapterDef struct {
	defMeta
	spec  api.Adapter
	sched cron.Schedule // nil without a schedule
}

// adapterKind names adapters in definitions.
var adapterKind = defKind{
	noun:     "adapter",
	record:   recordAdapter,
	notFound: ErrAdapterNotFound,
	exists:   ErrAdapterExists,
	readOnly: ErrAdapterReadOnly,
}

// Defaults an adapter gets for a zero field; responses show them, so a
// stored or reported spec always carries the effective value.
const (
	// defaultMinVersions is retention.min_versions when 0: the current
	// version is always kept.
	defaultMinVersions = 1
	// defaultMaxShrink is guard.max_shrink when 0: a run may delete at
	// most half the rows (snapshot's default too).
	defaultMaxShrink = 0.5
)

const (
	defaultRetryBackoff = 10 * time.Second
	maxRetries          = 100
)

// parseAdapter checks a spec and fills its defaults (A3); prefix names its
// place in the config file ("adapters[0].") or is empty for the API. Every
// problem is an *OptionError, joined. The caller checks that the
// connection exists and the dataset is free (A1).
func parseAdapter(prefix string, spec api.Adapter) (*adapterDef, error) {
	var errs []error
	if err := checkName(prefix+"name", spec.Name); err != nil {
		errs = append(errs, err)
	}
	if spec.Connection == "" {
		errs = append(errs, &OptionError{Key: prefix + "connection", Msg: "required"})
	}
	switch {
	case spec.ManyTables() && spec.Resource != "":
		errs = append(errs, &OptionError{Key: prefix + "resource", Msg: "set resource for a dataset of one table, or resources, include and exclude for several tables, not both"})
	case !spec.ManyTables() && spec.Resource == "":
		errs = append(errs, &OptionError{Key: prefix + "resource", Msg: "required: the source table or view (or resources, include, exclude for several tables)"})
	}
	if spec.Dataset == "" {
		spec.Dataset = spec.Name
	} else if err := checkName(prefix+"dataset", spec.Dataset); err != nil {
		errs = append(errs, err)
	}
	seen := map[string]bool{}
	for i, k := range spec.KeyColumns {
		if k == "" || seen[k] {
			errs = append(errs, &OptionError{Key: fmt.Sprintf("%skey_columns[%d]", prefix, i), Msg: "empty or repeated column name"})
		}
		seen[k] = true
	}
	var sch cron.Schedule
	if spec.Schedule != "" {
		var err error
		if sch, err = parseSchedule(spec.Schedule); err != nil {
			errs = append(errs, optionErrorIs(&OptionError{Key: prefix + "schedule", Msg: strings.TrimPrefix(err.Error(), ErrBadSchedule.Error()+": ")}, ErrBadSchedule))
		}
	}
	if spec.Retries < 0 || spec.Retries > maxRetries {
		errs = append(errs, &OptionError{Key: prefix + "retries", Msg: fmt.Sprintf("want 0 to %d", maxRetries)})
	}
	if spec.RetryBackoff < 0 {
		errs = append(errs, &OptionError{Key: prefix + "retry_backoff", Msg: "want a non-negative duration"})
	} else if spec.RetryBackoff == 0 && spec.Retries > 0 {
		spec.RetryBackoff = api.Duration(defaultRetryBackoff)
	}
	if spec.Retention.TTL < 0 {
		errs = append(errs, &OptionError{Key: prefix + "retention.ttl", Msg: "want a non-negative duration"})
	}
	if spec.Retention.MinVersions < 0 {
		errs = append(errs, &OptionError{Key: prefix + "retention.min_versions", Msg: fmt.Sprintf("want 0 (default 1) or more, got %d", spec.Retention.MinVersions)})
	} else if spec.Retention.MinVersions == 0 {
		spec.Retention.MinVersions = defaultMinVersions
	}
	if !(spec.Guard.MaxShrink >= 0 && spec.Guard.MaxShrink <= 1) { // NaN too (a form's or YAML's .nan)
		errs = append(errs, &OptionError{Key: prefix + "guard.max_shrink", Msg: fmt.Sprintf("want a fraction from 0 (default %g) to 1, got %g", defaultMaxShrink, spec.Guard.MaxShrink)})
	} else if spec.Guard.MaxShrink == 0 {
		spec.Guard.MaxShrink = defaultMaxShrink
	}
	strategy, err := parseStrategy(prefix+"strategy", Strategy(spec.Strategy))
	if err != nil {
		errs = append(errs, err)
	}
	spec.Strategy = string(strategy)
	if spec.TransferCompression, err = parseTransferCompression(prefix+"transfer_compression", strategy, spec.TransferCompression); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkPartitionKey(prefix+"partition_key", strategy, spec.PartitionKey)...)
	errs = append(errs, checkTables(prefix, strategy, spec)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &adapterDef{spec: spec, sched: sch}, nil
}

// maxParallelism bounds api.Adapter.Parallelism.
const maxParallelism = 64

// checkTables checks the fields of a dataset of several tables: every
// resource named once, every pattern valid (source.TableSelection), and
// the fields that apply to one table, or to several, used only there.
func checkTables(prefix string, strategy Strategy, spec api.Adapter) []error {
	var errs []error
	seen := map[string]bool{}
	for i, r := range spec.Resources {
		if strings.TrimSpace(r) == "" || seen[r] {
			errs = append(errs, &OptionError{Key: fmt.Sprintf("%sresources[%d]", prefix, i), Msg: "empty or repeated resource"})
		}
		seen[r] = true
	}
	for _, l := range []struct {
		field string
		pats  []string
	}{{"include", spec.Include}, {"exclude", spec.Exclude}} {
		for i, p := range l.pats {
			key := fmt.Sprintf("%s%s[%d]", prefix, l.field, i)
			switch {
			case p == "":
				errs = append(errs, &OptionError{Key: key, Msg: "empty pattern"})
			case (source.TableSelection{Include: []string{p}}).Validate() != nil:
				errs = append(errs, &OptionError{Key: key, Msg: fmt.Sprintf("%q is not a glob pattern (path.Match)", p)})
			}
		}
	}
	if spec.Parallelism < 0 || spec.Parallelism > maxParallelism {
		errs = append(errs, &OptionError{Key: prefix + "parallelism", Msg: fmt.Sprintf("want 0 (the connection's default) to %d, got %d", maxParallelism, spec.Parallelism)})
	}
	if !spec.ManyTables() {
		if spec.AllowDroppedTables {
			errs = append(errs, &OptionError{Key: prefix + "allow_dropped_tables", Msg: "applies to a dataset of several tables (resources, include, exclude) only"})
		}
		if len(spec.TableKeys) > 0 {
			errs = append(errs, &OptionError{Key: prefix + "table_keys", Msg: "applies to a dataset of several tables (resources, include, exclude) only; one table's key is key_columns"})
		}
		return errs
	}
	if len(spec.KeyColumns) > 0 {
		errs = append(errs, &OptionError{Key: prefix + "key_columns", Msg: "not with several tables: each table's key is its primary key, or its entry of table_keys"})
	}
	for _, name := range slices.Sorted(maps.Keys(spec.TableKeys)) {
		key := prefix + "table_keys." + name
		cols := spec.TableKeys[name]
		switch {
		case strings.TrimSpace(name) == "":
			errs = append(errs, &OptionError{Key: prefix + "table_keys", Msg: "an empty table name"})
			continue
		case len(cols) == 0:
			errs = append(errs, &OptionError{Key: key, Msg: "want the table's key columns, one or more"})
		}
		seen := map[string]bool{}
		for i, c := range cols {
			if c == "" || seen[c] {
				errs = append(errs, &OptionError{Key: fmt.Sprintf("%s[%d]", key, i), Msg: "empty or repeated column name"})
			}
			seen[c] = true
		}
	}
	if len(spec.SourceOptions) > 0 {
		errs = append(errs, &OptionError{Key: prefix + "source_options", Msg: "not with several tables"})
	}
	if len(spec.PartitionKey) > 0 {
		errs = append(errs, &OptionError{Key: prefix + "partition_key", Msg: "not with several tables: each table's rows are placed by its key"})
	}
	return errs
}

// ListAdapters lists every adapter, sorted by name, then origin; an API
// definition hidden by a config one of the same name is listed with status
// "shadowed".
func (s *Service) ListAdapters() []Adapter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return report(&s.adapters, s.reportAdapterLocked)
}

// AuditsReads reports whether an adapter in force that writes dataset
// asks for its reads to be audited (api.Adapter.AuditReads). It takes no
// lock: every read of rows asks it.
func (s *Service) AuditsReads(dataset string) bool {
	p := s.auditReads.Load()
	return p != nil && (*p)[dataset]
}

// indexAuditReadsLocked rebuilds the set AuditsReads reads. Caller holds
// s.mu (or owns s, in New).
func (s *Service) indexAuditReadsLocked() {
	set := map[string]bool{}
	for _, e := range s.adapters.entries() {
		if e.status == statusActive && e.def.spec.AuditReads {
			set[e.def.spec.Dataset] = true
		}
	}
	s.auditReads.Store(&set)
}

// GetAdapter returns the active adapter named name (the config definition
// when both origins define it). ErrAdapterNotFound.
func (s *Service) GetAdapter(ctx context.Context, name string) (Adapter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.adapters.get(name)
	if err != nil {
		return Adapter{}, err
	}
	return s.reportAdapterLocked(a, statusActive), nil
}

// CreateAdapter creates an API adapter and its schedule. ErrAdapterExists,
// ErrConnectionNotFound, ErrDatasetTaken (A1), ErrResourceNotFound or
// ErrNoKey (A2), ErrBadSchedule and other *OptionError values for a bad
// spec.
func (s *Service) CreateAdapter(ctx context.Context, spec api.Adapter) (Adapter, error) {
	a, _, err := s.putAdapter(ctx, spec, true)
	return a, err
}

// PutAdapter creates or replaces an API adapter (a replace is a new
// revision); the schedule follows at once (C4). created reports which.
// ErrAdapterReadOnly for a config adapter; otherwise CreateAdapter's errors.
func (s *Service) PutAdapter(ctx context.Context, spec api.Adapter) (a Adapter, created bool, err error) {
	return s.putAdapter(ctx, spec, false)
}

// putAdapter implements CreateAdapter (mustCreate) and PutAdapter.
func (s *Service) putAdapter(ctx context.Context, spec api.Adapter, mustCreate bool) (Adapter, bool, error) {
	a, err := parseAdapter("", spec)
	if err != nil {
		return Adapter{}, false, err
	}
	s.mu.Lock()
	_, err = s.checkPutLocked(a, mustCreate)
	s.mu.Unlock()
	if err != nil {
		return Adapter{}, false, err
	}
	if err := s.checkDatasetKind(ctx, a.spec); err != nil {
		return Adapter{}, false, err
	}
	// Source I/O without the lock; the checks are repeated after it.
	warnings, err := s.checkResource(ctx, a.spec)
	if err != nil {
		return Adapter{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.checkPutLocked(a, mustCreate)
	if err != nil {
		return Adapter{}, false, err
	}
	if err := s.adapters.store(ctx, s.db, spec.Name, adapterRecordOf(a.spec), a, old, s.now().UTC()); err != nil {
		return Adapter{}, false, err
	}
	if s.sched != nil {
		s.sched.set(a.spec.Name, a.sched, a.spec.Retries, time.Duration(a.spec.RetryBackoff))
	}
	s.changedLocked(adapterKind, spec.Name)
	s.log.Info("adapter saved", "adapter", spec.Name, "dataset", a.spec.Dataset, "revision", a.revision, "schedule", a.spec.Schedule)
	rep := s.reportAdapterLocked(a, statusActive)
	rep.Warnings = warnings
	return rep, old == nil, nil
}

// checkPutLocked checks that a may be stored as an API adapter and returns
// the definition it replaces (nil for a new one).
func (s *Service) checkPutLocked(a *adapterDef, mustCreate bool) (*adapterDef, error) {
	name := a.spec.Name
	if s.closing {
		return nil, ErrShuttingDown
	}
	old, err := s.adapters.checkPut(name, mustCreate)
	if err != nil {
		return nil, err
	}
	d, ok := s.conns.active(a.spec.Connection)
	if !ok {
		return nil, optionErrorIs(&OptionError{Key: "connection", Msg: fmt.Sprintf("data connection %q does not exist", a.spec.Connection)}, ErrConnectionNotFound)
	}
	if _, err := parseSourceOptions("source_options.", d.conn, d.spec.Type, a.spec.SourceOptions); err != nil {
		return nil, err
	}
	if other := s.datasetWriterLocked(a.spec.Dataset, name); other != "" {
		return nil, optionErrorIs(&OptionError{Key: "dataset", Msg: fmt.Sprintf("dataset %q is already written by adapter %q; one adapter per dataset (delete or change that adapter, or choose another dataset)", a.spec.Dataset, other)}, ErrDatasetTaken)
	}
	return old, nil
}

// datasetWriterLocked returns the active adapter other than except that
// writes dataset, or "".
func (s *Service) datasetWriterLocked(dataset, except string) string {
	for _, e := range s.adapters.entries() {
		if e.status == statusActive && e.name != except && e.def.spec.Dataset == dataset {
			return e.name
		}
	}
	return ""
}

// checkDatasetKind refuses an adapter whose dataset holds a committed
// version of the other kind: several named tables for an adapter of one
// resource, one unnamed table for an adapter of several tables. The
// snapshot layer refuses each kind of run on the other's dataset, so
// every run of such an adapter would fail; the dataset must be another
// one, or dropped first.
func (s *Service) checkDatasetKind(ctx context.Context, spec api.Adapter) error {
	d, err := s.db.Dataset(ctx, spec.Dataset)
	if err != nil || d.CurrentInfo == nil {
		return nil // no dataset yet, or the store will say so again
	}
	named := len(d.CurrentInfo.Tables) > 0
	switch {
	case named && !spec.ManyTables():
		return &OptionError{Key: "dataset", Msg: fmt.Sprintf("dataset %q holds several tables, written by an adapter of several tables; an adapter of one resource needs a dataset of its own (name another dataset, or drop this one first)", spec.Dataset)}
	case !named && spec.ManyTables():
		return &OptionError{Key: "dataset", Msg: fmt.Sprintf("dataset %q holds one table, written by an adapter of one resource; an adapter of several tables needs a dataset of its own (name another dataset, or drop this one first)", spec.Dataset)}
	}
	return nil
}

// resourceCheckTimeout bounds the source check of an adapter create or
// replace; above the default connect_timeout (10s), so that a server that
// does not answer is reported by the connect bound, which names itself.
const resourceCheckTimeout = 15 * time.Second

// checkResource opens the adapter's resource through its connection, as a
// run would, and closes it again: a missing table (ErrResourceNotFound) or
// one without a usable key (ErrNoKey) refuses the adapter, and so does a
// resource the source refuses as a bad option (*OptionError: a snapstore
// dataset that is the adapter's own). When the source cannot be reached or
// refuses the credentials the adapter is accepted, since the source may
// come up later (A2): the problem is logged and returned as a warning for
// whoever saved the adapter. For several tables, include patterns that
// match no table while others do are warnings too; a selection of
// nothing but such patterns is refused, blaming include.
func (s *Service) checkResource(ctx context.Context, spec api.Adapter) (warnings []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, resourceCheckTimeout)
	defer cancel()
	l, err := s.acquire(ctx, spec.Connection)
	if err == nil && spec.ManyTables() {
		defer l.release()
		// Several tables: the selection resolves against the tables the
		// source lists now; each table's key is checked by the run, and
		// a table the listing gives none is a warning (the source may
		// gain the key before the first run).
		var sel []source.Resource
		if sel, warnings, err = s.selectTables(ctx, l, spec); err == nil {
			err = s.checkTableKeys(ctx, l, spec, sel)
			if err == nil {
				if w := keylessWarning(spec, sel); w != "" {
					warnings = append(warnings, w)
				}
				return warnings, nil
			}
			if errors.As(err, new(*OptionError)) {
				// An entry of table_keys the table refuses.
				return nil, fmt.Errorf("adapter %q: %w", spec.Name, err)
			}
		}
		if re := (*source.ResourceError)(nil); errors.As(err, &re) {
			return nil, optionErrorIs(&OptionError{Key: fmt.Sprintf("resources[%d]", re.Index), Msg: err.Error()}, err)
		}
		if errors.Is(err, source.ErrIncludeMatchesNothing) {
			return nil, optionErrorIs(&OptionError{Key: "include", Msg: err.Error()}, err)
		}
		if errors.Is(err, source.ErrBadSelection) && errors.Is(err, source.ErrResourceNotFound) {
			// include matches only tables exclude drops
			return nil, optionErrorIs(&OptionError{Key: "exclude", Msg: err.Error()}, err)
		}
		if errors.Is(err, source.ErrBadSelection) {
			return nil, optionErrorIs(&OptionError{Key: "resources", Msg: err.Error()}, err)
		}
		if errors.Is(err, errNoPoint) {
			return nil, optionErrorIs(&OptionError{Key: "connection", Msg: err.Error()}, err)
		}
	} else if err == nil {
		defer l.release()
		var tr TableReader
		tr, err = s.openResource(ctx, l, spec, 1)
		if err == nil {
			schema := tr.Schema()
			warnings = readCheck(ctx, l, spec, tr)
			if cerr := tr.Close(); cerr != nil {
				s.log.Debug("closing the resource check", "adapter", spec.Name, "err", l.scrub(cerr))
			}
			return warnings, partitionKeyInSource(spec, schema)
		}
	}
	switch {
	case spec.ManyTables() && l != nil && (errors.Is(err, ErrResourceNotFound) || errors.Is(err, errNoPoint)):
		// selectTables named the adapter and its connection already.
		return nil, err
	case errors.Is(err, ErrResourceNotFound), errors.Is(err, ErrNoKey), errors.Is(err, ErrConnectionNotFound), errors.Is(err, errNoPoint):
		return nil, fmt.Errorf("adapter %q: %w", spec.Name, err)
	case l != nil && errors.As(err, new(*OptionError)):
		// The source refused the resource itself (a snapstore dataset
		// that is the adapter's own).
		return nil, fmt.Errorf("adapter %q: %w", spec.Name, err)
	}
	err = source.WithBound(err, resourceCheckTimeout, "the bound of the resource check")
	s.log.Warn("adapter resource not checked", "adapter", spec.Name,
		"connection", spec.Connection, "resource", spec.Resource, "cause", checkCause(err), "err", err)
	return []string{fmt.Sprintf("%s not checked: %v; its runs fail alike until the connection's test passes (snapstore connections test %s)", checkedWhat(spec), err, spec.Connection)}, nil
}

// readCheck reads the first row of the resource check's reader tr (opened
// with chunks of one row), as a run's first read does: a source may show
// a table in its catalog to a user it does not let read it (a table
// without the SELECT grant), which only the read finds. Such a failure
// is a warning, since the source may allow the read before the first run.
func readCheck(ctx context.Context, l *lease, spec api.Adapter, tr TableReader) []string {
	if tr.Next(ctx) || tr.Err() == nil {
		return nil
	}
	err := source.WithBound(l.scrub(readError(ctx, spec.Connection, tr.Err())), resourceCheckTimeout, "the bound of the resource check")
	fix := "until that changes"
	if errors.Is(err, ErrSourcePermission) {
		fix = "with source_permission until the source grants the connection's user SELECT on it"
	}
	return []string{fmt.Sprintf("resource %q could not be read: %v; its runs fail %s", spec.Resource, err, fix)}
}

// keylessWarning is the warning of an adapter of several tables whose
// selection holds tables without a usable key (source.Resource.Key, the
// key a run would choose) and without an entry of table_keys; "" when
// every table has one.
func keylessWarning(spec api.Adapter, sel []source.Resource) string {
	var names []string
	for _, r := range sel {
		if len(r.Key) > 0 || len(spec.TableKeys[tableName(r)]) > 0 {
			continue
		}
		names = append(names, tableName(r))
	}
	if len(names) == 0 {
		return ""
	}
	it, its := "it", "its"
	if len(names) > 1 {
		it, its = "them", "their"
	}
	return fmt.Sprintf("no usable key in %s: every run fails with no_key until the selection excludes %s (exclude), table_keys names %s key columns, or the source gives %s a primary key", strings.Join(names, ", "), it, its, it)
}

// checkTableKeys opens each table of the selection sel that has an entry
// of spec's table_keys with that key, as a run would: key columns the
// table lacks, or of a type that cannot be a key, refuse the adapter,
// blaming the entry. Whether the key is unique is seen by the runs.
func (s *Service) checkTableKeys(ctx context.Context, l *lease, spec api.Adapter, sel []source.Resource) error {
	q := source.QuoteOf(l.src)
	for _, r := range sel {
		name := tableName(r)
		cols := spec.TableKeys[name]
		if len(cols) == 0 {
			continue
		}
		tr, err := l.src.OpenTable(ctx, TableRequest{Resource: quotedResource(r, q), KeyColumns: cols, Dataset: spec.Dataset})
		if err != nil {
			err = l.scrub(err)
			if errors.Is(err, ErrNoKey) {
				return optionErrorIs(&OptionError{Key: "table_keys." + name, Msg: err.Error()}, err)
			}
			return fmt.Errorf("table %s: %w", name, err)
		}
		if err := tr.Close(); err != nil {
			s.log.Debug("closing the key check", "adapter", spec.Name, "table", name, "err", l.scrub(err))
		}
	}
	return nil
}

// checkedWhat names what checkResource checks: the resource, or for an
// adapter of several tables its selection.
func checkedWhat(spec api.Adapter) string {
	if !spec.ManyTables() {
		return fmt.Sprintf("resource %q", spec.Resource)
	}
	var parts []string
	for _, l := range []struct {
		key  string
		list []string
	}{{"resources", spec.Resources}, {"include", spec.Include}, {"exclude", spec.Exclude}} {
		if len(l.list) > 0 {
			parts = append(parts, fmt.Sprintf("%s %q", l.key, l.list))
		}
	}
	if len(parts) == 0 {
		return "the tables (every table)"
	}
	return "the tables (" + strings.Join(parts, ", ") + ")"
}

// checkCause classifies why a resource check could not be made, for the
// log: a *SourceError's cause (auth, unreachable, timeout, ...), "config"
// for a connection whose options do not resolve, else "error".
func checkCause(err error) string {
	var se *SourceError
	switch {
	case errors.As(err, &se):
		return se.Cause
	case errors.Is(err, ErrBadOption):
		return "config"
	}
	return "error"
}

// DeleteAdapter deletes an API adapter and its schedule; its dataset and
// run records stay. ErrAdapterNotFound; ErrAdapterReadOnly for a config
// adapter.
func (s *Service) DeleteAdapter(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.adapters.checkDelete(name); err != nil {
		return err
	}
	if err := s.db.DeleteRecord(ctx, recordAdapter, name); err != nil {
		return fmt.Errorf("adapters: deleting adapter %q: %w", name, err)
	}
	delete(s.adapters.api, name)
	if s.sched != nil {
		s.sched.set(name, nil, 0, 0)
	}
	if err := s.db.DeleteRecord(ctx, recordFire, name); err != nil {
		s.log.Warn("deleting the fire record of a deleted adapter", "adapter", name, "err", err)
	}
	s.changedLocked(adapterKind, name)
	s.log.Info("adapter deleted", "adapter", name)
	return nil
}

func (s *Service) reportAdapterLocked(a *adapterDef, status string) Adapter {
	out := Adapter{Adapter: a.spec, Source: a.origin, Revision: a.revision, CreatedAt: a.created, UpdatedAt: a.updated, Status: status}
	out.KeyColumns = append([]string(nil), a.spec.KeyColumns...)
	out.TableKeys = maps.Clone(a.spec.TableKeys)
	if status == statusActive && s.sched != nil {
		if t, ok := s.sched.nextRun(a.spec.Name); ok {
			out.NextRun = &t
		}
	}
	if status == statusActive && s.cluster != nil {
		out.Owner, _ = s.cluster.Owner(a.spec.Name)
		if Strategy(a.spec.Strategy) == StrategySingleNode {
			out.SingleNode, _, _ = s.cluster.SingleNode()
		}
	}
	return out
}

// loadAdapters reads the API adapters from the metadata table.
func (s *Service) loadAdapters(ctx context.Context) error {
	return loadDefinitions(ctx, s.db, s.log, &s.adapters, parseStoredAdapter)
}
