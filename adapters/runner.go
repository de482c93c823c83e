package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

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

// startLocal starts a run of adapter name on this node now, in its own
// goroutine, and returns its record at once (status running). The run
// outlives ctx, which bounds only the first save of the record; Close
// cancels it. ErrRunInProgress (the record returned is the running
// one's), ErrAdapterNotFound, ErrShuttingDown, ErrNodeDraining (L6),
// snapshot.ErrReadOnly on a read-only process.
func (s *Service) startLocal(ctx context.Context, name string, opts RunOptions, place localRun) (RunRecord, error) {
	trigger := opts.Trigger
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
func (s *Service) execute(ctx context.Context, ar *activeRun, spec AdapterSpec, force bool) {
	defer s.wg.Done()
	defer ar.cancel(nil)
	res, err := s.pull(ctx, ar, spec, force)
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
	ar.mu.Lock()
	ar.rec.End = &end
	endPhases(ar.rec.Phases, end)
	switch {
	case err == nil:
		ar.rec.Status = RunSucceeded
		ar.rec.Version = res.vi.Version
		ar.rec.Mode, ar.rec.Verified, ar.rec.Chunks, ar.rec.ChunksSkipped = res.mode, res.verified, res.chunks, res.skipped
		if res.verified {
			// Nothing changed: the current version, all of it unchanged.
			ar.rec.Stats = snapshot.RunStats{Rows: res.vi.Stats.Rows, Unchanged: res.vi.Stats.Rows, Checksum: res.vi.Stats.Checksum}
		} else {
			ar.rec.Stats = res.vi.Stats
		}
	case errors.Is(context.Cause(ctx), ErrShuttingDown):
		ar.rec.Status = RunAborted
		ar.rec.Code = "aborted"
		ar.rec.Error = abortedText(err)
	case errors.Is(err, snapshot.ErrRunInProgress) && ar.rec.Trigger == "schedule":
		// Another process runs the dataset (its writer slot is held): a
		// tick that finds its previous run going is skipped (C2).
		ar.rec.Status = RunSkipped
		ar.rec.Code = "skipped"
		ar.rec.Error = err.Error()
	default:
		ar.rec.Status = RunFailed
		ar.rec.Code = runCode(err)
		ar.rec.Error = err.Error()
	}
	rec := ar.rec
	ar.mu.Unlock()

	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	s.saveFinal(saveCtx, rec) // queued when the store does not answer (U1)
	s.metrics.observeRun(rec)
	if s.observer != nil {
		s.observer.RunEnded(rec)
	}
	attrs := []any{"run", rec.ID, "adapter", rec.Adapter, "dataset", rec.Dataset, "txn", rec.TxnID, "rows_read", rec.RowsRead}
	if rec.Status == RunSucceeded {
		attrs = append(attrs, "version", rec.Version, "verified", rec.Verified, "mode", rec.Mode,
			"inserted", rec.Stats.Inserted, "updated", rec.Stats.Updated, "deleted", rec.Stats.Deleted)
		s.log.Info("run succeeded", attrs...)
	} else {
		attrs = append(attrs, "status", rec.Status, "err", rec.Error)
		s.log.Warn("run ended without a new version", attrs...)
	}
	s.mu.Lock()
	delete(s.runs, rec.ID)
	s.mu.Unlock()
	close(ar.done)
}

// pull streams the source table into a snapshot run and commits it. Any
// error aborts the run; the current version is untouched (P5).
func (s *Service) pull(ctx context.Context, ar *activeRun, spec AdapterSpec, force bool) (pullResult, error) {
	l, err := s.acquire(ctx, spec.Connection)
	if err != nil {
		return pullResult{}, err
	}
	defer l.release()
	src, err := openResource(ctx, l, spec)
	if err != nil {
		return pullResult{}, err
	}
	defer src.Close()
	tbl := src.Table()
	var cur *snapshot.VersionInfo
	if d, err := s.db.Dataset(ctx, spec.Dataset); err == nil {
		cur = d.CurrentInfo
	}
	est := tbl.EstimatedRows
	if est <= 0 && cur != nil {
		// No estimate from the source (a view, statistics not computed
		// yet): the current version's row count is the next best.
		est = cur.Stats.Rows
	}
	ar.mu.Lock()
	ar.rec.RowsEstimated = est
	runID := ar.rec.ID
	ar.mu.Unlock()
	resource := tbl.Name
	if tbl.Schema != "" {
		resource = tbl.Schema + "." + tbl.Name
	}
	schema := src.Schema()
	jsonCols := embedJSON(&schema, spec.EmbedJSON)

	// What the source's checksums allow (checksums.go). A partitioned
	// run has none: its digest needs the run's checksum as each row is
	// put (chunkRecorder), which the owners of the partitions compute,
	// and carrying a range over is a walk of every partition; its
	// coordinator still records the current version verified when no
	// partition changed anything (RunWriter.Verified).
	cs, _ := src.(checksummer)
	if spec.Strategy == StrategyPartitionByKey {
		cs = nil
	}
	prev := s.readDigest(ctx, spec.Dataset, cur, schema, cs)
	var chunks *chunkState
	if prev != nil && !spec.CommitUnchanged {
		// A run may end verified without beginning a snapshot run: the
		// dataset's retention and guard follow the adapter all the same.
		if err := s.syncDatasetConfig(ctx, spec); err != nil {
			return pullResult{}, err
		}
	}
	if prev != nil && prev.Checksums && prev.Changed < 0.5 && cs.chunkable() {
		if chunks, err = chunkPass(ctx, cs, prev); err != nil {
			return pullResult{}, l.scrub(readError(ctx, spec.Connection, err))
		}
		if chunks.nchg == 0 && !chunks.full && !spec.CommitUnchanged {
			// Nothing changed: verified; the digest records that this
			// run changed nothing.
			next := *prev
			next.Changed = 0
			vi, err := s.verifyRun(ctx, spec.Dataset, cur, &next)
			return pullResult{vi: vi, mode: ModeVerify, verified: true, chunks: len(prev.Chunks), skipped: len(prev.Chunks)}, err
		}
	}

	run, err := s.beginWriter(ctx, spec,
		snapshot.DatasetConfig{Name: spec.Dataset, Retention: spec.Retention, Guard: spec.Guard},
		snapshot.RunOptions{Schema: schema, Force: force, VerifyUnchanged: !spec.CommitUnchanged, Source: snapshot.SourceInfo{
			Adapter: spec.Name, Connection: spec.Connection, Revision: l.revision, Resource: resource, RunID: runID,
		}}, runID)
	if err != nil {
		if errors.Is(err, snapshot.ErrKeyChanged) {
			return pullResult{}, fmt.Errorf("the source key of %s is now (%s), which differs from dataset %q's key; drop the dataset or set key_columns: %w",
				resource, strings.Join(schema.Key, ", "), spec.Dataset, err)
		}
		return pullResult{}, fmt.Errorf("starting a run of dataset %q: %w", spec.Dataset, err)
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
	ar.beginPhaseLocked(PhaseRead, s.now().UTC())
	ar.mu.Unlock()
	s.checkpoint(ctx, ar)

	res := pullResult{mode: ModeFull}
	// The digest and carrying ranges over need a run of this process.
	local, _ := run.(*snapshot.Run)
	var rec *chunkRecorder
	if cs != nil && cs.chunkable() && local != nil {
		rows := digestChunkRows
		if chunks != nil && !chunks.full {
			rows = math.MaxInt // chunk mode keeps the digest's chunks
		}
		rec = newChunkRecorder(local, rows)
	}
	var n int64
	// put puts one row read from tr.
	put := func(tr TableReader) error {
		vals := tr.Values()
		for _, i := range jsonCols {
			if vals[i].Kind == snapshot.KindJSON {
				vals[i].Kind = snapshot.KindEmbeddedJSON
			}
		}
		if err := run.Put(ctx, vals); err != nil {
			return fmt.Errorf("writing row %d of %s: %w", n+1, resource, err)
		}
		n++
		if rec != nil {
			rec.put(vals[keyIndexOf(schema)])
		}
		if s.testHookRow != nil {
			s.testHookRow(ctx, spec.Name, n)
		}
		if n%progressEvery == 0 {
			st := run.Stats()
			ar.mu.Lock()
			ar.rec.RowsRead, ar.rec.Stats = n, st
			ar.mu.Unlock()
		}
		return nil
	}
	checksumsDropped := false // the source's checksums disagreed with a read
	if chunks != nil && !chunks.full && local != nil {
		// Chunk mode: the chunks that changed are read, the others
		// carried over.
		res.mode = ModeChunks
		var lo *snapshot.Value
		for i, c := range prev.Chunks {
			last := i == len(prev.Chunks)-1
			hiVal, err := parseDigestKey(c.Hi)
			if err != nil {
				return pullResult{}, fmt.Errorf("the digest of the current version: %w", err)
			}
			if !chunks.changed[i] {
				var after []snapshot.Value
				if lo != nil {
					after = []snapshot.Value{*lo}
				}
				if err := local.Carry(ctx, after, []snapshot.Value{hiVal}, c.Rows, c.Sum); err != nil {
					return pullResult{}, fmt.Errorf("carrying rows of %s over: %w", resource, err)
				}
				rec.carried(c)
				res.skipped++
			} else {
				var hi *snapshot.Value
				if !last {
					hi = &hiVal
				}
				// The last range takes the keys past the digest's last
				// one: a table that grows at its end is cut into new
				// chunks there, rather than one chunk that grows each run.
				split := last && chunks.rows[i] > 2*digestChunkRows
				first := len(rec.chunks)
				if split {
					rec.chunkRows = digestChunkRows
				}
				cs.readRange(lo, hi)
				read := int64(0)
				for src.Next(ctx) {
					if err := put(src); err != nil {
						return pullResult{}, err
					}
					read++
				}
				if err := src.Err(); err != nil {
					return pullResult{}, l.scrub(readError(ctx, spec.Connection, err))
				}
				if read != chunks.rows[i] {
					return pullResult{}, fmt.Errorf("reading %s: a range gave %d rows, its checksum counted %d", resource, read, chunks.rows[i])
				}
				// The range's rows as read, with the checksum the pass
				// computed in the same snapshot; a split range's chunks
				// get theirs computed now, in that snapshot too.
				switch {
				case split:
					rec.close(0)
					if err := addChunkChecksums(ctx, cs, rec.chunks[first:], lo); err != nil {
						if !errors.Is(err, errDigestMismatch) {
							return pullResult{}, l.scrub(readError(ctx, spec.Connection, err))
						}
						s.log.Warn("source checksums dropped", "run", runID, "err", err)
						checksumsDropped = true
					}
				case rec.rows > 0:
					rec.close(chunks.crc[i])
				}
			}
			lo = &hiVal
		}
		res.chunks = len(rec.chunks)
	} else {
		// Full read, ahead of the run (prefetch.go).
		tr := prefetch(ctx, src)
		for tr.Next(ctx) {
			if err := put(tr); err != nil {
				tr.Close()
				return pullResult{}, err
			}
		}
		if err := tr.Err(); err != nil {
			tr.Close()
			return pullResult{}, l.scrub(readError(ctx, spec.Connection, err))
		}
		if rec != nil {
			rec.close(0)
			res.chunks = len(rec.chunks)
		}
	}
	// The new version's digest: in chunk mode, the chunks' checksums
	// carried or computed; after a full read of a table that changed
	// little last time, the chunks' checksums computed now, for a cheaper
	// run next time.
	if rec != nil {
		d := &digest{Version: digestVersion, Signature: cs.checksumSignature(), Chunks: rec.chunks, Changed: rec.changedShare()}
		if cur == nil {
			d.Changed = 1
		}
		switch {
		case res.mode == ModeChunks:
			d.Checksums = !checksumsDropped
		case d.Changed < 0.5:
			// A full read that changed little: the next run will likely
			// change little too, and chunk mode needs the checksums.
			err := addChunkChecksums(ctx, cs, d.Chunks, nil)
			d.Checksums = err == nil
			if err != nil {
				if !errors.Is(err, errDigestMismatch) {
					return pullResult{}, l.scrub(readError(ctx, spec.Connection, err))
				}
				s.log.Warn("source checksums dropped", "run", runID, "err", err)
				d.Checksums = false
			}
		}
		if b, err := json.Marshal(d); err == nil {
			local.SetSourceDigest(b)
		}
	}
	if err := src.Close(); err != nil {
		s.log.Warn("ending source read", "run", runID, "err", l.scrub(err))
	}
	ar.mu.Lock()
	ar.rec.RowsRead, ar.rec.Stats = n, run.Stats()
	ar.beginPhaseLocked(PhaseCommit, s.now().UTC())
	ar.mu.Unlock()
	s.checkpoint(ctx, ar)
	if err := context.Cause(ctx); err != nil {
		return pullResult{}, err
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
			return pullResult{}, fmt.Errorf("committing dataset %q: %w (start the run with force=true to commit anyway)", spec.Dataset, err)
		}
		return pullResult{}, fmt.Errorf("committing dataset %q: %w", spec.Dataset, err)
	}
	res.vi, res.verified = vi, run.Verified()
	return res, nil
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
}

// keyIndexOf returns the schema index of the (first) key column.
func keyIndexOf(s snapshot.Schema) int {
	for i, c := range s.Columns {
		if c.Name == s.Key[0] {
			return i
		}
	}
	return 0
}

// embedJSON applies AdapterSpec.EmbedJSON: when on, the JSON columns of
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
// connection and its server, and comes back as it is.
func openResource(ctx context.Context, l *lease, spec AdapterSpec) (TableReader, error) {
	tr, err := l.src.OpenTable(ctx, TableRequest{Resource: spec.Resource, KeyColumns: spec.KeyColumns})
	if err == nil {
		return tr, nil
	}
	err = l.scrub(err)
	var se *SourceError
	if errors.As(err, &se) {
		return nil, err
	}
	return nil, fmt.Errorf("resource %q through data connection %q: %w", spec.Resource, spec.Connection, err)
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
// went away. An error of a cancelled read is returned as it is.
func readError(ctx context.Context, conn string, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if errors.Is(err, ErrSourceUnavailable) {
		return fmt.Errorf("the source server of data connection %q went away (connection lost): %w", conn, err)
	}
	return fmt.Errorf("through data connection %q: %w", conn, err)
}
