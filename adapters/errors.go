package adapters

import (
	"errors"
)

// Errors of package adapters, after Prometheus's storage/interface.go: one
// documented block; check them with errors.Is. Texts begin with the package
// name and never contain a secret (N4).
var (
	// ErrConnectionNotFound: no data connection of that name (N2).
	ErrConnectionNotFound = errors.New("adapters: data connection does not exist")
	// ErrConnectionExists: create of a name already defined (either origin).
	ErrConnectionExists = errors.New("adapters: data connection already exists")
	// ErrConnectionReadOnly: replace or drop of a config-file connection.
	ErrConnectionReadOnly = errors.New("adapters: data connection is defined in the config file and read-only")
	// ErrConnectionInUse: drop of a connection adapters name, not forced
	// (N3); the message lists them.
	ErrConnectionInUse = errors.New("adapters: data connection is named by adapters")
	// ErrUnknownType: a connection type no connector is registered for.
	ErrUnknownType = errors.New("adapters: unknown connection type")
	// ErrAdapterNotFound: no adapter of that name.
	ErrAdapterNotFound = errors.New("adapters: adapter does not exist")
	// ErrAdapterExists: create of a name already defined (either origin).
	ErrAdapterExists = errors.New("adapters: adapter already exists")
	// ErrAdapterReadOnly: replace or delete of a config-file adapter.
	ErrAdapterReadOnly = errors.New("adapters: adapter is defined in the config file and read-only")
	// ErrRunNotFound: no run record of that id.
	ErrRunNotFound = errors.New("adapters: run does not exist")
	// ErrSchemaChanged fails a run whose source changed a table's columns
	// or key between the run's description of the table and its read (a
	// DDL that a source's catalog shows outside the run's snapshot).
	ErrSchemaChanged = errors.New("adapters: the source's schema changed during the run")
	// ErrRunInProgress: a run of the adapter is already going; two runs of
	// one adapter never overlap. Retry after it ends.
	ErrRunInProgress = errors.New("adapters: a run of this adapter is already in progress")
	// ErrBadSchedule: a cron spec robfig/cron/v3 refuses, or one that
	// never fires.
	ErrBadSchedule = errors.New("adapters: bad cron schedule")
	// ErrSecretKeyMissing: a literal secret to store and no key to
	// encrypt it with (secretbox.go, K4): the server shares its store and
	// has no secrets.key_file.
	ErrSecretKeyMissing = errors.New("adapters: no key to encrypt secrets at rest")
	// ErrSecretKeyUnknown: a stored secret encrypted with a key that is
	// not configured (K2); the message names the connection and the
	// key's id.
	ErrSecretKeyUnknown = errors.New("adapters: stored secret encrypted with a key that is not configured")
	// ErrSecretUnreadable: a stored secret that does not decrypt with the
	// key it names: moved from another connection or option, or altered
	// (K1).
	ErrSecretUnreadable = errors.New("adapters: stored secret does not decrypt")
	// ErrShuttingDown: the Service is closing; runs it cancels end aborted.
	ErrShuttingDown = errors.New("adapters: shutting down")
	// ErrDatasetTaken: another adapter already writes the dataset (A1);
	// the message names that adapter.
	ErrDatasetTaken = errors.New("adapters: dataset is written by another adapter")
	// ErrStrategyNotSupported: a run of an adapter whose strategy this
	// version cannot run (partition-by-key, L4); nothing was started.
	ErrStrategyNotSupported = errors.New("adapters: strategy not supported yet")
	// ErrNodeDraining: this node is draining and takes no new run (L6);
	// ask another node of the cluster.
	ErrNodeDraining = errors.New("adapters: this node is draining and takes no new run")
	// ErrNodeUnreachable: the node a run was placed on cannot take it
	// (it does not answer, is stopping or draining; L2, L3), or the node
	// running it failed before it ended.
	ErrNodeUnreachable = errors.New("adapters: node cannot be reached")
	// ErrNodeFailed: a node that a run depends on is gone for good: it was
	// confirmed failed or forgotten while it ran the run (ended by a
	// survivor, noderuns.go), or it owned partitions of a partitioned run
	// and was forgotten, or failed and its partitions moved.
	ErrNodeFailed = errors.New("adapters: node failed")
)

// optionErrorIs returns oe marked with a package sentinel: its text is
// oe's, errors.As finds the *OptionError and errors.Is the sentinel (so a
// bad schedule is both ErrBadOption naming the key and ErrBadSchedule).
func optionErrorIs(oe *OptionError, sentinel error) error {
	return &markedOptionError{oe: oe, sentinel: sentinel}
}

// markedOptionError is an *OptionError that also matches a sentinel.
type markedOptionError struct {
	oe       *OptionError
	sentinel error
}

func (e *markedOptionError) Error() string { return e.oe.Error() }

func (e *markedOptionError) Unwrap() []error { return []error{e.oe, e.sentinel} }

// splitErrors flattens an errors.Join tree into its problems, keeping a
// sentinel-marked *OptionError whole.
func splitErrors(err error) []error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*markedOptionError); ok {
		return []error{err}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, splitErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// prefixOptionErrors prefixes the Key of every *OptionError in a joined
// error.
func prefixOptionErrors(prefix string, err error) error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if m, ok := e.(*markedOptionError); ok {
			out = append(out, optionErrorIs(&OptionError{Key: prefix + m.oe.Key, Msg: m.oe.Msg}, m.sentinel))
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if oe, ok := e.(*OptionError); ok {
			out = append(out, &OptionError{Key: prefix + oe.Key, Msg: oe.Msg})
			return
		}
		out = append(out, e)
	}
	walk(err)
	return errors.Join(out...)
}
