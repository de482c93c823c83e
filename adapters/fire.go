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
func (s *Service) claimTick(ctx context.Context, a *adapterDef, tick time.Time) (bool, error) {
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
			return false, err
		}
		if old != nil {
			var prev fireRecord
			if err := json.Unmarshal(old, &prev); err == nil && tick.Before(prev.Tick.Add(period/2)) {
				s.log.Debug("tick already fired", "adapter", name, "tick", tick, "fired", prev.Tick, "by", prev.Node)
				return false, nil
			}
		}
		rec, _ := json.Marshal(fireRecord{Tick: tick.UTC(), Node: s.self, Claimed: s.now().UTC()})
		ok, err := s.db.CompareAndSetRecord(ctx, recordFire, name, old, rec)
		if err != nil {
			if cur, rerr := s.db.GetRecord(ctx, recordFire, name); rerr == nil && bytes.Equal(cur, rec) {
				return true, nil
			}
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, fmt.Errorf("adapters: the fire record of %q kept changing under three claims", name)
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
