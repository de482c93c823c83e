package adapters

import (
	"context"
	"errors"
	"time"
)

// The records of placement in the metadata table, written with the
// store's single-row conditional mutations (L1, L2): the fire record of an
// adapter, claimed by the node that fires a scheduled tick, and the
// rotation counter of a round-robin adapter.

// errNoConditionalRecords: this build's store offers no conditional
// single-row mutation yet, so a cluster cannot claim ticks nor rotate.
var errNoConditionalRecords = errors.New("adapters: conditional records are not available in this build")

// claimTick claims tick of adapter a for this node (L1).
func (s *Service) claimTick(ctx context.Context, a *adapterDef, tick time.Time) (bool, error) {
	return false, errNoConditionalRecords
}

// nextInRotation takes the next position of round-robin adapter a's
// rotation (L2).
func (s *Service) nextInRotation(ctx context.Context, a *adapterDef) (uint64, error) {
	return 0, errNoConditionalRecords
}
