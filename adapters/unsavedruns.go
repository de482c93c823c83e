package adapters

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// Final run records that could not be saved.
//
// A run's final record (succeeded, failed, aborted, skipped) is written
// once, when the run ends. When the store does not answer then (an HBase
// outage, the usual reason a run fails), the record would stay "running"
// in the store until a restart marked it aborted, which is wrong twice. So
// a final record that could not be saved is kept in memory (unsavedRuns)
// and written again, with doubling backoff, until the store takes it; the
// stored record then ends right without a restart. Meanwhile the record in
// memory answers GetRun, WaitRun and the run lists on this node, as the
// live record does while a run runs (U1). Close makes a last try; a record
// still unsaved after it is lost with the process, and the next start
// settles the stored one (abandonRuns): succeeded when the run's
// transaction committed, else aborted.
//
//	U1 A final record that could not be saved is what this node answers
//	   for its run until a write of it succeeds; a later save of the same
//	   run replaces it in the queue, never the other way round.

// The backoff between tries of the unsaved records: it doubles from
// unsavedRetryMin to unsavedRetryMax, so a record is saved at most
// unsavedRetryMax after the store answers again.
const (
	unsavedRetryMin = 250 * time.Millisecond
	unsavedRetryMax = 4 * time.Second
	// unsavedSaveTimeout bounds one write of one record.
	unsavedSaveTimeout = 10 * time.Second
)

// unsavedRuns holds the final run records still to be saved, by run id,
// and drives the goroutine that saves them (drainUnsaved).
type unsavedRuns struct {
	mu   sync.Mutex
	recs map[string]RunRecord

	wake chan struct{} // a record was added; buffered 1
	stop chan struct{} // closed by stopDrain
	done chan struct{} // closed when drainUnsaved returned
}

func newUnsavedRuns() *unsavedRuns {
	return &unsavedRuns{recs: map[string]RunRecord{}, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// add queues rec, replacing an older record of the same run.
func (u *unsavedRuns) add(rec RunRecord) {
	u.mu.Lock()
	u.recs[rec.ID] = rec
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// get returns the queued record of run id.
func (u *unsavedRuns) get(id string) (RunRecord, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	r, ok := u.recs[id]
	return r, ok
}

// all returns the queued records, oldest run first.
func (u *unsavedRuns) all() []RunRecord {
	u.mu.Lock()
	out := make([]RunRecord, 0, len(u.recs))
	for _, r := range u.recs {
		out = append(out, r)
	}
	u.mu.Unlock()
	slices.SortFunc(out, func(a, b RunRecord) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// saved drops rec from the queue unless a newer record of its run
// replaced it meanwhile (U1).
func (u *unsavedRuns) saved(rec RunRecord) {
	u.mu.Lock()
	defer u.mu.Unlock()
	cur, ok := u.recs[rec.ID]
	sameEnd := ok && (cur.End == nil) == (rec.End == nil) && (cur.End == nil || cur.End.Equal(*rec.End))
	if sameEnd && cur.Status == rec.Status {
		delete(u.recs, rec.ID)
	}
}

// saveFinal saves the final record rec of a run; when the store does not
// take it, rec is queued and saved again until it does (U1).
func (s *Service) saveFinal(ctx context.Context, rec RunRecord) {
	if err := s.saveRun(ctx, rec); err != nil {
		s.unsaved.add(rec)
		s.log.Error("saving run record; keeping it in memory and saving it again until the store answers", "run", rec.ID, "adapter", rec.Adapter, "status", rec.Status, "err", err)
		return
	}
	s.pruneRuns(ctx, rec.Adapter)
}

// drainUnsaved saves the queued records, trying again with doubling
// backoff while the store does not answer, until stopDrain.
func (s *Service) drainUnsaved() {
	u := s.unsaved
	defer close(u.done)
	wait := unsavedRetryMin
	var retry <-chan time.Time
	for {
		select {
		case <-u.stop:
			return
		case <-u.wake:
			if retry == nil {
				retry = time.After(wait)
			}
			continue
		case <-retry:
		}
		retry = nil
		if s.saveUnsaved(context.Background()) {
			wait = unsavedRetryMin
			continue
		}
		retry = time.After(wait)
		wait = min(2*wait, unsavedRetryMax)
	}
}

// saveUnsaved tries to save every queued record, oldest first, and stops
// at the first the store does not take. It reports whether the queue was
// emptied.
func (s *Service) saveUnsaved(ctx context.Context) bool {
	for _, rec := range s.unsaved.all() {
		sctx, cancel := context.WithTimeout(ctx, unsavedSaveTimeout)
		err := s.saveRun(sctx, rec)
		if err == nil {
			s.unsaved.saved(rec)
			s.log.Info("run record saved after the store answered again", "run", rec.ID, "adapter", rec.Adapter, "status", rec.Status)
			s.pruneRuns(sctx, rec.Adapter)
		}
		cancel()
		if err != nil {
			s.log.Debug("saving run record again", "run", rec.ID, "err", err)
			return false
		}
	}
	return true
}

// stopDrain stops drainUnsaved, then makes a last try of the records still
// queued, bounded by ctx; those the store does not take are logged: the
// next start settles them (abandonRuns).
func (s *Service) stopDrain(ctx context.Context) {
	close(s.unsaved.stop)
	<-s.unsaved.done
	if s.saveUnsaved(ctx) {
		return
	}
	for _, rec := range s.unsaved.all() {
		s.log.Error("run record not saved before the process stopped; the next start marks it from the store", "run", rec.ID, "adapter", rec.Adapter, "status", rec.Status, "error", rec.Error)
	}
}
