package store

import "errors"

// Errors returned by stores. Check them with errors.Is; backends wrap them
// with what was being done.
var (
	// ErrNotFound is returned when a named table does not exist where it must.
	ErrNotFound = errors.New("store: not found")
	// ErrClosed is returned by every call on a Store or Iterator after Close.
	ErrClosed = errors.New("store: closed")
	// ErrInvalidArgument is returned for caller input the store cannot take:
	// an empty table name or row key, an inverted time range, a negative
	// timestamp. It is never worth retrying.
	ErrInvalidArgument = errors.New("store: invalid argument")
	// ErrUnavailable is returned when a remote backend (HBase) cannot be
	// reached or timed out. The write that failed with it may or may not
	// have been applied, wholly or (Apply on store/hbase) row by row (S1),
	// and may still be applied later (S9). Repeating an Apply or MutateRow is
	// safe because every mutation is idempotent (S4); a CheckAndMutate or
	// Increment is not to be repeated blindly: read first.
	ErrUnavailable = errors.New("store: backend unavailable")
)
