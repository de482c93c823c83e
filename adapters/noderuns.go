package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snapstore/snapstore/internal/errtext"
	"github.com/snapstore/snapstore/snapshot"
)

// The runs of a node that will not end them: a node of the cluster
// confirmed failed (cluster.confirm_failure) or forgotten. One survivor
// ends them (package placement picks it, and Forget's node for a forget):
// each run record it finds running on that node, and each waiting run
// that node placed, is rewritten ended with a conditional write from the
// value read (store.S7), so that two survivors never both end one run and
// a run that ended meanwhile, or whose node wrote its record again, is
// left as its node wrote it. The dataset's writer slot is not touched: it
// expires with its lease (storage.hbase.writer_slot_lease), and the next
// run of the dataset then takes it and makes the dead run's transaction
// invalid.

// codeNodeFailed is the Code of a run ended by a survivor.
const codeNodeFailed = "node_failed"

// AbandonNodeRuns ends the runs that node, forgotten, was running and the
// waiting runs it placed (EndNodeRuns), and returns how many it ended.
func (s *Service) AbandonNodeRuns(ctx context.Context, node string) (int, error) {
	return s.EndNodeRuns(ctx, node, "was forgotten")
}

// EndNodeRuns ends the runs recorded running on node, another node that
// will not end them, and the waiting runs node placed: aborted, code
// node_failed, the error naming node, what happened to it ("was
// confirmed failed") and this node; a run whose transaction is a
// committed version of its dataset made by that run is recorded
// succeeded instead (only its final record was lost). Each record is
// rewritten only if it still holds what was read (see above). It returns
// how many it ended.
func (s *Service) EndNodeRuns(ctx context.Context, node, what string) (int, error) {
	if node == "" || node == s.self {
		return 0, fmt.Errorf("adapters: ending the runs of node %q: not another node", node)
	}
	recs, err := s.db.ListRecords(ctx, recordRun)
	if err != nil {
		return 0, fmt.Errorf("adapters: listing runs: %w", err)
	}
	n := 0
	var errs []error
	for _, raw := range recs {
		var r RunRecord
		if err := json.Unmarshal(raw.Value, &r); err != nil {
			continue
		}
		var why string
		switch {
		case r.Status == RunRunning && r.Node == node:
			if vi, ok := s.committedBy(ctx, r); ok {
				end := vi.CommittedAt
				r.Status, r.End, r.Version, r.Stats, r.Code, r.Error = RunSucceeded, &end, vi.Version, vi.Stats, "", ""
				endPhases(r.Phases, end)
				ok, err := s.endRun(ctx, raw.Value, r)
				if err != nil {
					errs = append(errs, err)
				} else if ok {
					n++
					s.log.Warn("run of another node marked succeeded from its committed version", "run", r.ID, "adapter", r.Adapter, "node", node, "version", vi.Version)
				}
				continue
			}
			why = fmt.Sprintf("%s: node %s %s while the run was in progress; nothing of it was committed", ErrNodeFailed.Error(), node, what)
			if r.TxnID != 0 {
				why += fmt.Sprintf(" (transaction %d is made invalid by the next run of the dataset)", r.TxnID)
			}
		case r.Status == RunWaiting && r.PlacedBy == node:
			if s.isLive(r.ID) {
				continue
			}
			why = fmt.Sprintf("%s: node %s, which placed the run, %s while the run waited for node %s; it never started", ErrNodeFailed.Error(), node, what, r.Node)
		default:
			continue
		}
		now := s.now().UTC()
		r.Status, r.End, r.Code, r.Error = RunAborted, &now, codeNodeFailed, errtext.Line(why+"; ended by node "+s.self)
		endPhases(r.Phases, now)
		ok, err := s.endRun(ctx, raw.Value, r)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			n++
			s.log.Warn("run of a node gone for good ended", "run", r.ID, "adapter", r.Adapter, "dataset", r.Dataset, "node", node, "code", codeNodeFailed, "why", why)
		}
	}
	return n, errors.Join(errs...)
}

// endRun writes r, ended, over the stored record old, if the record still
// holds old; it reports whether it wrote. After an error of unknown
// outcome (store.S9) the record is read: the write holds if it landed.
func (s *Service) endRun(ctx context.Context, old []byte, r RunRecord) (bool, error) {
	r.Progress = nil
	b, err := json.Marshal(r)
	if err != nil {
		return false, err
	}
	ok, err := s.db.CompareAndSetRecord(ctx, recordRun, r.ID, old, b)
	if err != nil {
		if cur, rerr := s.db.GetRecord(ctx, recordRun, r.ID); rerr == nil && bytes.Equal(cur, b) {
			return true, nil
		}
		if errors.Is(err, snapshot.ErrRecordNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("adapters: ending run %s: %w", r.ID, err)
	}
	return ok, nil
}
