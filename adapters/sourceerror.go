package adapters

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// sourceAddr names the server behind a data connection in errors: the
// connection, its type and where it points.
type sourceAddr struct {
	Connection string // the data connection's name
	Type       string // mysql, postgres, sqlite
	Addr       string // host:port, a unix socket or a file path
	// ConnectTimeout bounds opening one connection (connect_timeout); 0
	// when the type has none (sqlite).
	ConnectTimeout time.Duration
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
	sourceAddr
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
	detail := driverDetail(e.Err)
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

// newSourceError builds the SourceError of a failed connect through a,
// with the cause a connector's classification gave. A cancelled ctx
// (shutdown, a client gone) is not the source's fault: err comes back as
// it is. A deadline of ctx is a timeout whose bound the caller knows
// (withBound).
func newSourceError(ctx context.Context, a sourceAddr, cause string, err error) error {
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
	e := &SourceError{sourceAddr: a, Cause: cause, Err: err}
	var ct *connectTimeoutError
	switch {
	case errors.As(err, &ct):
		e.Cause, e.Timeout, e.Bound = "timeout", ct.timeout, "connect_timeout"
	case ctx.Err() != nil:
		e.Cause = "timeout"
	case cause == "timeout" && a.ConnectTimeout > 0:
		// The driver's own bound on opening a connection.
		e.Timeout, e.Bound = a.ConnectTimeout, "connect_timeout"
	}
	return e
}

// withBound completes a timeout SourceError in err whose bound was ctx's
// deadline: d and what set it ("the resource check"). Other errors come
// back as they are.
func withBound(err error, d time.Duration, bound string) error {
	var se *SourceError
	if errors.As(err, &se) && se.Cause == "timeout" && se.Timeout == 0 {
		se.Timeout, se.Bound = d, bound
	}
	return err
}

// connectTimeoutError is a connect that the connector's own bound
// (connect_timeout) ended.
type connectTimeoutError struct {
	timeout time.Duration
	err     error
}

func (e *connectTimeoutError) Error() string {
	return fmt.Sprintf("no answer within %s (connect_timeout): %v", e.timeout, e.err)
}

func (e *connectTimeoutError) Unwrap() error { return e.err }

// Timeout marks the error as a timeout for net.Error checks.
func (e *connectTimeoutError) Timeout() bool { return true }

// driverDetail is the part of a driver's connect error worth showing after
// the cause: the server's own message when it answered, else the system
// error without the address the SourceError already names ("connection
// refused", not "dial tcp 10.0.0.7:3306: connect: connection refused"). A
// multi-line error (pgx lists each attempt, TLS then plain) keeps its last
// line.
func driverDetail(err error) string {
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
	if sm, ok := serverMessage(err); ok {
		return sm
	}
	msg := strings.TrimSpace(err.Error())
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[i+1:])
	}
	return msg
}

// serverMessage returns the message of a server's error in err's chain
// (MySQL's, PostgreSQL's), as the driver renders it.
func serverMessage(err error) (string, bool) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Error(), true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Error(), true
	}
	return "", false
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
