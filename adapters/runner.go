package adapters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/errtext"
	"github.com/snapstore/snapstore/snapshot"
)

// RunOptions are the options of StartRun.
type RunOptions struct {
	// Trigger is recorded in the run: "api" (default), "cli", "console",
	// "schedule", "retry", "start" (RunOnStart).
	Trigger string
	// Force commits even when a guard (allow_empty, max_shrink) would
	// refuse the run (snapshot.RunOptions.Force).
	Force bool
	// Tick is the scheduled time of a "schedule" trigger: in a cluster
	// only the adapter's owner fires it, once (L1).
	Tick time.Time
}

// localRun says how a run started on this node came to be here.
type localRun struct {
	// id is the run id another node gave it (L5); "" draws one.
	id string
	// placedBy is the node that placed it here; "" for this node.
	placedBy string
}

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

// snapshot returns a copy of the live record (its phases copied too: the
// run goes on updating them).
func (ar *activeRun) snapshot() RunRecord {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	r := ar.rec
	r.Phases = slices.Clone(r.Phases)
	return r
}

// inProgressLocked returns ErrRunInProgress, with the record of the run,
// when a run of adapter name runs or waits here. Caller holds s.mu.
func (s *Service) inProgressLocked(name string) (RunRecord, error) {
	cur := s.running[name]
	if cur == nil {
		return RunRecord{}, nil
	}
	r := cur.snapshot()
	return r, fmt.Errorf("%w: run %s of adapter %q started at %s", ErrRunInProgress, r.ID, name, r.Start.Format(time.RFC3339))
}

// refuseBusy returns ErrRunInProgress when a run of adapter name would
// find its dataset busy: a run of it here (with that run's record), or
// the dataset's writer slot held by another process (snapshot.WriterBusy).
// A refusal is an answer to the caller, not a run: it leaves no run
// record. The run's own take of the slot still decides; this spares the
// record of a run that could not start.
func (s *Service) refuseBusy(ctx context.Context, name string) (RunRecord, error) {
	s.mu.Lock()
	a, err := s.adapters.get(name)
	r, busy := s.inProgressLocked(name)
	s.mu.Unlock()
	if busy != nil {
		return r, busy
	}
	if err != nil || s.db.ReadOnly() {
		return RunRecord{}, nil // startLocal answers
	}
	if err := s.db.WriterBusy(ctx, a.spec.Dataset); errors.Is(err, snapshot.ErrRunInProgress) {
		return RunRecord{}, fmt.Errorf("%w: adapter %q: %v", ErrRunInProgress, name, err)
	}
	return RunRecord{}, nil
}

// startLocal starts a run of adapter name on this node now, in its own
// goroutine, and returns its record at once (status running). The run
// outlives ctx, which bounds only the first save of the record; Close
// cancels it. ErrRunInProgress (the record returned is the running
// one's), ErrAdapterNotFound, ErrShuttingDown, ErrNodeDraining (L6),
// snapshot.ErrReadOnly on a read-only process.
func (s *Service) startLocal(ctx context.Context, name string, opts RunOptions, place localRun) (RunRecord, error) {
	trigger := opts.Trigger
	if r, err := s.refuseBusy(ctx, name); err != nil {
		return r, err
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return RunRecord{}, ErrShuttingDown
	}
	a, err := s.adapters.get(name)
	if err != nil {
		s.mu.Unlock()
		return RunRecord{}, err
	}
	if r, err := s.inProgressLocked(name); err != nil {
		s.mu.Unlock()
		return r, err
	}
	if s.db.ReadOnly() {
		s.mu.Unlock()
		return RunRecord{}, errReadOnlyRun(name)
	}
	if s.cluster != nil && s.cluster.Draining() && trigger != "retry" {
		s.mu.Unlock()
		return RunRecord{}, fmt.Errorf("%w: node %s (run of adapter %q)", ErrNodeDraining, s.self, name)
	}
	now := s.now().UTC()
	if trigger == "" {
		trigger = "api"
	}
	id := place.id
	if id == "" {
		id = s.newRunID(now)
	}
	ar := &activeRun{done: make(chan struct{})}
	ar.rec = RunRecord{ID: id, Adapter: name, Dataset: a.spec.Dataset, Trigger: trigger, Status: RunRunning, Start: now, Forced: opts.Force,
		Node: s.self, PlacedBy: place.placedBy, Phases: []RunPhase{{Name: PhaseConnect, Start: now}}}
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
	return withProgress(rec, now), nil
}

// execute runs one pull to its end and records the outcome.
func (s *Service) execute(ctx context.Context, ar *activeRun, spec api.Adapter, force bool) {
	defer s.wg.Done()
	defer ar.cancel(nil)
	var res pullResult
	var err error
	if spec.ManyTables() {
		res, err = s.pullTables(ctx, ar, spec, force)
	} else {
		res, err = s.pull(ctx, ar, spec, force)
	}
	end := s.now().UTC()
	// Free the adapter before the record says the run ended: a client that
	// sees the final status and starts the next run must not be refused
	// with ErrRunInProgress. The record stays readable through s.runs
	// until it is saved.
	s.mu.Lock()
	if s.running[spec.Name] == ar {
		delete(s.running, spec.Name)
	}
	s.mu.Unlock()
	rec, errText := ar.end(ctx, end, res, err)

	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	s.saveFinal(saveCtx, rec) // queued when the store does not answer (U1)
	s.metrics.observeRun(rec)
	if s.observer != nil {
		s.observer.RunEnded(rec)
	}
	s.logRunEnd(rec, errText)
	s.mu.Lock()
	delete(s.runs, rec.ID)
	s.mu.Unlock()
	close(ar.done)
}

// end records the outcome of the run in its live record at end and
// returns the record: succeeded (its version, mode and counts), aborted
// by Close, skipped (a scheduled tick that found another process running
// the dataset, C2) or failed. The record's error is one bounded line
// (errtext.Line) of the text end also returns whole, for the log: an
// owner's or a store's error may carry many lines (a Java stack trace
// through HBase's Thrift2 gateway).
func (ar *activeRun) end(ctx context.Context, end time.Time, res pullResult, err error) (RunRecord, string) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.rec.End = &end
	endPhases(ar.rec.Phases, end)
	var text string
	switch {
	case err == nil:
		ar.rec.Status = RunSucceeded
		ar.rec.Version = res.vi.Version
		ar.rec.Mode, ar.rec.Verified, ar.rec.Chunks, ar.rec.ChunksSkipped = res.mode, res.verified, res.chunks, res.skipped
		if len(ar.rec.Tables) == 0 {
			// A run of several tables says it of each (RunTable).
			ar.rec.ModeReason = res.reason
		}
		if res.verified {
			// Nothing changed: the current version, all of it unchanged.
			ar.rec.Stats = snapshot.RunStats{Rows: res.vi.Stats.Rows, Unchanged: res.vi.Stats.Rows, Checksum: res.vi.Stats.Checksum}
		} else {
			ar.rec.Stats = res.vi.Stats
		}
	case errors.Is(context.Cause(ctx), ErrShuttingDown):
		ar.rec.Status = RunAborted
		ar.rec.Code = "aborted"
		text = errtext.Clean(abortedText(err))
	case errors.Is(err, snapshot.ErrRunInProgress) && ar.rec.Trigger == "schedule":
		// Another process runs the dataset (its writer slot is held): a
		// tick that finds its previous run going is skipped (C2).
		ar.rec.Status = RunSkipped
		ar.rec.Code = "skipped"
		text = errtext.Text(err)
	default:
		ar.rec.Status = RunFailed
		ar.rec.Code = runCode(err)
		text = errtext.Text(err)
	}
	ar.rec.Error = errtext.Line(text)
	return ar.rec, text
}

// logRunEnd logs the end of run rec: its version and changes when it
// succeeded, its status and errText otherwise, the whole text of which
// the record keeps one bounded line (activeRun.end): this is where the
// text a record cut is found.
func (s *Service) logRunEnd(rec RunRecord, errText string) {
	attrs := []any{"run", rec.ID, "adapter", rec.Adapter, "dataset", rec.Dataset, "txn", rec.TxnID, "rows_read", rec.RowsRead}
	if rec.Status == RunSucceeded {
		attrs = append(attrs, "version", rec.Version, "verified", rec.Verified, "mode", rec.Mode,
			"inserted", rec.Stats.Inserted, "updated", rec.Stats.Updated, "deleted", rec.Stats.Deleted)
		s.log.Info("run succeeded", attrs...)
		return
	}
	attrs = append(attrs, "code", rec.Code, "status", rec.Status, "err", errText)
	s.log.Warn("run ended without a new version", attrs...)
}

// digestChunkRows is the rows of a chunk of a version's digest
// (checksums.go).
const digestChunkRows = 5000

// pullResult is what a pull did: the version committed or verified, and
// how the source was read.
type pullResult struct {
	vi       snapshot.VersionInfo
	verified bool
	mode     string
	chunks   int // chunks of the digest
	skipped  int // chunks carried over (or verified) without reading
	// reason says why a table was read in full although its source has
	// checksums (RunTable.ModeReason).
	reason string
}

// keyIndexes returns the schema indexes of the key columns.
func keyIndexes(s snapshot.Schema) []int {
	out := make([]int, len(s.Key))
	for j, k := range s.Key {
		for i, c := range s.Columns {
			if c.Name == k {
				out[j] = i
			}
		}
	}
	return out
}

// embedJSON applies api.Adapter.EmbedJSON: when on, the JSON columns of
// schema (a copy is made) become snapshot.KindEmbeddedJSON, and their
// indexes are returned, for the values of each row to follow.
func embedJSON(schema *snapshot.Schema, on bool) []int {
	if !on {
		return nil
	}
	var idx []int
	cols := slices.Clone(schema.Columns)
	for i := range cols {
		if cols[i].Kind == snapshot.KindJSON {
			cols[i].Kind = snapshot.KindEmbeddedJSON
			idx = append(idx, i)
		}
	}
	schema.Columns = cols
	return idx
}

// openResource opens spec's resource through the lease l, as a run and
// the check of an adapter do. An error names the resource and the data
// connection once: a *SourceError (the connect failed) already names the
// connection and its server, and comes back as it is. The request names
// the adapter's dataset, and when it exists its creation time, so that a
// source that is a snapstore dataset can refuse to be its own source, and
// carries the adapter's source_options, checked again against the
// revision's connection type. chunkRows is the request's ChunkRows (0:
// the connection's).
func (s *Service) openResource(ctx context.Context, l *lease, spec api.Adapter, chunkRows int) (TableReader, error) {
	req, err := s.tableRequest(ctx, l, spec)
	if err != nil {
		return nil, err
	}
	req.ChunkRows = chunkRows
	tr, err := l.src.OpenTable(ctx, req)
	if err == nil {
		return tr, nil
	}
	err = l.scrub(err)
	var se *SourceError
	if errors.As(err, &se) {
		return nil, err
	}
	if errors.Is(err, ErrNoKey) && len(spec.KeyColumns) == 0 {
		// The source says the table has no key; what to do about it
		// depends on the adapter: one of one table may name its key
		// (an adapter of several tables says otherwise, tableError).
		return nil, fmt.Errorf("resource %q through data connection %q: %w; set key_columns", spec.Resource, spec.Connection, err)
	}
	return nil, fmt.Errorf("resource %q through data connection %q: %w", spec.Resource, spec.Connection, err)
}

// tableRequest is what a run of spec asks of its source table through l.
func (s *Service) tableRequest(ctx context.Context, l *lease, spec api.Adapter) (TableRequest, error) {
	opts, err := parseSourceOptions("source_options.", l.conn, l.typ, spec.SourceOptions)
	if err != nil {
		return TableRequest{}, fmt.Errorf("adapter %q: %w", spec.Name, err)
	}
	req := TableRequest{Resource: spec.Resource, KeyColumns: spec.KeyColumns, Dataset: spec.Dataset, Options: opts}
	if d, err := s.db.Dataset(ctx, spec.Dataset); err == nil {
		req.DatasetCreated = d.CreatedAt
	}
	return req, nil
}

// abortedText is the error of a run cancelled by Close: ErrShuttingDown and
// what was being done, with the cause said once (the context's own
// "context canceled" and ErrShuttingDown trimmed from the end).
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
// connection", a reset, EOF: ErrSourceUnavailable), says that the server
// went away. An error of a cancelled read is returned as it is, and so is
// a source that stopped answering (a *SourceError of cause timeout, which
// names the connection and the bound that passed).
func readError(ctx context.Context, conn string, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if se := (*SourceError)(nil); errors.As(err, &se) && se.Cause == "timeout" {
		return err
	}
	if errors.Is(err, ErrSourceUnavailable) {
		return fmt.Errorf("the source server of data connection %q went away (connection lost): %w", conn, err)
	}
	return fmt.Errorf("through data connection %q: %w", conn, err)
}
