package txn

import "errors"

// Errors of package txn; check with errors.Is.
var (
	// ErrUnknownTxn is returned by State.Commit and State.Abort for an id
	// that is not in progress (never begun, already committed or aborted).
	ErrUnknownTxn = errors.New("txn: transaction not in progress")
	// ErrInvalidArgument is returned for bad input: a non-positive id, an
	// id begun twice.
	ErrInvalidArgument = errors.New("txn: invalid argument")
	// ErrCorrupt is returned when persisted state cannot be decoded.
	ErrCorrupt = errors.New("txn: corrupt state")
	// ErrReadOnly is returned by IDs.Next of IDs opened with
	// IDOptions.ReadOnly.
	ErrReadOnly = errors.New("txn: read-only")
)
