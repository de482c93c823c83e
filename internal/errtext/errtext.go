// Package errtext words errors for the people who read them: API
// problems, the console, run records and the command line. The errors of
// snapstore's packages carry their package's name ("snapshot: row not
// found"), which says where an error comes from in the log but nothing to
// a user; sentinels keep it, and errors.Is matches them as before.
package errtext

import (
	"regexp"
	"strings"
)

// packagePrefix is a snapstore package's name before an error text, at its
// start or after what joins wrapped errors (": ", "(", "; ", and the
// newline of errors.Join). The storage backends (hbase, pebble) keep
// theirs: they say which store answered.
var packagePrefix = regexp.MustCompile(`(^|: |\(|; |\n)(?:snapshot|adapters|server|store|txn|cluster|transfer|records): `)

// Text returns err's message without snapstore's package prefixes: the
// text a user sees. A nil error is "".
func Text(err error) string {
	if err == nil {
		return ""
	}
	return Clean(err.Error())
}

// Clean drops snapstore's package prefixes from an error text.
func Clean(msg string) string {
	if !strings.Contains(msg, ": ") {
		return msg
	}
	for {
		// Again until nothing changes: a prefix right after another one
		// ("snapshot: store: closed") follows a boundary the first
		// match took.
		out := packagePrefix.ReplaceAllString(msg, "$1")
		if out == msg {
			return out
		}
		msg = out
	}
}
