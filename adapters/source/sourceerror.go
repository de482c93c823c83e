package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"
)

// SourceAddr names the server behind a data connection in errors: the
// connection, its type and where it points.
type SourceAddr struct {
	Connection string // the data connection's name
	Type       string // mysql, postgres, sqlite, snapstore
	Addr       string // host:port, a unix socket or a file path
	// ConnectTimeout bounds opening one connection (connect_timeout); 0
	// when the type has none (sqlite).
	ConnectTimeout time.Duration
	// ServerMessage, when set, finds a server's error in an error's chain
	// and returns its message as the driver renders it (MySQL's,
	// PostgreSQL's).
	ServerMessage func(err error) (string, bool)
}

// SourceError is a failure to connect to a data connection's source, or
// to be let in: which connection, which server, why, and, for a timeout,
// the bound that passed. Its text says each once:
//
//	data connection "shop" (mysql at db1:3306): no answer within 10s (connect_timeout)
//	data connection "shop" (mysql at db1:3306): the server refused the credentials: Error 1045 (28000): Access denied for user 'etl'@'10.0.0.7' (using password: YES)
//	data connection "shop" (mysql at db1:3306): cannot connect: connection refused
//
// errors.Is finds ErrSourceAuth (Cause "auth"), ErrBadOption (Cause
// "config": TLS settings the server refuses) or ErrSourceUnavailable
// (every other cause) and the driver's error; the text never holds a
// secret (the driver's error is scrubbed before it is kept).
type SourceError struct {
	SourceAddr
	// Cause is a TestResult cause: "auth", "unreachable", "timeout",
	// "unknown_database", "config" or "error".
	Cause string
	// Timeout is the bound that passed, with Cause "timeout"; 0 when
	// unknown. Bound names it ("connect_timeout").
	Timeout time.Duration
	Bound   string
	// Err is the driver's error, scrubbed.
	Err error
}

func (e *SourceError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "data connection %q (%s at %s): ", e.Connection, e.Type, e.Addr)
	detail := driverDetail(e.Err, e.ServerMessage)
	switch e.Cause {
	case "auth":
		b.WriteString("the server refused the credentials")
	case "unknown_database":
		b.WriteString("no such database")
	case "timeout":
		b.WriteString("no answer")
		if e.Timeout > 0 {
			fmt.Fprintf(&b, " within %s", e.Timeout)
		}
		if e.Bound != "" {
			fmt.Fprintf(&b, " (%s)", e.Bound)
		}
		if timeoutText(detail) {
			detail = "" // says again what the line already says
		}
	case "unreachable":
		if e.Type == "sqlite" {
			b.WriteString("cannot open the file")
		} else {
			b.WriteString("cannot connect")
		}
	case "config":
		b.WriteString("the connection's settings do not fit the server")
	default:
		b.WriteString("cannot use the source")
	}
	if detail != "" {
		b.WriteString(": ")
		b.WriteString(detail)
	}
	return b.String()
}

// Unwrap returns the sentinel of the cause and the driver's error.
func (e *SourceError) Unwrap() []error {
	sentinel := ErrSourceUnavailable
	switch e.Cause {
	case "auth":
		sentinel = ErrSourceAuth
	case "config":
		sentinel = ErrBadOption // TLS settings the server refuses, ...
	}
	return []error{sentinel, e.Err}
}

// NewSourceError builds the SourceError of a failed connect through a,
// with the cause a connector's classification gave. A cancelled ctx
// (shutdown, a client gone) is not the source's fault: err comes back as
// it is. A deadline of ctx is a timeout whose bound the caller knows
// (WithBound).
func NewSourceError(ctx context.Context, a SourceAddr, cause string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	var se *SourceError
	if errors.As(err, &se) {
		return err
	}
	e := &SourceError{SourceAddr: a, Cause: cause, Err: err}
	var ct *ConnectTimeoutError
	switch {
	case errors.As(err, &ct):
		e.Cause, e.Timeout, e.Bound = "timeout", ct.Bound, "connect_timeout"
	case ctx.Err() != nil:
		e.Cause = "timeout"
	case cause == "timeout" && a.ConnectTimeout > 0:
		// The driver's own bound on opening a connection.
		e.Timeout, e.Bound = a.ConnectTimeout, "connect_timeout"
	}
	return e
}

// WithBound completes a timeout SourceError in err whose bound was ctx's
// deadline: d and what set it ("the resource check"). Other errors come
// back as they are.
func WithBound(err error, d time.Duration, bound string) error {
	var se *SourceError
	if errors.As(err, &se) && se.Cause == "timeout" && se.Timeout == 0 {
		se.Timeout, se.Bound = d, bound
	}
	return err
}

// ConnectTimeoutError is a connect that the connector's own bound
// (connect_timeout) ended.
type ConnectTimeoutError struct {
	Bound time.Duration // connect_timeout
	Err   error
}

func (e *ConnectTimeoutError) Error() string {
	return fmt.Sprintf("no answer within %s (connect_timeout): %v", e.Bound, e.Err)
}

func (e *ConnectTimeoutError) Unwrap() error { return e.Err }

// Timeout marks the error as a timeout for net.Error checks.
func (e *ConnectTimeoutError) Timeout() bool { return true }

// driverDetail is the part of a driver's connect error worth showing after
// the cause: the server's own message when it answered, else the system
// error without the address the SourceError already names ("connection
// refused", not "dial tcp 10.0.0.7:3306: connect: connection refused"). A
// multi-line error (pgx lists each attempt, TLS then plain) keeps its last
// line.
func driverDetail(err error, serverMessage func(error) (string, bool)) string {
	if err == nil {
		return ""
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		if de.IsNotFound {
			return fmt.Sprintf("host name %q not found", de.Name)
		}
		return "looking up " + de.Name + ": " + de.Err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	if serverMessage == nil {
		serverMessage = func(error) (string, bool) { return "", false }
	}
	if sm, ok := serverMessage(err); ok {
		return sm
	}
	msg := strings.TrimSpace(err.Error())
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[i+1:])
	}
	return msg
}

// timeoutText reports whether a driver detail only says that time ran out.
func timeoutText(s string) bool {
	switch {
	case s == "", s == context.DeadlineExceeded.Error(), s == "invalid connection", s == "i/o timeout":
		return true
	case strings.HasSuffix(s, "i/o timeout"), strings.HasSuffix(s, context.DeadlineExceeded.Error()):
		return true
	}
	return false
}
