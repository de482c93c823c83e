package adapters

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/internal/errtext"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
)

// RunStatus is a run's state.
type RunStatus string

const (
	// RunRunning: the pull is going; the record is live (GetRun).
	RunRunning RunStatus = "running"
	// RunSucceeded: the run committed RunRecord.Version.
	RunSucceeded RunStatus = "succeeded"
	// RunFailed: the run ended without a version; Code and Error say why.
	RunFailed RunStatus = "failed"
	// RunAborted: Close cancelled the run, or its process stopped.
	RunAborted RunStatus = "aborted"
	// RunSkipped: a schedule tick found the previous run still going (C2).
	RunSkipped RunStatus = "skipped"
	// RunWaiting: a single-node run waits for its node (L3); the record
	// names it.
	RunWaiting RunStatus = "waiting"
)

// ended reports whether a run of status st is over.
func (st RunStatus) ended() bool { return st != RunRunning && st != RunWaiting }

// RunRecord records one run of an adapter.
type RunRecord struct {
	ID      string     `json:"id"`
	Adapter string     `json:"adapter"`
	Dataset string     `json:"dataset"`
	TxnID   int64      `json:"txn_id,omitempty"`
	Trigger string     `json:"trigger"` // "api", "cli", "console", "schedule", "retry", "start"
	Status  RunStatus  `json:"status"`
	Start   time.Time  `json:"started_at"`
	End     *time.Time `json:"ended_at,omitempty"`
	// RowsRead is the number of rows read from the source so far (live,
	// updated every progressEvery rows while the run reads).
	RowsRead int64 `json:"rows_read"`
	// RowsEstimated is the estimate of the rows to read, known once the
	// source table is open: the source's own estimate, else the row count
	// of the dataset's current version, else 0 (RunProgress says which).
	RowsEstimated int64             `json:"rows_estimated"`
	Stats         snapshot.RunStats `json:"stats"`
	// Phases lists the run's phases so far, oldest first (PhaseConnect,
	// PhaseRead, PhaseCommit).
	Phases []RunPhase `json:"phases,omitempty"`
	// Progress is computed when the record is read, never stored
	// (withProgress).
	Progress *RunProgress `json:"progress,omitempty"`
	// Version is the committed version, for succeeded runs; for a
	// verified run, the current version it found unchanged.
	Version int64 `json:"version,omitempty"`
	// Verified is true for a run that found the source identical to the
	// current version and recorded that instead of committing a new one
	// (checksums.go).
	Verified bool `json:"verified,omitempty"`
	// Mode says how the source was read: "full", "chunks" (only the key
	// ranges whose checksums changed), "verify" (the ranges' checksums
	// alone, none changed) or "diff" (a snapstore source's changes since
	// the version the current one copied); empty while running or when
	// the run failed first.
	Mode string `json:"mode,omitempty"`
	// ModeReason, for a run of one table read in full although its
	// source computes checksums, says why (RunTable.ModeReason says it of
	// each table of a run of several).
	ModeReason string `json:"mode_reason,omitempty"`
	// Chunks is the number of key ranges of the version's source digest,
	// ChunksSkipped those carried over without reading.
	Chunks        int `json:"chunks,omitempty"`
	ChunksSkipped int `json:"chunks_skipped,omitempty"`
	// Point, for a run of a dataset of several tables, says how the
	// source's point every table was read at was made: its mode, why,
	// and the connections it held (docs/connections.md); for a run of one
	// table, the point its chunk checksums spread over (ChecksumConnections).
	Point *source.PointInfo `json:"point,omitempty"`
	// ChecksumConnections, for a run of one table that computed the
	// source's chunk checksums, is how many connections computed them:
	// 1, one after another on the run's connection; more, at once over
	// the connections of one point of the source (Point), as the
	// adapter's parallelism asks (checksumpoint.go).
	ChecksumConnections int `json:"checksum_connections,omitempty"`
	// Tables, for a run of a dataset of several tables, lists each table
	// with how it was read and its counts.
	Tables []RunTable `json:"tables,omitempty"`
	// Warnings say what the run passed over that is likely a mistake of
	// the definition, though not one that stops it: an include pattern of
	// several that matches no table of the source.
	Warnings []string `json:"warnings,omitempty"`
	Error    string   `json:"error,omitempty"`
	// Code classifies a run that did not succeed, stable for scripts:
	// guard_refused, duplicate_key, resource_not_found, no_key, unsupported_type,
	// table_changed (a source table truncated, altered or given other
	// columns under the run), source_unavailable, source_auth, connection_not_found, config (the
	// connection's options do not resolve: an env: variable unset, a
	// file: unreadable; the cause a connection test gives), key_changed,
	// bad_key, store_unavailable (the store, HBase, stopped answering),
	// node_failed (the node that ran it, or an owner of its partitions,
	// failed or was forgotten; noderuns.go), aborted, skipped, error
	// (anything else).
	Code string `json:"code,omitempty"`
	// Forced is true for a run started with RunOptions.Force.
	Forced bool `json:"forced,omitempty"`
	// Node is the id of the cluster node that runs the run (or, waiting,
	// the node it waits for); PlacedBy the node that placed it there,
	// when another (L5). Both empty on a node that runs alone.
	Node     string `json:"node,omitempty"`
	PlacedBy string `json:"placed_by,omitempty"`
}

// keepRunsPerAdapter is how many finished run records an adapter keeps in
// the metadata table; older ones are deleted after each run.
var keepRunsPerAdapter = 200 // a var so tests can lower it

// runCodes maps a run's error to its record's stable Code; the first
// match wins, so specific sentinels come first.
var runCodes = []struct {
	err  error
	code string
}{
	{snapshot.ErrGuardRefused, "guard_refused"},
	{snapshot.ErrRunInProgress, "run_in_progress"},
	{snapshot.ErrDuplicateKey, "duplicate_key"},
	{snapshot.ErrKeyChanged, "key_changed"},
	{snapshot.ErrTableMissing, "resource_not_found"},
	{snapshot.ErrPartitionCount, "partition_count"},
	{snapshot.ErrPartitionKey, "partition_key"},
	{snapshot.ErrBadKey, "bad_key"},
	// A run that failed for the store and whose abort's outcome is then
	// unknown failed for the store: nothing of it was committed.
	{store.ErrUnavailable, "store_unavailable"},
	{snapshot.ErrOutcomeUnknown, "outcome_unknown"},
	{ErrResourceNotFound, "resource_not_found"},
	{ErrBadSelection, "bad_selection"},
	{ErrNoKey, "no_key"},
	{ErrUnsupportedType, "unsupported_type"},
	{ErrTableChanged, "table_changed"},
	{ErrSourcePermission, "source_permission"},
	{ErrSourceAuth, "source_auth"},
	{ErrSourceUnavailable, "source_unavailable"},
	{ErrConnectionNotFound, "connection_not_found"},
	{ErrStrategyNotSupported, "strategy_not_supported"},
	{ErrNodeUnreachable, "node_unreachable"},
	{ErrNodeFailed, "node_failed"},
	{ErrNodeDraining, "node_draining"},
	{ErrBadOption, "config"},
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

// saveRun stores rec under its id, replacing the record of the same run.
func (s *Service) saveRun(ctx context.Context, rec RunRecord) error {
	rec.Progress = nil
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
	if a, ok := s.adapters.active(adapter); ok {
		dataset = a.spec.Dataset
	}
	s.mu.Unlock()
	rec := RunRecord{ID: s.newRunID(now), Adapter: adapter, Dataset: dataset, Trigger: trigger, Status: RunSkipped, Start: now, End: &now, Error: errtext.Line(reason), Code: "skipped"}
	s.saveFinal(ctx, rec)
	s.metrics.observeRun(rec)
	s.log.Info("run skipped", "run", rec.ID, "adapter", adapter, "reason", reason)
}

// GetRun returns run id's record, with its progress: the live one while
// it runs, else the stored one. ErrRunNotFound.
func (s *Service) GetRun(ctx context.Context, id string) (RunRecord, error) {
	s.mu.Lock()
	ar := s.runs[id]
	s.mu.Unlock()
	if ar != nil {
		return withProgress(ar.snapshot(), s.now().UTC()), nil
	}
	if rec, ok := s.unsaved.get(id); ok {
		return withProgress(rec, s.now().UTC()), nil // U1
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
	return withProgress(rec, s.now().UTC()), nil
}

// allRuns lists every stored run of adapter ("" = all), newest first, with
// live records of running ones and the final records still to be saved
// (U1).
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
	unsaved := map[string]RunRecord{}
	for _, r := range s.unsaved.all() {
		unsaved[r.ID] = r
	}
	var out []RunRecord
	keep := func(rec RunRecord) {
		if adapter == "" || rec.Adapter == adapter {
			out = append(out, rec)
		}
	}
	for _, r := range recs {
		var rec RunRecord
		if ar, ok := live[r.Name]; ok {
			rec = ar.snapshot()
		} else if u, ok := unsaved[r.Name]; ok {
			rec = u
			delete(unsaved, r.Name)
		} else if err := json.Unmarshal(r.Value, &rec); err != nil {
			continue
		}
		keep(rec)
	}
	for _, rec := range unsaved { // not stored at all yet
		keep(rec)
	}
	// Run ids sort by start time (newRunID): newest first.
	slices.SortFunc(out, func(a, b RunRecord) int { return cmp.Compare(b.ID, a.ID) })
	return out, nil
}

// ListRuns lists the runs of adapter ("" for every adapter), newest first,
// at most limit (0: 100), with their progress; running ones are live.
func (s *Service) ListRuns(ctx context.Context, adapter string, limit int) ([]RunRecord, error) {
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
	now := s.now().UTC()
	for i := range runs {
		runs[i] = withProgress(runs[i], now)
	}
	return runs, nil
}

// LastRuns returns the newest run of every adapter that has one, by
// adapter name, with its progress (live when running): one pass over the
// run records, however many adapters.
func (s *Service) LastRuns(ctx context.Context) (map[string]RunRecord, error) {
	runs, err := s.allRuns(ctx, "")
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	out := map[string]RunRecord{}
	for _, r := range runs { // newest first
		if _, ok := out[r.Adapter]; !ok {
			out[r.Adapter] = withProgress(r, now)
		}
	}
	return out, nil
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

// abandonRuns marks aborted the runs a previous process of this node
// left running, and the waiting runs it placed (L7); the runs of other
// nodes of a cluster go on.
func (s *Service) abandonRuns(ctx context.Context) error {
	_, err := s.abandonRunsOf(ctx, s.self, "the process stopped")
	return err
}

// abandonRunsOf marks aborted the runs recorded running on node (or on no
// node, when node is this one) and the waiting runs node placed; what
// says what happened to node.
func (s *Service) abandonRunsOf(ctx context.Context, node, what string) (int, error) {
	runs, err := s.allRuns(ctx, "")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range runs {
		var why string
		switch {
		case r.Status == RunRunning && (r.Node == node || (r.Node == "" && node == s.self)):
			if live := s.isLive(r.ID); live {
				continue
			}
			if vi, ok := s.committedBy(ctx, r); ok {
				// The run committed; only its final record was lost.
				end := vi.CommittedAt
				r.Status, r.End, r.Version, r.Stats, r.Code, r.Error = RunSucceeded, &end, vi.Version, vi.Stats, "", ""
				endPhases(r.Phases, end)
				if err := s.saveRun(ctx, r); err != nil {
					return n, fmt.Errorf("adapters: marking run %s succeeded: %w", r.ID, err)
				}
				n++
				s.log.Warn("run marked succeeded from its committed version", "run", r.ID, "adapter", r.Adapter, "version", vi.Version)
				continue
			}
			why = what + " while the run was in progress, or before its end was recorded; nothing of it was committed"
			if r.TxnID != 0 {
				why += fmt.Sprintf(" (transaction %d is invalid)", r.TxnID)
			}
		case r.Status == RunWaiting && r.PlacedBy == node:
			if live := s.isLive(r.ID); live {
				continue
			}
			why = fmt.Sprintf("%s while the run waited for node %s; it never started", what, r.Node)
		default:
			continue
		}
		now := s.now().UTC()
		r.Status, r.End, r.Code, r.Error = RunAborted, &now, "aborted", errtext.Line(why)
		if err := s.saveRun(ctx, r); err != nil {
			return n, fmt.Errorf("adapters: marking run %s aborted: %w", r.ID, err)
		}
		n++
		s.log.Warn("run marked aborted", "run", r.ID, "adapter", r.Adapter, "node", r.Node, "why", why)
	}
	return n, nil
}

// committedBy returns the version run r committed, when its transaction
// (known from a checkpoint, runcheckpoint.go) is a kept version of its
// dataset made by r.
func (s *Service) committedBy(ctx context.Context, r RunRecord) (snapshot.VersionInfo, bool) {
	if r.TxnID == 0 {
		return snapshot.VersionInfo{}, false
	}
	vi, err := s.db.VersionInfo(ctx, r.Dataset, r.TxnID)
	if err != nil || vi.Source.RunID != r.ID {
		return snapshot.VersionInfo{}, false
	}
	return vi, true
}

// isLive reports whether run id runs (or waits) in this process, or ended
// here with its final record still to be saved (U1).
func (s *Service) isLive(id string) bool {
	if _, ok := s.unsaved.get(id); ok {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[id] != nil
}

// RunsInProgress returns how many runs this node is running (waiting ones
// not counted).
func (s *Service) RunsInProgress() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ar := range s.running {
		if ar.snapshot().Status == RunRunning {
			n++
		}
	}
	return n
}

// newRunID returns a run id that sorts by start time: "r" + 19-digit Unix
// nanoseconds + "-" + a 4-digit per-process sequence.
func (s *Service) newRunID(t time.Time) string {
	return fmt.Sprintf("r%019d-%04d", t.UnixNano(), s.runSeq.Add(1)%10000)
}
