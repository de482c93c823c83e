package notify

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
)

// A dataset is stale when its adapter is scheduled and has had no
// succeeded (or verified) run for StaleAfter periods of its schedule
// (adapters.SchedulePeriod) since its last one, or, never having had one,
// since it was created or this process started, whichever is later. The
// stale loop of the node that owns the adapter (N2) marks it with a
// record "notify.stale" set by check-and-set, so that one stale event is
// sent per episode, cluster-wide and across restarts; the node of the next
// succeeded run clears it the same way and sends recovered.

// staleRecord is the record kind of the stale marks, by adapter name.
const staleRecord = "notify.stale"

// staleMark is the value of a stale mark.
type staleMark struct {
	Since time.Time `json:"since"`
}

// staleLoop checks the adapters this node owns every StaleInterval.
func (n *Notifier) staleLoop() {
	defer n.wg.Done()
	if n.db.ReadOnly() {
		return // it runs nothing: the writer process watches
	}
	t := time.NewTicker(n.o.StaleInterval)
	defer t.Stop()
	for {
		n.checkStale(n.ctx)
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkStale looks at every scheduled adapter this node owns once.
func (n *Notifier) checkStale(ctx context.Context) {
	n.mu.Lock()
	svc, owns, since := n.svc, n.owns, n.since
	n.mu.Unlock()
	var mine []adapters.Adapter
	for _, a := range svc.ListAdapters() {
		if a.Schedule != "" && a.Status == "active" && (owns == nil || owns(a.Name)) {
			mine = append(mine, a)
		}
	}
	if len(mine) == 0 {
		return
	}
	// One read of the run records for all: the end of each adapter's
	// last succeeded run.
	runs, err := svc.ListRuns(ctx, "", math.MaxInt32)
	if err != nil {
		n.log.Warn("reading the runs", "err", err)
		return
	}
	last := map[string]time.Time{}
	for _, r := range runs { // newest first
		if _, ok := last[r.Adapter]; !ok && r.Status == adapters.RunSucceeded && r.End != nil {
			last[r.Adapter] = *r.End
		}
	}
	for _, a := range mine {
		if ctx.Err() != nil {
			return
		}
		n.checkAdapter(ctx, a, last[a.Name], since)
	}
}

// checkAdapter marks the dataset of adapter a stale, sending the event,
// when it is; last is the end of its last succeeded run (zero: none).
func (n *Notifier) checkAdapter(ctx context.Context, a adapters.Adapter, last, since time.Time) {
	base := last
	if base.IsZero() {
		base = since
		if a.CreatedAt.After(base) {
			base = a.CreatedAt
		}
	}
	period, err := adapters.SchedulePeriod(a.Schedule, base)
	if err != nil || period <= 0 {
		return
	}
	now := n.now()
	if !now.After(base.Add(time.Duration(n.o.StaleAfter) * period)) {
		n.clearMissed(ctx, a, last, now)
		return
	}
	mark, _ := json.Marshal(staleMark{Since: now.UTC()})
	set, err := n.db.CompareAndSetRecord(ctx, staleRecord, a.Name, nil, mark)
	if err != nil {
		n.log.Warn("marking a dataset stale", "adapter", a.Name, "err", err)
		return
	}
	if !set {
		return // marked already: its event went out
	}
	n.log.Warn("dataset stale", "adapter", a.Name, "dataset", a.Dataset, "last_success", last, "schedule", a.Schedule)
	ev := Event{Event: EventStale, Adapter: a.Name, Dataset: a.Dataset, Schedule: a.Schedule, StaleAfter: n.o.StaleAfter}
	if !last.IsZero() {
		ev.LastSuccessAt = &last
	}
	n.publish(ev)
}

// clearMissed clears the stale mark of adapter a that a succeeded run
// ending at last did not clear (its node stopped before it could, or
// dropped the event), and sends the recovered event in its stead. It
// leaves a mark alone for two StaleIntervals after the run, the time the
// run's node has to clear it.
func (n *Notifier) clearMissed(ctx context.Context, a adapters.Adapter, last, now time.Time) {
	if last.IsZero() || now.Sub(last) < 2*n.o.StaleInterval {
		return
	}
	old, err := n.db.GetRecord(ctx, staleRecord, a.Name)
	if err != nil {
		return // none, or unreadable: the next look sees it
	}
	var m staleMark
	if json.Unmarshal(old, &m) != nil || !last.After(m.Since) {
		return
	}
	if ok, err := n.db.CompareAndSetRecord(ctx, staleRecord, a.Name, old, nil); err != nil || !ok {
		return
	}
	n.publish(Event{Event: EventRecovered, Adapter: a.Name, Dataset: a.Dataset, LastSuccessAt: &last})
}

// clearStale removes the stale mark of adapter and reports whether there
// was one (and this call removed it).
func (n *Notifier) clearStale(ctx context.Context, adapter string) bool {
	old, err := n.db.GetRecord(ctx, staleRecord, adapter)
	if errors.Is(err, snapshot.ErrRecordNotFound) {
		return false
	}
	if err == nil {
		var ok bool
		if ok, err = n.db.CompareAndSetRecord(ctx, staleRecord, adapter, old, nil); err == nil {
			return ok
		}
	}
	n.log.Warn("clearing the stale mark of a dataset", "adapter", adapter, "err", err)
	return false
}

// trimInterval is how often the delivery log's retention is applied.
const trimInterval = time.Hour

// trimLoop applies the delivery log's retention now and every
// trimInterval until Close. Every node trims: a delete of a deleted
// entry is a no-op (snapshot.DB.TrimJournal).
func (n *Notifier) trimLoop() {
	defer n.wg.Done()
	t := time.NewTicker(trimInterval)
	defer t.Stop()
	for {
		cut := n.now().Add(-n.o.Retention)
		if k, err := n.db.TrimJournal(n.ctx, deliveryJournal, cut); err != nil && n.ctx.Err() == nil {
			n.log.Warn("delivery log retention", "err", err)
		} else if k > 0 {
			n.log.Info("delivery log retention", "removed", k, "before", cut.UTC().Format(time.RFC3339))
		}
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
	}
}
