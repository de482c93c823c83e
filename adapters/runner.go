package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// keepRunsPerAdapter is how many finished run records an adapter keeps in
// the metadata table; older ones are deleted after each run.
var keepRunsPerAdapter = 200 // a var so tests can lower it

// progressEvery is how many rows a run reads between progress updates of
// its live record.
const progressEvery = 1024

// activeRun is a run in progress. mu guards rec; cancel and done are
// immutable.
type activeRun struct {
	mu     sync.Mutex
	rec    RunRecord
	cancel context.CancelCauseFunc
	done   chan struct{}
}

func (ar *activeRun) snapshot() RunRecord {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	r := ar.rec
	return r
}

// newRunID returns a run id that sorts by start time: "r" + 19-digit Unix
// nanoseconds + "-" + a 4-digit per-process sequence.
func (s *Service) newRunID(t time.Time) string {
	return fmt.Sprintf("r%019d-%04d", t.UnixNano(), s.runSeq.Add(1)%10000)
}

// startRun starts a run with a trigger only (the scheduler's entry).
func (s *Service) startRun(ctx context.Context, name, trigger string) (RunRecord, error) {
	return s.startRunWith(ctx, name, RunOptions{Trigger: trigger})
}

// startRunWith implements StartRun and StartRunWith.
func (s *Service) startRunWith(ctx context.Context, name string, opts RunOptions) (RunRecord, error) {
	trigger := opts.Trigger
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return RunRecord{}, ErrShuttingDown
	}
	a := s.activeAdapterLocked(name)
	if a == nil {
		s.mu.Unlock()
		return RunRecord{}, s.notFoundAdapter(name)
	}
	if cur := s.running[name]; cur != nil {
		r := cur.snapshot()
		s.mu.Unlock()
		return r, fmt.Errorf("%w: run %s of adapter %q started at %s", ErrRunInProgress, r.ID, name, r.Start.Format(time.RFC3339))
	}
	now := s.now().UTC()
	if trigger == "" {
		trigger = "api"
	}
	ar := &activeRun{done: make(chan struct{})}
	ar.rec = RunRecord{ID: s.newRunID(now), Adapter: name, Dataset: a.spec.Dataset, Trigger: trigger, Status: RunRunning, Start: now, Forced: opts.Force}
	runCtx, cancel := context.WithCancelCause(s.baseCtx)
	ar.cancel = cancel
	s.running[name] = ar
	s.runs[ar.rec.ID] = ar
	s.wg.Add(1)
	spec := a.spec
	s.mu.Unlock()

	rec := ar.snapshot()
	if err := s.saveRun(ctx, rec); err != nil {
		s.log.Warn("saving run record", "run", rec.ID, "adapter", name, "err", err)
	}
	s.log.Info("run started", "run", rec.ID, "adapter", name, "dataset", spec.Dataset, "trigger", trigger, "force", opts.Force)
	go s.execute(runCtx, ar, spec, opts.Force)
	return rec, nil
}

// execute runs one pull to its end and records the outcome.
func (s *Service) execute(ctx context.Context, ar *activeRun, spec AdapterSpec, force bool) {
	defer s.wg.Done()
	defer ar.cancel(nil)
	vi, err := s.pull(ctx, ar, spec, force)
	end := s.now().UTC()
	ar.mu.Lock()
	ar.rec.End = &end
	switch {
	case err == nil:
		ar.rec.Status = RunSucceeded
		ar.rec.Version = vi.Version
		ar.rec.Stats = vi.Stats
	case errors.Is(context.Cause(ctx), ErrShuttingDown):
		ar.rec.Status = RunAborted
		ar.rec.Code = "aborted"
		ar.rec.Error = abortedText(err)
	default:
		ar.rec.Status = RunFailed
		ar.rec.Code = runCode(err)
		ar.rec.Error = err.Error()
	}
	rec := ar.rec
	ar.mu.Unlock()

	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.saveRun(saveCtx, rec); err != nil {
		s.log.Error("saving run record", "run", rec.ID, "adapter", rec.Adapter, "err", err)
	}
	s.metrics.observeRun(rec)
	lvl := "run succeeded"
	attrs := []any{"run", rec.ID, "adapter", rec.Adapter, "dataset", rec.Dataset, "txn", rec.TxnID, "rows", rec.RowsRead}
	if rec.Status == RunSucceeded {
		attrs = append(attrs, "version", rec.Version, "inserted", rec.Stats.Inserted, "updated", rec.Stats.Updated, "deleted", rec.Stats.Deleted)
		s.log.Info(lvl, attrs...)
	} else {
		attrs = append(attrs, "status", rec.Status, "err", rec.Error)
		s.log.Warn("run ended without a new version", attrs...)
	}
	s.pruneRuns(saveCtx, rec.Adapter)
	s.mu.Lock()
	if s.running[rec.Adapter] == ar {
		delete(s.running, rec.Adapter)
	}
	delete(s.runs, rec.ID)
	s.mu.Unlock()
	close(ar.done)
}

// pull streams the source table into a snapshot run and commits it. Any
// error aborts the run; the current version is untouched.
func (s *Service) pull(ctx context.Context, ar *activeRun, spec AdapterSpec, force bool) (snapshot.VersionInfo, error) {
	l, err := s.acquire(ctx, spec.Connection)
	if err != nil {
		return snapshot.VersionInfo{}, err
	}
	defer l.release()
	tr, err := l.src.OpenTable(ctx, TableRequest{Resource: spec.Resource, KeyColumns: spec.KeyColumns})
	if err != nil {
		return snapshot.VersionInfo{}, l.scrub(fmt.Errorf("opening %q through data connection %q: %w", spec.Resource, spec.Connection, err))
	}
	defer tr.Close()
	tbl := tr.Table()
	ar.mu.Lock()
	ar.rec.RowsEstimated = tbl.EstimatedRows
	runID := ar.rec.ID
	ar.mu.Unlock()
	resource := tbl.Name
	if tbl.Schema != "" {
		resource = tbl.Schema + "." + tbl.Name
	}
	schema := tr.Schema()
	run, err := s.db.BeginRun(ctx,
		snapshot.DatasetConfig{Name: spec.Dataset, Retention: spec.Retention, Guard: spec.Guard},
		snapshot.RunOptions{Schema: schema, Force: force, Source: snapshot.SourceInfo{
			Adapter: spec.Name, Connection: spec.Connection, Revision: l.revision, Resource: resource, RunID: runID,
		}})
	if err != nil {
		if errors.Is(err, snapshot.ErrKeyChanged) {
			return snapshot.VersionInfo{}, fmt.Errorf("the source key of %s is now (%s), which differs from dataset %q's key; drop the dataset or set key_columns: %w",
				resource, strings.Join(schema.Key, ", "), spec.Dataset, err)
		}
		return snapshot.VersionInfo{}, fmt.Errorf("starting a run of dataset %q: %w", spec.Dataset, err)
	}
	committed := false
	defer func() {
		if !committed {
			abortCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := run.Abort(abortCtx, "run "+runID+" did not finish"); err != nil {
				s.log.Warn("aborting run", "run", runID, "txn", run.TxnID(), "err", err)
			}
		}
	}()
	ar.mu.Lock()
	ar.rec.TxnID = run.TxnID()
	ar.mu.Unlock()
	var n int64
	for tr.Next(ctx) {
		if err := run.Put(ctx, tr.Values()); err != nil {
			return snapshot.VersionInfo{}, fmt.Errorf("writing row %d of %s: %w", n+1, resource, err)
		}
		n++
		if s.testHookRow != nil {
			s.testHookRow(ctx, spec.Name, n)
		}
		if n%progressEvery == 0 {
			st := run.Stats()
			ar.mu.Lock()
			ar.rec.RowsRead, ar.rec.Stats = n, st
			ar.mu.Unlock()
		}
	}
	if err := tr.Err(); err != nil {
		return snapshot.VersionInfo{}, l.scrub(readError(ctx, spec.Connection, err))
	}
	if err := tr.Close(); err != nil {
		s.log.Warn("ending source read", "run", runID, "err", l.scrub(err))
	}
	ar.mu.Lock()
	ar.rec.RowsRead, ar.rec.Stats = n, run.Stats()
	ar.mu.Unlock()
	if err := context.Cause(ctx); err != nil {
		return snapshot.VersionInfo{}, err
	}
	vi, err := run.Commit(ctx)
	committed = true // Commit aborts by itself on error
	if err != nil {
		// A refused run's stats say what it would have done (the deletes
		// are counted inside Commit).
		ar.mu.Lock()
		ar.rec.Stats = run.Stats()
		ar.mu.Unlock()
		if errors.Is(err, snapshot.ErrGuardRefused) {
			return snapshot.VersionInfo{}, fmt.Errorf("committing dataset %q: %w (start the run with force to commit anyway)", spec.Dataset, err)
		}
		return snapshot.VersionInfo{}, fmt.Errorf("committing dataset %q: %w", spec.Dataset, err)
	}
	return vi, nil
}

// runCodes maps a run's error to its record's stable Code; the first
// match wins, so specific sentinels come first.
var runCodes = []struct {
	err  error
	code string
}{
	{snapshot.ErrGuardRefused, "guard_refused"},
	{snapshot.ErrKeyChanged, "key_changed"},
	{snapshot.ErrBadKey, "bad_key"},
	{ErrResourceNotFound, "resource_not_found"},
	{ErrNoKey, "no_key"},
	{ErrUnsupportedType, "unsupported_type"},
	{ErrSourceAuth, "source_auth"},
	{ErrSourceUnavailable, "source_unavailable"},
	{ErrConnectionNotFound, "connection_not_found"},
	{ErrShuttingDown, "aborted"},
	{context.Canceled, "aborted"},
}

// runCode classifies a run error for RunRecord.Code.
func runCode(err error) string {
	for _, c := range runCodes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return "error"
}

// abortedText is the error of a run cancelled by Close: ErrShuttingDown and
// what was being done, without the context's own "context canceled" said
// twice (e2e.md #1).
func abortedText(err error) string {
	msg := err.Error()
	for _, suffix := range []string{" (" + context.Canceled.Error() + ")", ": " + context.Canceled.Error(), ": " + ErrShuttingDown.Error()} {
		msg = strings.TrimSuffix(msg, suffix)
	}
	if msg == context.Canceled.Error() || msg == ErrShuttingDown.Error() || msg == "" {
		return ErrShuttingDown.Error() + ": run cancelled"
	}
	return ErrShuttingDown.Error() + ": run cancelled while " + msg
}

// readError names the data connection in an error that ended a source read
// and, for a connection the server dropped (the driver's bare "invalid
// connection", a reset, EOF), says so (e2e.md #2).
func readError(ctx context.Context, conn string, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if errors.Is(err, ErrSourceUnavailable) {
		return fmt.Errorf("the source server of data connection %q went away (connection lost): %w", conn, err)
	}
	return fmt.Errorf("through data connection %q: %w", conn, err)
}

func (s *Service) saveRun(ctx context.Context, rec RunRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.db.PutRecord(ctx, recordRun, rec.ID, b)
}

// recordSkipped records a run that a schedule tick did not start.
func (s *Service) recordSkipped(ctx context.Context, adapter, trigger, reason string) {
	now := s.now().UTC()
	s.mu.Lock()
	dataset := adapter
	if a := s.activeAdapterLocked(adapter); a != nil {
		dataset = a.spec.Dataset
	}
	s.mu.Unlock()
	rec := RunRecord{ID: s.newRunID(now), Adapter: adapter, Dataset: dataset, Trigger: trigger, Status: RunSkipped, Start: now, End: &now, Error: reason, Code: "skipped"}
	if err := s.saveRun(ctx, rec); err != nil {
		s.log.Warn("saving skipped run", "run", rec.ID, "adapter", adapter, "err", err)
	}
	s.metrics.observeRun(rec)
	s.log.Info("run skipped", "run", rec.ID, "adapter", adapter, "reason", reason)
}

func (s *Service) getRun(ctx context.Context, id string) (RunRecord, error) {
	s.mu.Lock()
	ar := s.runs[id]
	s.mu.Unlock()
	if ar != nil {
		return ar.snapshot(), nil
	}
	b, err := s.db.GetRecord(ctx, recordRun, id)
	if errors.Is(err, snapshot.ErrRecordNotFound) || errors.Is(err, snapshot.ErrInvalidArgument) {
		return RunRecord{}, fmt.Errorf("%w: %q", ErrRunNotFound, id)
	}
	if err != nil {
		return RunRecord{}, fmt.Errorf("adapters: reading run %q: %w", id, err)
	}
	var rec RunRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return RunRecord{}, fmt.Errorf("adapters: decoding run %q: %w", id, err)
	}
	return rec, nil
}

func (s *Service) waitRun(ctx context.Context, id string) (RunRecord, error) {
	s.mu.Lock()
	ar := s.runs[id]
	s.mu.Unlock()
	if ar == nil {
		return s.getRun(ctx, id)
	}
	select {
	case <-ar.done:
		return ar.snapshot(), nil
	case <-ctx.Done():
		return ar.snapshot(), ctx.Err()
	}
}

// allRuns lists every stored run of adapter ("" = all), newest first, with
// live records of running ones.
func (s *Service) allRuns(ctx context.Context, adapter string) ([]RunRecord, error) {
	recs, err := s.db.ListRecords(ctx, recordRun)
	if err != nil {
		return nil, fmt.Errorf("adapters: listing runs: %w", err)
	}
	s.mu.Lock()
	live := map[string]*activeRun{}
	for id, ar := range s.runs {
		live[id] = ar
	}
	s.mu.Unlock()
	var out []RunRecord
	for _, r := range recs {
		var rec RunRecord
		if ar, ok := live[r.Name]; ok {
			rec = ar.snapshot()
		} else if err := json.Unmarshal(r.Value, &rec); err != nil {
			continue
		}
		if adapter == "" || rec.Adapter == adapter {
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}

func (s *Service) listRuns(ctx context.Context, adapter string, limit int) ([]RunRecord, error) {
	if limit <= 0 {
		limit = 100
	}
	runs, err := s.allRuns(ctx, adapter)
	if err != nil {
		return nil, err
	}
	if len(runs) > limit {
		runs = runs[:limit]
	}
	return runs, nil
}

// pruneRuns deletes the finished records of adapter beyond the newest
// keepRunsPerAdapter.
func (s *Service) pruneRuns(ctx context.Context, adapter string) {
	runs, err := s.allRuns(ctx, adapter)
	if err != nil || len(runs) <= keepRunsPerAdapter {
		return
	}
	for _, r := range runs[keepRunsPerAdapter:] {
		if r.Status == RunRunning {
			continue
		}
		if err := s.db.DeleteRecord(ctx, recordRun, r.ID); err != nil {
			s.log.Warn("pruning run record", "run", r.ID, "err", err)
			return
		}
	}
}

// abandonRuns marks runs a previous process left "running" as aborted.
func (s *Service) abandonRuns(ctx context.Context) error {
	runs, err := s.allRuns(ctx, "")
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.Status != RunRunning {
			continue
		}
		now := s.now().UTC()
		r.Status, r.End, r.Code, r.Error = RunAborted, &now, "aborted", "the process stopped while the run was in progress; its transaction is invalid"
		if err := s.saveRun(ctx, r); err != nil {
			return fmt.Errorf("adapters: marking run %s aborted: %w", r.ID, err)
		}
		s.log.Warn("run left running by a previous process marked aborted", "run", r.ID, "adapter", r.Adapter)
	}
	return nil
}
