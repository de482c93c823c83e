package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// defaultCloseBound is how long Close waits for aborted runs to end when
// its context has no deadline.
const defaultCloseBound = 30 * time.Second

func newService(ctx context.Context, db *snapshot.DB, opts Options) (*Service, error) {
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
		cfgConns:    map[string]*connDef{},
		apiConns:    map[string]*connDef{},
		cfgAdapters: map[string]*adapterDef{},
		apiAdapters: map[string]*adapterDef{},
		running:     map[string]*activeRun{},
		runs:        map[string]*activeRun{},
	}
	s.baseCtx, s.cancelAll = context.WithCancel(context.Background())
	s.metrics = newMetrics(opts.Registerer, func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(len(s.running))
	})
	// Config definitions: every problem reported, keys named.
	cfgConns, cfgAdapters, errs := parseConfig(opts.Connections, opts.Adapters)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	now := s.now().UTC()
	for _, d := range cfgConns {
		d.origin, d.revision, d.created, d.updated = OriginConfig, 1, now, now
		s.cfgConns[d.spec.Name] = d
	}
	for _, a := range cfgAdapters {
		a.origin, a.revision, a.created, a.updated = OriginConfig, 1, now, now
		s.cfgAdapters[a.spec.Name] = a
	}
	if err := s.loadConnections(ctx); err != nil {
		return nil, err
	}
	if err := s.loadAdapters(ctx); err != nil {
		return nil, err
	}
	for n := range s.apiConns {
		if _, ok := s.cfgConns[n]; ok {
			s.log.Warn("API data connection shadowed by the config file's definition", "connection", n)
		}
	}
	for n, a := range s.apiAdapters {
		if _, ok := s.cfgAdapters[n]; ok {
			s.log.Warn("API adapter shadowed by the config file's definition", "adapter", n)
			continue
		}
		// Stored before one writer per dataset was enforced.
		if other := s.datasetWriterLocked(a.spec.Dataset, n); other != "" {
			s.log.Warn("two adapters write one dataset; delete or change one", "adapter", n, "other", other, "dataset", a.spec.Dataset)
		}
	}
	if err := s.abandonRuns(ctx); err != nil {
		return nil, err
	}
	if opts.Schedule {
		s.sched = newScheduler(s, s.log.With("component", "scheduler"))
		for _, m := range []map[string]*adapterDef{s.apiAdapters, s.cfgAdapters} {
			for n := range m {
				if a := s.activeAdapterLocked(n); a != nil && a.sched != nil {
					s.sched.set(n, a.sched, a.spec.Retries, a.spec.RetryBackoff)
				}
			}
		}
		s.sched.start()
		// run_on_start: one run each now, as Airflow's catchup starts a
		// DAG's missed run at once instead of at the next tick.
		var names []string
		for _, m := range []map[string]*adapterDef{s.cfgAdapters, s.apiAdapters} {
			for n := range m {
				if a := s.activeAdapterLocked(n); a != nil && a.spec.RunOnStart && a == m[n] {
					names = append(names, n)
				}
			}
		}
		sort.Strings(names)
		for _, n := range names {
			if _, err := s.startRun(ctx, n, "start"); err != nil {
				s.log.Warn("run on start not started", "adapter", n, "err", err)
			}
		}
	}
	return s, nil
}

// parseConfig implements ValidateConfig and returns the parsed config
// definitions when there is no problem. Each problem is one error.
func parseConfig(conns []ConnectionSpec, ads []AdapterSpec) ([]*connDef, []*adapterDef, []error) {
	var errs []error
	var outConns []*connDef
	named := map[string]bool{} // every connection name the file gives, valid or not
	valid := map[string]bool{}
	for i, spec := range conns {
		prefix := fmt.Sprintf("connections[%d].", i)
		dup := spec.Name != "" && named[spec.Name]
		if dup {
			errs = append(errs, &OptionError{Key: prefix + "name", Msg: fmt.Sprintf("connection %q defined twice", spec.Name)})
		}
		named[spec.Name] = true
		d, err := parseConnection(prefix, spec)
		if err != nil {
			errs = append(errs, splitErrors(err)...)
			continue
		}
		if dup {
			continue
		}
		valid[d.spec.Name] = true
		outConns = append(outConns, d)
	}
	var outAdapters []*adapterDef
	seen := map[string]bool{}
	writer := map[string]string{} // dataset -> the adapter that writes it
	for i, spec := range ads {
		prefix := fmt.Sprintf("adapters[%d].", i)
		dup := spec.Name != "" && seen[spec.Name]
		if dup {
			errs = append(errs, &OptionError{Key: prefix + "name", Msg: fmt.Sprintf("adapter %q defined twice", spec.Name)})
		}
		seen[spec.Name] = true
		a, err := parseAdapter(prefix, spec)
		if err != nil {
			errs = append(errs, splitErrors(err)...)
			a = nil
		}
		if dup {
			continue
		}
		if spec.Connection != "" && !named[spec.Connection] {
			errs = append(errs, optionErrorIs(&OptionError{Key: prefix + "connection",
				Msg: fmt.Sprintf("data connection %q is not defined in the file's connections (an adapter of the config file names a connection of the config file)", spec.Connection)}, ErrConnectionNotFound))
			continue
		}
		dataset := spec.Dataset
		if dataset == "" {
			dataset = spec.Name
		}
		if other, ok := writer[dataset]; ok && dataset != "" {
			key := prefix + "dataset"
			errs = append(errs, optionErrorIs(&OptionError{Key: key, Msg: fmt.Sprintf("dataset %q is already written by adapter %q; one adapter per dataset", dataset, other)}, ErrDatasetTaken))
			continue
		}
		writer[dataset] = spec.Name
		if a != nil && valid[spec.Connection] {
			outAdapters = append(outAdapters, a)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return outConns, outAdapters, nil
}

// close implements Close: no new runs, scheduler stopped, running runs
// cancelled (their transactions aborted, never committed), a bounded wait,
// then every connection handle closed.
func (s *Service) close(ctx context.Context) error {
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
	s.cancelAll()
	s.mu.Lock()
	for _, m := range []map[string]*connDef{s.cfgConns, s.apiConns} {
		for _, d := range m {
			s.retireLocked(d)
		}
	}
	s.mu.Unlock()
	s.log.Info("adapters service closed")
	return err
}
