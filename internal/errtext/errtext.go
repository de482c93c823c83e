// Package errtext words errors for the people who read them: API
// problems, the console, run records and the command line. The errors of
// snapstore's packages carry their package's name ("snapshot: row not
// found"), which says where an error comes from in the log but nothing to
// a user; sentinels keep it, and errors.Is matches them as before.
package errtext

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
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

// MaxLine bounds the bytes of a Line.
const MaxLine = 1024

// cutReserve is the room Line keeps for saying what it cut: its suffix
// is shorter.
const cutReserve = 80

// lineBreak is a run of line breaks and the blanks around them: the
// newlines of errors.Join, of a Java stack trace ("\n\tat ...") or of a
// Thrift exception's message.
var lineBreak = regexp.MustCompile(`[ \t]*(?:(?:\r\n|[\n\r\v\f\x{85}\x{2028}\x{2029}])[ \t]*)+`)

// Line returns msg as one line of at most MaxLine bytes, for a record a
// user lists (a run's error): each line break, with the blanks around it,
// becomes "; "; any other control character a space; and a longer text
// keeps its start, cut at a character's boundary, and says how many
// bytes were cut. Whoever records a Line logs the whole text.
func Line(msg string) string {
	if strings.IndexFunc(msg, unicode.IsControl) >= 0 || strings.ContainsAny(msg, "\u2028\u2029") {
		msg = strings.TrimSpace(msg)
		msg = lineBreak.ReplaceAllString(msg, "; ")
		msg = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, msg)
	}
	if len(msg) <= MaxLine {
		return msg
	}
	n := MaxLine - cutReserve
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return fmt.Sprintf("%s ... [%d more bytes cut; the whole text is in the log]", msg[:n], len(msg)-n)
}
