package adapters

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/errtext"
	"github.com/snapstore/snapstore/snapshot"
)

// errNotOwner: a scheduled tick that this node does not fire, because
// another node owns the adapter or already fired the tick (L1). The
// scheduler drops it without a word.
var errNotOwner = errors.New("adapters: the tick belongs to another node")

// waitRetry is how often a waiting single-node run is offered to its
// node again (L3); waitPoll how often WaitRun reads the record of a run
// that runs on another node. Variables so tests can shorten them.
var (
	waitRetry = time.Second
	waitPoll  = 500 * time.Millisecond
)

// StartRun starts a run of adapter name where its strategy places it and
// returns its record at once: running here or on the node it was handed to
// (L1-L3), or waiting for its node (L3). Alone, every run but one of a
// partition-by-key adapter runs here. A run outlives ctx, which bounds
// only its placing; Close cancels the runs of this node. With opts.Tick
// set (a scheduled tick) a node that does not own the tick returns
// errNotOwner. ErrRunInProgress (the record returned is the running
// one's), ErrAdapterNotFound, ErrShuttingDown, ErrNodeDraining,
// ErrStrategyNotSupported, ErrNodeUnreachable, snapshot.ErrReadOnly.
func (s *Service) StartRun(ctx context.Context, name string, opts RunOptions) (RunRecord, error) {
	s.mu.Lock()
	a, err := s.adapters.get(name)
	s.mu.Unlock()
	// A read-only process runs nothing itself: alone it says so whether it
	// knows the adapter or not (a writer's config file may define it); in
	// a cluster it places the runs of adapters it knows on writers.
	if s.db.ReadOnly() && (s.cluster == nil || errors.Is(err, ErrAdapterNotFound)) {
		return RunRecord{}, errReadOnlyRun(name)
	}
	if err != nil {
		return RunRecord{}, err
	}
	if s.cluster != nil && !opts.Tick.IsZero() {
		if owner, ok := s.cluster.Owner(name); !ok || owner != s.self {
			return RunRecord{}, fmt.Errorf("%w: %s owns adapter %q", errNotOwner, owner, name)
		}
		c, ok, err := s.claimTick(ctx, a, opts.Tick)
		if err != nil {
			return RunRecord{}, fmt.Errorf("claiming tick %s of adapter %q: %w", opts.Tick.Format(time.RFC3339), name, err)
		} else if !ok {
			return RunRecord{}, fmt.Errorf("%w: tick %s of adapter %q already fired", errNotOwner, opts.Tick.Format(time.RFC3339), name)
		}
		if r, going := s.previousRunGoing(ctx, c); going {
			return r, fmt.Errorf("%w: run %s of adapter %q on node %s, started at %s", ErrRunInProgress, r.ID, name, r.Node, r.Start.Format(time.RFC3339))
		}
		rec, err := s.place(ctx, a, opts)
		if err == nil && rec.ID != "" {
			s.noteFired(ctx, a, c, rec.ID)
		}
		return rec, err
	}
	return s.place(ctx, a, opts)
}

// place starts a run of a where its strategy places it.
func (s *Service) place(ctx context.Context, a *adapterDef, opts RunOptions) (RunRecord, error) {
	name := a.spec.Name
	switch Strategy(a.spec.Strategy) {
	case StrategyPartitionByKey:
		if s.partitioner == nil {
			return s.refuseStrategy(ctx, a.spec, opts)
		}
	case StrategyRoundRobin:
		if s.cluster != nil {
			return s.placeRoundRobin(ctx, a, opts)
		}
	case StrategySingleNode:
		if s.cluster != nil {
			return s.placeSingleNode(ctx, a, opts)
		}
	}
	return s.startLocal(ctx, name, opts, localRun{})
}

// refuseStrategy refuses a run of a partition-by-key adapter on a node
// without partitioned runs (L4); a
// scheduled one is recorded as failed, so that the run history says why
// nothing happened.
func (s *Service) refuseStrategy(ctx context.Context, spec api.Adapter, opts RunOptions) (RunRecord, error) {
	err := s.notPartitioned(spec)
	if opts.Trigger != "schedule" && opts.Trigger != "retry" && opts.Trigger != "start" {
		return RunRecord{}, err
	}
	now := s.now().UTC()
	rec := RunRecord{ID: s.newRunID(now), Adapter: spec.Name, Dataset: spec.Dataset, Trigger: opts.Trigger, Status: RunFailed,
		Start: now, End: &now, Error: errtext.Line(err.Error()), Code: runCode(err), Node: s.self}
	if serr := s.saveRun(ctx, rec); serr != nil {
		s.log.Warn("saving refused run", "run", rec.ID, "adapter", spec.Name, "err", serr)
	}
	s.metrics.observeRun(rec)
	s.log.Warn("run refused", "run", rec.ID, "adapter", spec.Name, "strategy", spec.Strategy, "err", err)
	return rec, err
}

// placeOn starts run id of a on node: here, or handed to it (L5).
func (s *Service) placeOn(ctx context.Context, node string, a *adapterDef, opts RunOptions, id string) (RunRecord, error) {
	if node == s.self {
		rec, err := s.startLocal(ctx, a.spec.Name, opts, localRun{id: id})
		if err == nil {
			s.metrics.observePlaced(node, Strategy(a.spec.Strategy))
		}
		return rec, err
	}
	rev := int64(0)
	if a.origin == OriginAPI {
		rev = a.revision
	}
	rec, err := s.cluster.HandOff(ctx, node, HandOff{Adapter: a.spec.Name, Revision: rev, RunID: id, Trigger: opts.Trigger, Force: opts.Force, PlacedBy: s.self})
	if err == nil {
		s.metrics.observePlaced(node, Strategy(a.spec.Strategy))
		s.log.Info("run handed to another node", "run", rec.ID, "adapter", a.spec.Name, "node", node, "strategy", a.spec.Strategy, "trigger", opts.Trigger)
	}
	return rec, err
}

// errReadOnlyRun is the refusal of a run on a read-only process.
func errReadOnlyRun(name string) error {
	return fmt.Errorf("%w: this process reads a store another process writes; run adapter %q there", snapshot.ErrReadOnly, name)
}

// movesOn reports whether a placing error lets the run go to another node
// (or wait for this one): the node could not take it (unreachable,
// draining, stopping, a process that may not write), not that the run
// itself was refused.
func movesOn(err error) bool {
	for _, e := range []error{ErrNodeUnreachable, ErrNodeDraining, ErrShuttingDown, snapshot.ErrReadOnly} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// placeRoundRobin hands the run to the next active node of the adapter's
// rotation, and on to the following ones while a node cannot take it
// (L2). Each attempt draws a new run id, so that a node that started the
// run but did not answer keeps a record of its own.
func (s *Service) placeRoundRobin(ctx context.Context, a *adapterDef, opts RunOptions) (RunRecord, error) {
	name := a.spec.Name
	nodes := s.cluster.Active()
	if len(nodes) == 0 {
		return RunRecord{}, fmt.Errorf("%w: round-robin adapter %q: no active node", ErrNodeUnreachable, name)
	}
	pos, err := s.nextInRotation(ctx, a)
	if err != nil {
		return RunRecord{}, fmt.Errorf("round-robin adapter %q: taking the next position: %w", name, err)
	}
	var errs []error
	for i := range nodes {
		node := nodes[int((pos+uint64(i))%uint64(len(nodes)))]
		rec, err := s.placeOn(ctx, node, a, opts, s.newRunID(s.now().UTC()))
		if err == nil || !movesOn(err) {
			return rec, err
		}
		s.log.Warn("round-robin: the node cannot take the run; trying the next", "adapter", name, "node", node, "err", err)
		errs = append(errs, err)
	}
	return RunRecord{}, fmt.Errorf("%w: round-robin adapter %q: none of the %d active nodes took the run: %w", ErrNodeUnreachable, name, len(nodes), errors.Join(errs...))
}

// placeSingleNode starts the run on the cluster's single node, or makes it
// wait for that node (L3).
func (s *Service) placeSingleNode(ctx context.Context, a *adapterDef, opts RunOptions) (RunRecord, error) {
	node, active, ok := s.cluster.SingleNode()
	id := s.newRunID(s.now().UTC())
	if ok && (active || node == s.self) {
		rec, err := s.placeOn(ctx, node, a, opts, id)
		if err == nil || !movesOn(err) {
			return rec, err
		}
		s.log.Warn("single-node: the node cannot take the run; the run waits for it", "adapter", a.spec.Name, "node", node, "err", err)
	}
	return s.waitForNode(ctx, a, opts, id, node)
}

// waitForNode records run id as waiting for node and offers it to the
// single node every waitRetry until one takes it, the wait limit passes
// (failed, code node_unreachable) or Close (aborted) (L3). The waiting
// run holds the adapter's place in s.running, so that a second run of the
// adapter is refused (ErrRunInProgress) meanwhile.
func (s *Service) waitForNode(ctx context.Context, a *adapterDef, opts RunOptions, id, node string) (RunRecord, error) {
	name := a.spec.Name
	trigger := opts.Trigger
	if trigger == "" {
		trigger = "api"
	}
	now := s.now().UTC()
	ar := &activeRun{done: make(chan struct{})}
	ar.rec = RunRecord{ID: id, Adapter: name, Dataset: a.spec.Dataset, Trigger: trigger, Status: RunWaiting, Start: now, Forced: opts.Force,
		Node: node, PlacedBy: s.self}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return RunRecord{}, ErrShuttingDown
	}
	if r, err := s.inProgressLocked(name); err != nil {
		s.mu.Unlock()
		return r, err
	}
	s.running[name] = ar
	s.runs[id] = ar
	s.wg.Add(1)
	s.mu.Unlock()
	rec := ar.snapshot()
	if err := s.saveRun(ctx, rec); err != nil {
		s.log.Warn("saving run record", "run", id, "adapter", name, "err", err)
	}
	wait := s.cluster.SingleNodeWait()
	s.log.Warn("single-node run waits for its node", "run", id, "adapter", name, "node", node, "limit", wait)
	opts.Trigger = trigger
	go s.offerUntilTaken(ar, a, opts, now.Add(wait))
	return rec, nil
}

// offerUntilTaken is the goroutine of a waiting run (waitForNode).
func (s *Service) offerUntilTaken(ar *activeRun, a *adapterDef, opts RunOptions, deadline time.Time) {
	defer s.wg.Done()
	name, id := a.spec.Name, ar.rec.ID
	// release gives the adapter's place back before the run starts
	// somewhere, and ends the waiting record with end (nil: handed on).
	release := func() {
		s.mu.Lock()
		if s.running[name] == ar {
			delete(s.running, name)
		}
		delete(s.runs, id)
		s.mu.Unlock()
	}
	finish := func(status RunStatus, code, msg string) {
		release()
		end := s.now().UTC()
		ar.mu.Lock()
		ar.rec.Status, ar.rec.End, ar.rec.Code, ar.rec.Error = status, &end, code, errtext.Line(errtext.Clean(msg))
		rec := ar.rec
		ar.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.saveRun(ctx, rec); err != nil {
			s.log.Error("saving run record", "run", id, "adapter", name, "err", err)
		}
		s.metrics.observeRun(rec)
		s.log.Warn("waiting run ended without starting", "run", id, "adapter", name, "node", rec.Node, "status", status, "err", msg)
		close(ar.done)
	}
	t := time.NewTicker(waitRetry)
	defer t.Stop()
	for {
		select {
		case <-s.baseCtx.Done():
			finish(RunAborted, "aborted", ErrShuttingDown.Error()+": the node that placed the run stopped while it waited")
			return
		case <-t.C:
		}
		node, active, ok := s.cluster.SingleNode()
		ar.mu.Lock()
		moved := ok && node != ar.rec.Node
		if moved {
			ar.rec.Node = node
		}
		ar.mu.Unlock()
		if moved {
			s.log.Info("single-node run now waits for another node", "run", id, "adapter", name, "node", node)
		}
		if ok && (active || node == s.self) {
			release()
			ctx, cancel := context.WithTimeout(s.baseCtx, 30*time.Second)
			rec, err := s.placeOn(ctx, node, a, opts, id)
			cancel()
			switch {
			case err == nil:
				ar.mu.Lock()
				ar.rec = rec
				ar.mu.Unlock()
				close(ar.done)
				return
			case !movesOn(err):
				finish(RunFailed, runCode(err), err.Error())
				return
			}
			s.mu.Lock()
			if s.running[name] == nil {
				s.running[name] = ar
			}
			s.runs[id] = ar
			s.mu.Unlock()
		}
		if now := s.now(); !now.Before(deadline) {
			ar.mu.Lock()
			node := ar.rec.Node
			waited := now.Sub(ar.rec.Start).Round(time.Second)
			ar.mu.Unlock()
			err := fmt.Errorf("%w: single-node adapter %q: node %s could not take the run for %s (cluster.single_node_wait); the run never started",
				ErrNodeUnreachable, name, node, waited)
			finish(RunFailed, runCode(err), err.Error())
			return
		}
	}
}

// runIDRE is the form of the run ids newRunID makes.
var runIDRE = regexp.MustCompile(`^r[0-9]{19}-[0-9]{4}$`)

// TakeRun starts on this node run h that another node placed here (L5).
// When this node does not know the adapter, or knows an older revision of
// it, it rereads its definitions first (the placing node may have heard
// of a change before this one). Errors as startLocal's.
func (s *Service) TakeRun(ctx context.Context, h HandOff) (RunRecord, error) {
	if !runIDRE.MatchString(h.RunID) {
		return RunRecord{}, &OptionError{Key: "run_id", Msg: fmt.Sprintf("want a run id such as r1764669600000000000-0001, got %q", h.RunID)}
	}
	s.mu.Lock()
	a, ok := s.adapters.active(h.Adapter)
	stale := !ok || (a.origin == OriginAPI && a.revision < h.Revision)
	s.mu.Unlock()
	if stale {
		if _, err := s.Reload(ctx); err != nil {
			s.log.Warn("rereading definitions for a run handed to this node", "adapter", h.Adapter, "err", err)
		}
	}
	return s.startLocal(ctx, h.Adapter, RunOptions{Trigger: h.Trigger, Force: h.Force}, localRun{id: h.RunID, placedBy: h.PlacedBy})
}

// WaitRun waits until run id ends, or ctx is done, and returns its record
// (the live one with ctx's error when ctx ends first). A run of this node
// is waited for in memory; one that runs on another node (handed off,
// L5) by reading its record every waitPoll, until it ends or its node is
// gone (ErrNodeUnreachable: the outcome is known once that node starts
// again or is forgotten). Alone, a run that is not running is read as
// GetRun does.
func (s *Service) WaitRun(ctx context.Context, id string) (RunRecord, error) {
	s.mu.Lock()
	ar := s.runs[id]
	s.mu.Unlock()
	if ar != nil {
		select {
		case <-ar.done:
		case <-ctx.Done():
			return withProgress(ar.snapshot(), s.now().UTC()), ctx.Err()
		}
		if rec := ar.snapshot(); rec.Status.ended() || s.cluster == nil {
			return withProgress(rec, s.now().UTC()), nil
		}
	}
	if s.cluster == nil {
		return s.GetRun(ctx, id)
	}
	t := time.NewTicker(waitPoll)
	defer t.Stop()
	for {
		rec, err := s.GetRun(ctx, id)
		if err != nil || rec.Status.ended() {
			return rec, err
		}
		if rec.Status == RunRunning && rec.Node != s.self && s.cluster.Gone(rec.Node) {
			return rec, fmt.Errorf("%w: run %s was running on node %s, which failed or left; its outcome is known once that node starts again or is forgotten",
				ErrNodeUnreachable, id, rec.Node)
		}
		select {
		case <-ctx.Done():
			return rec, ctx.Err()
		case <-t.C:
		}
	}
}
