package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// runStarter is what the scheduler needs from the Service (an interface
// so scheduler tests can drive it with a fake under testing/synctest).
type runStarter interface {
	// StartRun starts a run now; ErrRunInProgress when one is running.
	StartRun(ctx context.Context, adapter string, opts RunOptions) (RunRecord, error)
	// WaitRun waits for a run's end.
	WaitRun(ctx context.Context, id string) (RunRecord, error)
	// recordSkipped records a skipped run with its reason.
	recordSkipped(ctx context.Context, adapter, trigger, reason string)
}

// scheduler starts adapter runs on their cron schedules (robfig/cron/v3
// specs: 5 fields, optional seconds, CRON_TZ=, @every, descriptors). It
// uses cron's parser and Schedule.Next but its own loop, so that entries
// carry retry state and tests can run it under testing/synctest.
//
// Behaviour, numbered for the tests:
//
//	C1 A tick starts a run with trigger "schedule"; the next tick is
//	   Schedule.Next of the tick time, so a slow loop never fires a burst
//	   of missed ticks.
//	C2 A tick that finds the adapter's previous run still going records a
//	   "skipped" run whose error names the running run; so does a tick
//	   whose run finds its dataset's writer slot held by another process.
//	C3 A failed scheduled run with Retries > 0 is retried (trigger
//	   "retry") after RetryBackoff, doubling per attempt, at most Retries
//	   times; a success resets the attempt count.
//	C4 set replaces or removes an entry at once (adapter create, replace,
//	   delete); no restart.
//	C5 stop ends the loop and every retry watcher, then returns; it starts
//	   nothing new.
//	C6 Every node of a cluster runs the loop over every adapter; a tick
//	   is passed with its scheduled time, and the node that does not
//	   fire it (adapters.L1) drops it: no run, no skipped record. A retry
//	   is fired by the node whose run failed.
//
// Goroutines: the loop (owns timer) and one watcher per started run that
// may need a retry. mu guards entries; it is never held while starting a
// run.
type scheduler struct {
	runs runStarter
	log  *slog.Logger

	mu      sync.Mutex
	entries map[string]*schedEntry

	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	donec  chan struct{}
	wg     sync.WaitGroup
}

type schedEntry struct {
	name    string
	sched   cron.Schedule
	next    time.Time
	retries int
	backoff time.Duration
	attempt int       // failed attempts since the last success
	retryAt time.Time // zero when no retry is pending
}

func newScheduler(runs runStarter, log *slog.Logger) *scheduler {
	ctx, cancel := context.WithCancel(context.Background())
	return &scheduler{
		runs:    runs,
		log:     log,
		entries: map[string]*schedEntry{},
		wake:    make(chan struct{}, 1),
		ctx:     ctx,
		cancel:  cancel,
		donec:   make(chan struct{}),
	}
}

// start launches the loop.
func (s *scheduler) start() { go s.loop() }

// set adds, replaces (sched != nil) or removes (sched == nil) the entry
// of adapter name (C4).
func (s *scheduler) set(name string, sched cron.Schedule, retries int, backoff time.Duration) {
	s.mu.Lock()
	if sched == nil {
		delete(s.entries, name)
	} else {
		s.entries[name] = &schedEntry{name: name, sched: sched, next: sched.Next(time.Now()), retries: retries, backoff: backoff}
	}
	s.mu.Unlock()
	s.poke()
}

func (s *scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// nextRun returns the next scheduled start of name.
func (s *scheduler) nextRun(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[name]
	if !ok {
		return time.Time{}, false
	}
	return e.next, true
}

// stop ends the loop and the watchers (C5).
func (s *scheduler) stop() {
	s.cancel()
	<-s.donec
	s.wg.Wait()
}

func (s *scheduler) loop() {
	defer close(s.donec)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		var due []*schedEntry
		var dueTrigger []string
		var dueTick []time.Time
		wait := time.Duration(-1)
		s.mu.Lock()
		for _, e := range s.entries {
			if !e.retryAt.IsZero() && !e.retryAt.After(now) {
				e.retryAt = time.Time{}
				due, dueTrigger, dueTick = append(due, e), append(dueTrigger, "retry"), append(dueTick, time.Time{})
			}
			// A zero next means the schedule matches no date any more
			// (cron's Next gives up after five years): never due.
			if !e.next.IsZero() && !e.next.After(now) {
				tick := e.next
				e.next = e.sched.Next(now) // C1: no burst of missed ticks
				due, dueTrigger, dueTick = append(due, e), append(dueTrigger, "schedule"), append(dueTick, tick)
			}
			for _, t := range []time.Time{e.next, e.retryAt} {
				if t.IsZero() {
					continue
				}
				if d := t.Sub(now); wait < 0 || d < wait {
					wait = d
				}
			}
		}
		s.mu.Unlock()
		for i, e := range due {
			s.fire(e, dueTrigger[i], dueTick[i])
		}
		if len(due) > 0 {
			continue
		}
		if wait < 0 {
			wait = time.Hour
		}
		timer.Reset(wait)
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// fire starts one run of e (C1, C2) and, when retries are configured,
// watches it for a failure (C3). tick is the scheduled time of a
// "schedule" trigger: in a cluster another node may own it (C6).
func (s *scheduler) fire(e *schedEntry, trigger string, tick time.Time) {
	if s.ctx.Err() != nil {
		return
	}
	rec, err := s.runs.StartRun(s.ctx, e.name, RunOptions{Trigger: trigger, Tick: tick})
	switch {
	case errors.Is(err, errNotOwner):
		s.log.Debug("tick fired elsewhere", "adapter", e.name, "tick", tick, "err", err)
		return
	case errors.Is(err, ErrRunInProgress):
		reason := fmt.Sprintf("previous run %s (started %s) was still running", rec.ID, rec.Start.Format(time.RFC3339))
		if rec.ID == "" { // the dataset's writer slot is held elsewhere
			reason = err.Error()
		}
		s.runs.recordSkipped(s.ctx, e.name, trigger, reason)
		return
	case err != nil:
		s.log.Warn("scheduled run not started", "adapter", e.name, "trigger", trigger, "err", err)
		return
	}
	if e.retries == 0 {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		end, err := s.runs.WaitRun(s.ctx, rec.ID)
		if err != nil {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.entries[e.name] != e {
			return // replaced or removed meanwhile
		}
		if end.Status == RunSucceeded {
			e.attempt = 0
			return
		}
		if end.Status != RunFailed || e.attempt >= e.retries {
			if end.Status == RunFailed {
				s.log.Warn("run failed, no retries left", "adapter", e.name, "run", rec.ID, "attempts", e.attempt+1)
				e.attempt = 0
			}
			return
		}
		delay := e.backoff << e.attempt
		e.attempt++
		e.retryAt = time.Now().Add(delay)
		s.log.Info("run failed, retry scheduled", "adapter", e.name, "run", rec.ID, "attempt", e.attempt, "delay", delay)
		s.poke()
	}()
}

// cronParser accepts 5 fields with optional leading seconds, CRON_TZ= /
// TZ= prefixes, @every and the descriptors (@hourly, @daily, ...).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseSchedule parses a cron spec; errors wrap ErrBadSchedule.
func parseSchedule(spec string) (cron.Schedule, error) {
	// cron silently turns "@every -1s" and "@every 10ms" into every
	// second; refuse them instead.
	if rest, ok := strings.CutPrefix(strings.TrimSpace(spec), "@every "); ok {
		if d, err := time.ParseDuration(strings.TrimSpace(rest)); err == nil && d < time.Second {
			return nil, fmt.Errorf("%w: schedule %q: @every needs a duration of at least 1s", ErrBadSchedule, spec)
		}
	}
	sch, err := cronParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: schedule %q: %v", ErrBadSchedule, spec, err)
	}
	// robfig/cron's Next gives the zero time for a spec that matches no
	// date within five years ("0 0 30 2 *", February 30th); such a spec
	// would otherwise look due at every instant.
	if sch.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("%w: schedule %q never fires (it matches no date)", ErrBadSchedule, spec)
	}
	return sch, nil
}

// SchedulePeriod returns the time between the first two starts of the
// cron spec after t: how often an adapter of that schedule runs around t
// (what freshness is judged against). Errors wrap ErrBadSchedule.
func SchedulePeriod(spec string, t time.Time) (time.Duration, error) {
	sch, err := parseSchedule(spec)
	if err != nil {
		return 0, err
	}
	first := sch.Next(t)
	return sch.Next(first).Sub(first), nil
}
