package hbase

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/snapstore/snapstore/store"
)

// Errors of the HBase backend, besides the store sentinels it wraps
// (store.ErrUnavailable, store.ErrClosed, store.ErrInvalidArgument). Check
// them with errors.Is.
var (
	// ErrServer is returned when HBase refused an operation for a reason
	// that retrying does not fix: a TIOError the Thrift2 gateway marks as
	// not retryable (HBase's DoNotRetryIOException, such as a row key over
	// 32767 bytes), a TIllegalArgument, or a Thrift application exception.
	// The text carries HBase's message.
	ErrServer = errors.New("hbase: server error")
	// ErrIncompatibleTable is returned by Open when the HBase table exists
	// with a column family whose settings would lose versions behind the
	// store's back (TTL, VERSIONS, MIN_VERSIONS, KEEP_DELETED_CELLS,
	// NEW_VERSION_BEHAVIOR; see the package doc). The text names the
	// setting.
	ErrIncompatibleTable = errors.New("hbase: incompatible table")
)

// maxMessage bounds how much of HBase's exception text goes into an error;
// HBase puts whole stack traces there.
const maxMessage = 400

func clip(s string) string {
	if len(s) > maxMessage {
		return s[:maxMessage] + "..."
	}
	return s
}

// classify wraps err, from a pool call doing what, with the sentinel a
// caller checks: store.ErrUnavailable for what retrying may fix (the
// gateway or HBase unreachable, timed out, or a retryable TIOError),
// ErrServer for the rest; context errors and store.ErrClosed stay as they
// are.
func classify(what string, err error) error {
	var (
		ioe *tIOError
		iae *tIllegalArgument
		tae thrift.TApplicationException
	)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, store.ErrClosed):
		return fmt.Errorf("hbase: %s: %w", what, err)
	case errors.Is(err, store.ErrUnavailable):
		return fmt.Errorf("hbase: %s: %w", what, err)
	case errors.Is(err, errBrokenConn):
		return fmt.Errorf("hbase: %s: %w: %s", what, store.ErrUnavailable, clip(err.Error()))
	case errors.As(err, &ioe):
		if ioe.canRetry {
			return fmt.Errorf("hbase: %s: %w: %s", what, store.ErrUnavailable, clip(ioe.message))
		}
		return fmt.Errorf("%w: %s: %s", ErrServer, what, clip(ioe.message))
	case errors.As(err, &iae):
		return fmt.Errorf("%w: %s: illegal argument: %s", ErrServer, what, clip(iae.message))
	case errors.As(err, &tae):
		return fmt.Errorf("%w: %s: %s", ErrServer, what, clip(tae.Error()))
	}
	return fmt.Errorf("hbase: %s: %w", what, err)
}
