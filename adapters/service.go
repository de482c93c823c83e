package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// Options configure a Service.
type Options struct {
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Connections and Adapters are the config-file definitions (origin config).
	Connections []api.Connection
	Adapters    []api.Adapter
	// Schedule turns the cron scheduler on (serve); off for one-shot CLI use.
	Schedule bool
	// Cluster places runs by strategy when this node is a member of a
	// cluster (placement.go); nil: the node runs alone and every run is
	// local. RunOnStart adapters then wait for StartOnStart.
	Cluster Cluster
	// Partitioner begins the runs of partition-by-key adapters on this
	// node (partitioned.go); nil: such runs are refused
	// (ErrStrategyNotSupported).
	Partitioner Partitioner
	// SecretRefs bound what the secret references of connections defined
	// through the API may name (secretref.go, F2); the zero value allows
	// no env: and no file: reference through the API.
	SecretRefs SecretRefLimits
	// FileOptions bound what the file options (OptionDef.File) of
	// connections defined through the API may name (fileoptions.go).
	FileOptions FileOptionLimits
	// SecretKeys say where the keys that encrypt the literal secrets of
	// API connections come from (secretbox.go, K1-K5); the zero value has
	// none, and a literal secret given through the API is then refused.
	SecretKeys SecretKeys
	// Observer, when set, is told of every run that ends on this node
	// (RunObserver); nil: none is.
	Observer RunObserver
}

// RunObserver is told of the runs that end on this node: RunEnded gets
// each run's final record once it is saved (or queued to be, U1). It is
// called on the run's goroutine and must not block (serf's EventCh,
// memberlist's Delegate).
type RunObserver interface {
	RunEnded(rec RunRecord)
}

// Service owns data connections, adapters, runs and the scheduler. Safe for
// concurrent use.
type Service struct {
	db      *snapshot.DB
	log     *slog.Logger
	metrics *metrics
	now     func() time.Time // test hook; time.Now
	sched   *scheduler       // nil unless Options.Schedule
	cluster Cluster          // nil alone
	// partitioner begins partitioned runs; nil without a transfer
	partitioner Partitioner
	self        string // this node's id in the cluster; "" alone
	// secretRefs bound the references of API connections (F2)
	secretRefs SecretRefLimits
	// fileLimits bound the file options of API connections (O2, O3)
	fileLimits FileOptionLimits
	// secrets seals the literal secrets of API connections (K1)
	secrets  *secretBox
	observer RunObserver // nil: none

	baseCtx   context.Context // parent of every run's context
	cancelAll context.CancelFunc
	wg        sync.WaitGroup // one per running run
	runSeq    atomic.Uint64
	// auditReads is the set of datasets whose adapter in force has
	// AuditReads, rebuilt under mu at every change of the definitions
	// (indexAuditReadsLocked) and read without it (AuditsReads).
	auditReads atomic.Pointer[map[string]bool]

	// mu guards the fields below. It is held across metadata-table writes
	// (local and short) so that definitions change in a total order, but
	// never across source I/O. Lock order: mu, then a handle's mu.
	mu       sync.Mutex
	closing  bool
	defsGen  uint64 // counts local definition changes (reload.go, A5)
	conns    definitions[*connDef]
	adapters definitions[*adapterDef]
	running  map[string]*activeRun // by adapter name
	runs     map[string]*activeRun // by run id, running only

	// unsaved holds the final run records the store did not take yet
	// (unsavedruns.go, U1).
	unsaved *unsavedRuns
	// configCheck is the start's look at the config adapters' resources
	// (configcheck.go); nil without a scheduler.
	configCheck *configCheck

	// testHookRow, when set by a test, is called after each row a run
	// puts (serf-style unexported test hook).
	testHookRow func(ctx context.Context, adapter string, n int64)
	// testHookChecksumPoint, when set by a test, is called once a run
	// of one table has opened its readers at the point of the source its
	// chunk checksums spread over (checksumpoint.go).
	testHookChecksumPoint func(ctx context.Context, adapter string)
}

// defaultCloseBound is how long Close waits for aborted runs to end when
// its context has no deadline.
const defaultCloseBound = 30 * time.Second

// New opens the service over db: it checks the config definitions
// (ValidateConfig's checks; every problem is one *OptionError, joined),
// loads the API definitions from the metadata table, marks runs a previous
// process left running as aborted, and, with opts.Schedule, starts the
// scheduler and one run of each RunOnStart adapter.
func New(ctx context.Context, db *snapshot.DB, opts Options) (*Service, error) {
	if db == nil {
		return nil, fmt.Errorf("adapters: New: nil snapshot.DB")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{
		db:          db,
		log:         log,
		now:         time.Now,
		conns:       newDefinitions[*connDef](connectionKind),
		adapters:    newDefinitions[*adapterDef](adapterKind),
		running:     map[string]*activeRun{},
		runs:        map[string]*activeRun{},
		cluster:     opts.Cluster,
		partitioner: opts.Partitioner,
		unsaved:     newUnsavedRuns(),
		secretRefs:  opts.SecretRefs,
		fileLimits:  opts.FileOptions,
		observer:    opts.Observer,
	}
	if err := errors.Join(opts.SecretRefs.validate(), opts.FileOptions.validate()); err != nil {
		return nil, err
	}
	var err error
	if s.secrets, err = openSecretBox(opts.SecretKeys, log); err != nil {
		return nil, err
	}
	if s.cluster != nil {
		s.self = s.cluster.Self()
	}
	s.baseCtx, s.cancelAll = context.WithCancel(context.Background())
	s.metrics = newMetrics(opts.Registerer, func() float64 { return float64(s.RunsInProgress()) })
	// Config definitions: every problem reported, keys named.
	cfgConns, cfgAdapters, errs := parseConfig(opts.Connections, opts.Adapters)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	now := s.now().UTC()
	for _, d := range cfgConns {
		s.conns.addConfig(d.spec.Name, d, now)
	}
	for _, a := range cfgAdapters {
		s.adapters.addConfig(a.spec.Name, a, now)
	}
	if err := s.loadConnections(ctx); err != nil {
		return nil, err
	}
	if err := s.logClearSecrets(ctx); err != nil {
		return nil, err
	}
	if err := s.loadAdapters(ctx); err != nil {
		return nil, err
	}
	s.indexAuditReadsLocked()
	for _, e := range s.conns.entries() {
		if e.status == statusShadowed {
			s.log.Warn("API data connection shadowed by the config file's definition", "connection", e.name)
		}
	}
	for _, e := range s.adapters.entries() {
		switch {
		case e.status == statusShadowed:
			s.log.Warn("API adapter shadowed by the config file's definition", "adapter", e.name)
		case e.def.origin == OriginAPI:
			// Stored before one writer per dataset (A1) was enforced.
			if other := s.datasetWriterLocked(e.def.spec.Dataset, e.name); other != "" {
				s.log.Warn("two adapters write one dataset; delete or change one", "adapter", e.name, "other", other, "dataset", e.def.spec.Dataset)
			}
		}
	}
	// A read-only process of a shared store runs nothing, so it left
	// nothing running; the writer's runs are not its to abandon.
	if !db.ReadOnly() {
		if err := s.abandonRuns(ctx); err != nil {
			return nil, err
		}
	}
	go s.drainUnsaved() // U1; stopped by Close
	if opts.Schedule {
		s.sched = newScheduler(s, s.log.With("component", "scheduler"))
		var onStart []string
		for _, e := range s.adapters.entries() {
			if e.status != statusActive {
				continue
			}
			if a := e.def; a.sched != nil {
				s.sched.set(e.name, a.sched, a.spec.Retries, time.Duration(a.spec.RetryBackoff))
			}
			if e.def.spec.RunOnStart {
				onStart = append(onStart, e.name)
			}
		}
		s.sched.start()
		if !db.ReadOnly() {
			s.startConfigCheck()
		}
		if s.cluster == nil {
			s.runOnStart(ctx, onStart)
		}
	}
	return s, nil
}

// runOnStart starts one run of each adapter of names now (in name order),
// as Airflow's catchup starts a DAG's missed run at once instead of at the
// next tick.
func (s *Service) runOnStart(ctx context.Context, names []string) {
	for _, n := range names {
		if _, err := s.StartRun(ctx, n, RunOptions{Trigger: "start"}); err != nil {
			s.log.Warn("run on start not started", "adapter", n, "err", err)
		}
	}
}

// StartOnStart starts the runs of the RunOnStart adapters this node owns
// (L1), once it is an active member of its cluster: a node that starts
// does not know its share before it has joined. It does nothing without
// a scheduler or a cluster (New started them).
func (s *Service) StartOnStart(ctx context.Context) {
	if s.sched == nil || s.cluster == nil {
		return
	}
	var names []string
	s.mu.Lock()
	for _, e := range s.adapters.entries() {
		if e.status != statusActive || !e.def.spec.RunOnStart {
			continue
		}
		if owner, ok := s.cluster.Owner(e.name); ok && owner == s.self {
			names = append(names, e.name)
		}
	}
	s.mu.Unlock()
	s.runOnStart(ctx, names)
}

// Close stops the scheduler, cancels running runs (their transactions are
// aborted, never committed) and waits for them up to ctx's deadline
// (defaultCloseBound when it has none), makes a last try of the final run
// records the store did not take (U1), then closes every connection pool.
// Runs started after Close began fail with ErrShuttingDown; a second Close
// returns nil.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	var active []*activeRun
	for _, ar := range s.running {
		active = append(active, ar)
	}
	s.mu.Unlock()
	if s.sched != nil {
		s.sched.stop()
	}
	s.stopConfigCheck()
	for _, ar := range active {
		ar.cancel(ErrShuttingDown)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultCloseBound)
		defer cancel()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		n := len(s.running)
		s.mu.Unlock()
		err = fmt.Errorf("adapters: closing: %d runs still ending: %w", n, ctx.Err())
	}
	// The last try of the final records the store did not take (U1),
	// bounded even when ctx is done.
	lastCtx, cancelLast := context.WithTimeout(context.WithoutCancel(ctx), unsavedSaveTimeout)
	s.stopDrain(lastCtx)
	cancelLast()
	s.cancelAll()
	s.mu.Lock()
	for _, e := range s.conns.entries() {
		s.retireLocked(e.def)
	}
	s.mu.Unlock()
	s.log.Info("adapters service closed")
	return err
}
