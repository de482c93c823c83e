package adapters

import (
	"context"
	"errors"
	"fmt"
	"github.com/snapstore/snapstore/adapters/source"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/snapstore/snapstore/snapshot"
)

// AdapterSpec defines an adapter: which resource of which connection feeds
// which dataset, when, and under which retention and guards.
type AdapterSpec struct {
	Name       string `json:"name" yaml:"name"`
	Connection string `json:"connection" yaml:"connection"`
	// Resource is the source table or view, "table" or "schema.table".
	Resource string `json:"resource" yaml:"resource"`
	// Dataset is the target dataset; default Name.
	Dataset    string   `json:"dataset,omitempty" yaml:"dataset"`
	KeyColumns []string `json:"key_columns,omitempty" yaml:"key_columns"`
	// Schedule is a robfig/cron/v3 spec (5 fields, optional seconds,
	// CRON_TZ=, @every, descriptors); empty means manual runs only.
	Schedule  string             `json:"schedule,omitempty" yaml:"schedule"`
	Retention snapshot.Retention `json:"retention" yaml:"retention"`
	Guard     snapshot.Guard     `json:"guard" yaml:"guard"`
	// Retries is how many times a failed scheduled run is retried; default 0.
	Retries int `json:"retries,omitempty" yaml:"retries"`
	// RetryBackoff is the first retry's delay, doubled each retry; default 10s.
	RetryBackoff time.Duration `json:"retry_backoff,omitempty" yaml:"retry_backoff"`
	// RunOnStart starts one run when the service starts with its
	// scheduler (snapstore serve), trigger "start", so the dataset has a
	// version before the first schedule tick; default false.
	RunOnStart bool `json:"run_on_start,omitempty" yaml:"run_on_start"`
	// EmbedJSON serves the dataset's JSON columns as the documents
	// themselves (snapshot.KindEmbeddedJSON) instead of their text in a
	// JSON string (snapshot.KindJSON); then the document null and SQL NULL
	// both read as null. Default false.
	EmbedJSON bool `json:"embed_json,omitempty" yaml:"embed_json"`
	// CommitUnchanged makes a run that finds the source unchanged commit
	// a version all the same, one version per run; by default it records
	// that the current version was verified instead (checksums.go).
	CommitUnchanged bool `json:"commit_unchanged,omitempty" yaml:"commit_unchanged"`
	// Strategy says where the adapter's runs happen in a cluster
	// (strategy.go, L1-L4); default StrategyLocal.
	Strategy Strategy `json:"strategy,omitempty" yaml:"strategy"`
	// TransferCompression is what the rows a partition-by-key run sends
	// between nodes compress with zstd: none (default), metadata (keys,
	// column names, framing) or all (partitioned.go).
	TransferCompression string `json:"transfer_compression,omitempty" yaml:"transfer_compression"`
	// PartitionKey names the columns whose values place a row of a
	// partition-by-key run in its partition; default the key columns
	// (partitioned.go). NULL is a value: every row whose partition key
	// is NULL goes to one partition.
	PartitionKey []string `json:"partition_key,omitempty" yaml:"partition_key"`
}

// Adapter is an adapter as reported.
type Adapter struct {
	AdapterSpec
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
}

// adapterDef is one adapter definition; immutable once it is in a
// Service's definitions (a replace swaps the pointer).
type adapterDef struct {
	defMeta
	spec  AdapterSpec
	sched cron.Schedule // nil without a schedule
}

// adapterKind names adapters in definitions.
var adapterKind = defKind{
	noun:        "adapter",
	record:      recordAdapter,
	notFound:    ErrAdapterNotFound,
	exists:      ErrAdapterExists,
	readOnly:    ErrAdapterReadOnly,
	notFoundFmt: "%w: %q",
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
func parseAdapter(prefix string, spec AdapterSpec) (*adapterDef, error) {
	var errs []error
	if err := checkName(prefix+"name", spec.Name); err != nil {
		errs = append(errs, err)
	}
	if spec.Connection == "" {
		errs = append(errs, &OptionError{Key: prefix + "connection", Msg: "required"})
	}
	if spec.Resource == "" {
		errs = append(errs, &OptionError{Key: prefix + "resource", Msg: "required: the source table or view"})
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
		spec.RetryBackoff = defaultRetryBackoff
	}
	if spec.Retention.TTL < 0 {
		errs = append(errs, &OptionError{Key: prefix + "retention.ttl", Msg: "want a non-negative duration"})
	}
	if spec.Retention.MinVersions < 0 {
		errs = append(errs, &OptionError{Key: prefix + "retention.min_versions", Msg: fmt.Sprintf("want 0 (default 1) or more, got %d", spec.Retention.MinVersions)})
	} else if spec.Retention.MinVersions == 0 {
		spec.Retention.MinVersions = defaultMinVersions
	}
	if spec.Guard.MaxShrink < 0 || spec.Guard.MaxShrink > 1 {
		errs = append(errs, &OptionError{Key: prefix + "guard.max_shrink", Msg: fmt.Sprintf("want a fraction from 0 (default %g) to 1, got %g", defaultMaxShrink, spec.Guard.MaxShrink)})
	} else if spec.Guard.MaxShrink == 0 {
		spec.Guard.MaxShrink = defaultMaxShrink
	}
	strategy, err := parseStrategy(prefix+"strategy", spec.Strategy)
	if err != nil {
		errs = append(errs, err)
	}
	spec.Strategy = strategy
	if spec.TransferCompression, err = parseTransferCompression(prefix+"transfer_compression", strategy, spec.TransferCompression); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkPartitionKey(prefix+"partition_key", strategy, spec.PartitionKey)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &adapterDef{spec: spec, sched: sch}, nil
}

// ListAdapters lists every adapter, sorted by name, then origin; an API
// definition hidden by a config one of the same name is listed with status
// "shadowed".
func (s *Service) ListAdapters() []Adapter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return report(&s.adapters, s.reportAdapterLocked)
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
func (s *Service) CreateAdapter(ctx context.Context, spec AdapterSpec) (Adapter, error) {
	a, _, err := s.putAdapter(ctx, spec, true)
	return a, err
}

// PutAdapter creates or replaces an API adapter (a replace is a new
// revision); the schedule follows at once (C4). created reports which.
// ErrAdapterReadOnly for a config adapter; otherwise CreateAdapter's errors.
func (s *Service) PutAdapter(ctx context.Context, spec AdapterSpec) (a Adapter, created bool, err error) {
	return s.putAdapter(ctx, spec, false)
}

// putAdapter implements CreateAdapter (mustCreate) and PutAdapter.
func (s *Service) putAdapter(ctx context.Context, spec AdapterSpec, mustCreate bool) (Adapter, bool, error) {
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
	// Source I/O without the lock; the checks are repeated after it.
	if err := s.checkResource(ctx, a.spec); err != nil {
		return Adapter{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.checkPutLocked(a, mustCreate)
	if err != nil {
		return Adapter{}, false, err
	}
	if err := s.adapters.store(ctx, s.db, spec.Name, a.spec, a, old, s.now().UTC()); err != nil {
		return Adapter{}, false, err
	}
	if s.sched != nil {
		s.sched.set(a.spec.Name, a.sched, a.spec.Retries, a.spec.RetryBackoff)
	}
	s.changedLocked(adapterKind, spec.Name)
	s.log.Info("adapter saved", "adapter", spec.Name, "dataset", a.spec.Dataset, "revision", a.revision, "schedule", a.spec.Schedule)
	return s.reportAdapterLocked(a, statusActive), old == nil, nil
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
	if _, ok := s.conns.active(a.spec.Connection); !ok {
		return nil, optionErrorIs(&OptionError{Key: "connection", Msg: fmt.Sprintf("data connection %q does not exist", a.spec.Connection)}, ErrConnectionNotFound)
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

// resourceCheckTimeout bounds the source check of an adapter create or
// replace; above the default connect_timeout (10s), so that a server that
// does not answer is reported by the connect bound, which names itself.
const resourceCheckTimeout = 15 * time.Second

// checkResource opens the adapter's resource through its connection, as a
// run would, and closes it again: a missing table (ErrResourceNotFound) or
// one without a usable key (ErrNoKey) refuses the adapter. When the source
// cannot be reached or refuses the credentials the adapter is accepted and
// the problem logged, since the source may come up later (A2).
func (s *Service) checkResource(ctx context.Context, spec AdapterSpec) error {
	ctx, cancel := context.WithTimeout(ctx, resourceCheckTimeout)
	defer cancel()
	l, err := s.acquire(ctx, spec.Connection)
	if err == nil {
		defer l.release()
		var tr TableReader
		tr, err = openResource(ctx, l, spec)
		if err == nil {
			schema := tr.Schema()
			if cerr := tr.Close(); cerr != nil {
				s.log.Debug("closing the resource check", "adapter", spec.Name, "err", l.scrub(cerr))
			}
			return partitionKeyInSource(spec, schema)
		}
	}
	switch {
	case errors.Is(err, ErrResourceNotFound), errors.Is(err, ErrNoKey), errors.Is(err, ErrConnectionNotFound):
		return fmt.Errorf("adapter %q: %w", spec.Name, err)
	}
	err = source.WithBound(err, resourceCheckTimeout, "the bound of the resource check")
	s.log.Warn("adapter saved without checking its resource", "adapter", spec.Name,
		"connection", spec.Connection, "resource", spec.Resource, "cause", checkCause(err), "err", err)
	return nil
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
	out := Adapter{AdapterSpec: a.spec, Source: a.origin, Revision: a.revision, CreatedAt: a.created, UpdatedAt: a.updated, Status: status}
	out.KeyColumns = append([]string(nil), a.spec.KeyColumns...)
	if status == statusActive && s.sched != nil {
		if t, ok := s.sched.nextRun(a.spec.Name); ok {
			out.NextRun = &t
		}
	}
	if status == statusActive && s.cluster != nil {
		out.Owner, _ = s.cluster.Owner(a.spec.Name)
		if a.spec.Strategy == StrategySingleNode {
			out.SingleNode, _, _ = s.cluster.SingleNode()
		}
	}
	return out
}

// loadAdapters reads the API adapters from the metadata table.
func (s *Service) loadAdapters(ctx context.Context) error {
	return loadDefinitions(ctx, s.db, s.log, &s.adapters, parseStoredAdapter)
}
