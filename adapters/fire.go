package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// The records of placement in the metadata table, written with the
// store's single-row conditional mutations (L1, L2): the fire record of an
// adapter, which the node that fires a scheduled tick claims, and the
// rotation counter of a round-robin adapter.

// fireRecord is the stored fire record of an adapter: the last scheduled
// tick fired, by which node, and when it claimed it.
type fireRecord struct {
	Tick    time.Time `json:"tick"`
	Node    string    `json:"node"`
	Claimed time.Time `json:"claimed"`
	// Run is the id of the run the tick started, once placed: the next
	// tick finds it there and is skipped while it runs (C2), on whichever
	// node.
	Run string `json:"run,omitempty"`
}

// fireClaim is a tick claimed: the record as written, and the one before.
type fireClaim struct {
	raw  []byte
	rec  fireRecord
	prev fireRecord
}

// claimTick claims tick of adapter a for this node (L1) and reports
// whether it may fire it. The claim is a conditional write of the fire
// record from the value read: of two nodes that claim one tick, one
// writes and the other finds the record changed and reads it again. A
// tick is the one already fired when it falls within half a period of the
// fired one: the nodes' schedules need not be in phase (an @every
// schedule starts where each node started), so the same tick may carry
// different times on two nodes. After an error whose outcome is unknown
// (store.S9) the record is read: the claim holds if it is ours.
func (s *Service) claimTick(ctx context.Context, a *adapterDef, tick time.Time) (fireClaim, bool, error) {
	name := a.spec.Name
	period := time.Minute
	if a.sched != nil {
		first := a.sched.Next(tick.Add(-time.Nanosecond))
		if p := a.sched.Next(first).Sub(first); p > 0 {
			period = p
		}
	}
	for range 3 {
		old, err := s.db.GetRecord(ctx, recordFire, name)
		switch {
		case errors.Is(err, snapshot.ErrRecordNotFound):
			old = nil
		case err != nil:
			return fireClaim{}, false, err
		}
		var prev fireRecord
		if old != nil {
			if err := json.Unmarshal(old, &prev); err == nil && tick.Before(prev.Tick.Add(period/2)) {
				s.log.Debug("tick already fired", "adapter", name, "tick", tick, "fired", prev.Tick, "by", prev.Node)
				return fireClaim{}, false, nil
			}
		}
		c := fireClaim{rec: fireRecord{Tick: tick.UTC(), Node: s.self, Claimed: s.now().UTC()}, prev: prev}
		c.raw, _ = json.Marshal(c.rec)
		ok, err := s.db.CompareAndSetRecord(ctx, recordFire, name, old, c.raw)
		if err != nil {
			if cur, rerr := s.db.GetRecord(ctx, recordFire, name); rerr == nil && bytes.Equal(cur, c.raw) {
				return c, true, nil
			}
			return fireClaim{}, false, err
		}
		if ok {
			return c, true, nil
		}
	}
	return fireClaim{}, false, fmt.Errorf("adapters: the fire record of %q kept changing under three claims", name)
}

// previousRunGoing returns the run the previous tick of claim c started
// when it still runs or waits, on a node that is not gone (C2 across the
// cluster).
func (s *Service) previousRunGoing(ctx context.Context, c fireClaim) (RunRecord, bool) {
	if c.prev.Run == "" {
		return RunRecord{}, false
	}
	rec, err := s.GetRun(ctx, c.prev.Run)
	if err != nil || rec.Status.ended() {
		return RunRecord{}, false
	}
	if rec.Node != "" && rec.Node != s.self && s.cluster.Gone(rec.Node) {
		return RunRecord{}, false
	}
	return rec, true
}

// noteFired writes into the fire record that claim c started run id, when
// the record is still the claim: best effort, a later tick only misses
// the check of previousRunGoing without it.
func (s *Service) noteFired(ctx context.Context, a *adapterDef, c fireClaim, id string) {
	rec := c.rec
	rec.Run = id
	b, _ := json.Marshal(rec)
	if _, err := s.db.CompareAndSetRecord(ctx, recordFire, a.spec.Name, c.raw, b); err != nil {
		s.log.Debug("noting the run of a tick in the fire record", "adapter", a.spec.Name, "run", id, "err", err)
	}
}

// nextInRotation takes the next position of round-robin adapter a's
// rotation (L2): an increment of its counter, so that successive runs,
// placed by any node, take successive positions.
func (s *Service) nextInRotation(ctx context.Context, a *adapterDef) (uint64, error) {
	n, err := s.db.IncrementRecord(ctx, recordRotation, a.spec.Name, 1)
	if err != nil {
		return 0, err
	}
	return uint64(n - 1), nil
}
