package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	var errs []error
	now := s.now().UTC()
	for i, spec := range opts.Connections {
		prefix := fmt.Sprintf("connections[%d].", i)
		d, err := parseConnection(prefix, spec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := s.cfgConns[d.spec.Name]; dup {
			errs = append(errs, &OptionError{Key: prefix + "name", Msg: fmt.Sprintf("connection %q defined twice", d.spec.Name)})
			continue
		}
		d.origin, d.revision, d.created, d.updated = OriginConfig, 1, now, now
		s.cfgConns[d.spec.Name] = d
	}
	if err := s.loadConnections(ctx); err != nil {
		return nil, err
	}
	for i, spec := range opts.Adapters {
		prefix := fmt.Sprintf("adapters[%d].", i)
		a, err := parseAdapter(prefix, spec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := s.cfgAdapters[a.spec.Name]; dup {
			errs = append(errs, &OptionError{Key: prefix + "name", Msg: fmt.Sprintf("adapter %q defined twice", a.spec.Name)})
			continue
		}
		if s.activeConnLocked(a.spec.Connection) == nil {
			errs = append(errs, optionErrorIs(&OptionError{Key: prefix + "connection", Msg: fmt.Sprintf("data connection %q does not exist", a.spec.Connection)}, ErrConnectionNotFound))
			continue
		}
		a.origin, a.revision, a.created, a.updated = OriginConfig, 1, now, now
		s.cfgAdapters[a.spec.Name] = a
	}
	if err := errors.Join(errs...); err != nil {
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
	for n := range s.apiAdapters {
		if _, ok := s.cfgAdapters[n]; ok {
			s.log.Warn("API adapter shadowed by the config file's definition", "adapter", n)
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
	}
	return s, nil
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
