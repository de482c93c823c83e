package snapshot

import (
	"errors"
	"time"
)

// crashDB stops what a DB does in the background without writing.
func crashDB(db *DB) { db.crash() }

// withSlotLease sets the lease of the DB's writer slots.
func withSlotLease(o Options, d time.Duration) Options { o.SlotLease = d; return o }

// idBlock sets a small block of transaction ids and returns it.
func idBlock(o *Options) int { o.idBlock = 4; return 4 }

// outcomeUnknown reports whether a Commit error leaves it unknown whether
// the run committed.
func outcomeUnknown(err error) bool { return errors.Is(err, ErrOutcomeUnknown) }
