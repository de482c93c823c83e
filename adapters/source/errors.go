package source

import (
	"errors"
	"fmt"
)

// Errors of a source, after Prometheus's storage/interface.go: one
// documented block; check them with errors.Is. Texts begin with the
// package name callers know, adapters, and never contain a secret (N4).
var (
	// ErrNoKey: the source table has no usable row key (P3).
	ErrNoKey = errors.New("adapters: source table has no usable key")
	// ErrResourceNotFound: no such table or view through the connection.
	ErrResourceNotFound = errors.New("adapters: resource does not exist")
	// ErrSourceUnavailable: the source cannot serve: unreachable, timed
	// out, gone away mid-read, an unknown database, or (sqlite) a file that
	// is not a database.
	ErrSourceUnavailable = errors.New("adapters: source unavailable")
	// ErrSourceAuth: the source refused the credentials.
	ErrSourceAuth = errors.New("adapters: source refused the credentials")
	// ErrSourcePermission: the source refused the user a privilege a read
	// needs (SELECT on a table or a column, USAGE on a schema), after it
	// accepted the credentials: a grant, not the connection, to fix.
	ErrSourcePermission = errors.New("adapters: source refused a privilege")
	// ErrTableChanged: a table the run reads was replaced at the source
	// since the run's snapshot began (a TRUNCATE or ALTER on MySQL and
	// MariaDB, error 1412), so the snapshot cannot read it; nothing is
	// committed and the next run reads the table as it is then.
	ErrTableChanged = errors.New("adapters: source table changed under the run")
	// ErrUnsupportedType: a source column type docs/types.md does not map.
	ErrUnsupportedType = errors.New("adapters: unsupported column type")
	// ErrBadOption is wrapped by every *OptionError.
	ErrBadOption = errors.New("adapters: bad option")
)

// OptionError is a bad option value or an unknown option key. It wraps
// ErrBadOption; Key names the offending option (for example "port" or
// "options.port" as the caller prefixes it). Msg never contains a secret.
type OptionError struct {
	Key string
	Msg string
}

// Error names the key and the problem.
func (e *OptionError) Error() string { return fmt.Sprintf("adapters: option %q: %s", e.Key, e.Msg) }

// Unwrap returns ErrBadOption.
func (e *OptionError) Unwrap() error { return ErrBadOption }
