package adapters

// This file fixes the public surface of package adapters that packages
// server and cmd/snapstore build on; the bodies live in the other files.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/snapshot"
)

// Secret is a secret option value (a password, a DSN with a password). It
// renders as REDACTED through String, fmt verbs, slog and JSON, so it cannot
// leak by accident. Reveal returns the real text.
type Secret struct{ v string }

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{v: s} }

// Reveal returns the secret text. Call it only to hand the value to a driver.
func (s Secret) Reveal() string { return s.v }

// String returns "REDACTED" (or "" for an empty secret).
func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return "REDACTED"
}

// GoString returns the same as String.
func (s Secret) GoString() string { return s.String() }

// Format renders as String for every fmt verb (%d, %x and %q too), so no
// verb can print the text.
func (s Secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(s.String())) }

// LogValue renders as REDACTED in slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON renders as "REDACTED".
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.String() + `"`), nil }

// Sharing is a data connection's sharing mode (after Hazelcast's data
// connections' "shared" flag, extended with a tunable pool).
type Sharing string

const (
	// SharingShared keeps one pool per connection for every run (default).
	SharingShared Sharing = "shared"
	// SharingPooled is shared with pool limits from options max_open,
	// max_idle, conn_max_lifetime, conn_max_idle_time.
	SharingPooled Sharing = "pooled"
	// SharingSingleUse opens a connection for a run and closes it after.
	SharingSingleUse Sharing = "single-use"
)

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

// ConnectionSpec is the input that defines a data connection. Options are
// typed per Type (see the connector's docs); secret options may be literal
// or references "env:NAME" / "file:/path", resolved when the connection is
// opened.
type ConnectionSpec struct {
	Name    string         `json:"name" yaml:"name"`
	Type    string         `json:"type" yaml:"type"`
	Sharing Sharing        `json:"sharing,omitempty" yaml:"sharing"`
	Options map[string]any `json:"options,omitempty" yaml:"options"`
}

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

// TestResult is the outcome of testing a connection.
type TestResult struct {
	OK            bool   `json:"ok"`
	ServerVersion string `json:"server_version,omitempty"`
	// Cause classifies a failure: "unreachable", "auth", "unknown_database",
	// "timeout", "config", "error".
	Cause   string        `json:"cause,omitempty"`
	Message string        `json:"message,omitempty"`
	Latency time.Duration `json:"latency_ns"`
}

// Resource is a table or view reachable through a connection.
type Resource struct {
	Schema        string `json:"schema,omitempty"`
	Name          string `json:"name"`
	Type          string `json:"type"` // "table" or "view"
	EstimatedRows int64  `json:"estimated_rows"`
}

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
}

// RunStatus is a run's state.
type RunStatus string

const (
	RunRunning   RunStatus = "running"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunAborted   RunStatus = "aborted"
	RunSkipped   RunStatus = "skipped"
)

// RunRecord records one run of an adapter.
type RunRecord struct {
	ID      string     `json:"id"`
	Adapter string     `json:"adapter"`
	Dataset string     `json:"dataset"`
	TxnID   int64      `json:"txn_id,omitempty"`
	Trigger string     `json:"trigger"` // "schedule", "start", "api", "cli", "retry"
	Status  RunStatus  `json:"status"`
	Start   time.Time  `json:"started_at"`
	End     *time.Time `json:"ended_at,omitempty"`
	// RowsRead and RowsEstimated give live progress.
	RowsRead      int64             `json:"rows_read"`
	RowsEstimated int64             `json:"rows_estimated"`
	Stats         snapshot.RunStats `json:"stats"`
	// Version is the committed version, for succeeded runs.
	Version int64  `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
	// Code classifies a run that did not succeed, stable for scripts:
	// guard_refused, resource_not_found, no_key, unsupported_type,
	// source_unavailable, source_auth, connection_not_found, key_changed,
	// bad_key, aborted, skipped, error (anything else).
	Code string `json:"code,omitempty"`
	// Forced is true for a run started with RunOptions.Force.
	Forced bool `json:"forced,omitempty"`
}

// Options configure a Service.
type Options struct {
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Connections and Adapters are the config-file definitions (origin config).
	Connections []ConnectionSpec
	Adapters    []AdapterSpec
	// Schedule turns the cron scheduler on (serve); off for one-shot CLI use.
	Schedule bool
}

// Service owns data connections, adapters, runs and the scheduler. Safe for
// concurrent use.
type Service struct {
	db      *snapshot.DB
	log     *slog.Logger
	metrics *metrics
	now     func() time.Time // test hook; time.Now
	sched   *scheduler       // nil unless Options.Schedule

	baseCtx   context.Context // parent of every run's context
	cancelAll context.CancelFunc
	wg        sync.WaitGroup // one per running run
	runSeq    atomic.Uint64

	// mu guards the fields below. It is held across metadata-table writes
	// (local and short) so that definitions change in a total order, but
	// never across source I/O. Lock order: mu, then a handle's mu.
	mu          sync.Mutex
	closing     bool
	cfgConns    map[string]*connDef
	apiConns    map[string]*connDef
	cfgAdapters map[string]*adapterDef
	apiAdapters map[string]*adapterDef
	running     map[string]*activeRun // by adapter name
	runs        map[string]*activeRun // by run id, running only

	// testHookRow, when set by a test, is called after each row a run
	// puts (serf-style unexported test hook).
	testHookRow func(ctx context.Context, adapter string, n int64)
}

// New opens the service over db: loads API-defined connections and
// adapters from the metadata table, applies config definitions, marks runs
// left "running" by a previous process as aborted, and (if opts.Schedule)
// starts the scheduler. A bad config definition gives an *OptionError
// naming the key.
func New(ctx context.Context, db *snapshot.DB, opts Options) (*Service, error) {
	return newService(ctx, db, opts)
}

// Close stops the scheduler, aborts running runs (not committed) and waits
// for them up to ctx's deadline, then closes every connection pool.
func (s *Service) Close(ctx context.Context) error {
	return s.close(ctx)
}

// ListConnections lists every connection, shadowed ones included.
func (s *Service) ListConnections(ctx context.Context) ([]Connection, error) {
	return s.listConnections(), nil
}

// GetConnection returns the active connection named name.
func (s *Service) GetConnection(ctx context.Context, name string) (Connection, error) {
	return s.getConnection(name)
}

// CreateConnection creates an API connection; ErrConnectionExists.
func (s *Service) CreateConnection(ctx context.Context, spec ConnectionSpec) (Connection, error) {
	c, _, err := s.putConnection(ctx, spec, true)
	return c, err
}

// PutConnection creates or replaces an API connection (new revision);
// created reports which. ErrConnectionReadOnly for a config one.
func (s *Service) PutConnection(ctx context.Context, spec ConnectionSpec) (c Connection, created bool, err error) {
	return s.putConnection(ctx, spec, false)
}

// DropConnection drops an API connection. ErrConnectionInUse (listing the
// adapters) unless force; ErrConnectionReadOnly for a config one.
func (s *Service) DropConnection(ctx context.Context, name string, force bool) error {
	return s.dropConnection(ctx, name, force)
}

// TestConnection connects, asks the server version and runs SELECT 1 under
// a timeout. A failed test is a TestResult with OK false, not an error; the
// error is for an unknown connection.
func (s *Service) TestConnection(ctx context.Context, name string) (TestResult, error) {
	return s.testConnection(ctx, name)
}

// Resources lists the tables and views reachable through a connection.
func (s *Service) Resources(ctx context.Context, name string) ([]Resource, error) {
	return s.resources(ctx, name)
}

// ListAdapters lists every adapter.
func (s *Service) ListAdapters(ctx context.Context) ([]Adapter, error) {
	return s.listAdapters(), nil
}

// GetAdapter returns one adapter. ErrAdapterNotFound.
func (s *Service) GetAdapter(ctx context.Context, name string) (Adapter, error) {
	return s.getAdapter(name)
}

// CreateAdapter creates an API adapter. ErrAdapterExists, ErrBadSchedule,
// ErrConnectionNotFound, *OptionError.
func (s *Service) CreateAdapter(ctx context.Context, spec AdapterSpec) (Adapter, error) {
	a, _, err := s.putAdapter(ctx, spec, true)
	return a, err
}

// PutAdapter creates or replaces an API adapter; the schedule follows.
func (s *Service) PutAdapter(ctx context.Context, spec AdapterSpec) (a Adapter, created bool, err error) {
	return s.putAdapter(ctx, spec, false)
}

// DeleteAdapter deletes an API adapter and its schedule (its dataset stays).
func (s *Service) DeleteAdapter(ctx context.Context, name string) error {
	return s.deleteAdapter(ctx, name)
}

// StartRun starts a run of adapter now and returns its record at once
// (status running). ErrRunInProgress when one is running.
func (s *Service) StartRun(ctx context.Context, adapter, trigger string) (RunRecord, error) {
	return s.startRunWith(ctx, adapter, RunOptions{Trigger: trigger})
}

// RunOptions are the options of StartRunWith.
type RunOptions struct {
	// Trigger is recorded in the run: "api" (default), "cli", "schedule",
	// "retry".
	Trigger string
	// Force commits even when a guard (allow_empty, max_shrink) would
	// refuse the run (snapshot.RunOptions.Force).
	Force bool
}

// StartRunWith is StartRun with options, such as Force for a run a guard
// refused.
func (s *Service) StartRunWith(ctx context.Context, adapter string, opts RunOptions) (RunRecord, error) {
	return s.startRunWith(ctx, adapter, opts)
}

// ValidateConfig checks config-file definitions without opening anything:
// every connection (type, sharing, each option), every adapter (name,
// resource, schedule, retention, guard, retries), that each adapter names a
// connection of the same file, and that no two adapters write one dataset.
// It returns one error per problem, each an *OptionError (errors.As) whose
// Key is the place in the file ("connections[0].options.pth",
// "adapters[1].schedule"), some also marked with a sentinel (ErrBadSchedule,
// ErrUnknownType, ErrConnectionNotFound, ErrDatasetTaken). An adapter that
// names a connection the file defines but rejected gets no follow-on
// error. New runs the same checks.
func ValidateConfig(conns []ConnectionSpec, adapters []AdapterSpec) []error {
	_, _, errs := parseConfig(conns, adapters)
	return errs
}

// WaitRun waits until run id ends (or ctx is done) and returns its record.
func (s *Service) WaitRun(ctx context.Context, id string) (RunRecord, error) {
	return s.waitRun(ctx, id)
}

// GetRun returns a run record, live while running. ErrRunNotFound.
func (s *Service) GetRun(ctx context.Context, id string) (RunRecord, error) {
	return s.getRun(ctx, id)
}

// ListRuns lists an adapter's runs, newest first, at most limit (0: 100).
func (s *Service) ListRuns(ctx context.Context, adapter string, limit int) ([]RunRecord, error) {
	return s.listRuns(ctx, adapter, limit)
}
