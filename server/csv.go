package server

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/snapstore/snapstore/snapshot"
)

// CSV rows, as RFC 4180 writes them and as PostgreSQL's COPY ... CSV
// tells NULL from the empty string: NULL is an empty field, an empty
// string a quoted one (""). encoding/csv writes both as an empty field
// and has no way to quote one field, so the answer's records are written
// here; every other field is quoted exactly when encoding/csv would quote
// it (a comma, a quote, a line break, a leading space, or PostgreSQL's
// end-of-data marker \.), so that a reader of either convention reads the
// same values. Records end with "\n", as encoding/csv's do by default.

// appendCSVRecord appends one record of fields: each value's text
// (ValueText), NULL as an empty field.
func appendCSVRecord(dst []byte, values []snapshot.Value) []byte {
	for i, v := range values {
		if i > 0 {
			dst = append(dst, ',')
		}
		if v.Kind == snapshot.KindNull {
			continue
		}
		dst = appendCSVField(dst, ValueText(v))
	}
	return append(dst, '\n')
}

// appendCSVHeader appends the header record: the column names.
func appendCSVHeader(dst []byte, names []string) []byte {
	for i, n := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendCSVField(dst, n)
	}
	return append(dst, '\n')
}

// appendCSVField appends s as one field, quoted when it is empty or when
// csvNeedsQuotes, its quotes doubled.
func appendCSVField(dst []byte, s string) []byte {
	if s != "" && !csvNeedsQuotes(s) {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		dst = append(dst, s[:i+1]...)
		dst = append(dst, '"')
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, '"')
}

// csvNeedsQuotes reports whether a non-empty field must be quoted: by
// encoding/csv's rule (Writer.fieldNeedsQuotes) with a comma delimiter.
func csvNeedsQuotes(s string) bool {
	if s == `\.` {
		return true
	}
	if strings.ContainsAny(s, "\",\r\n") {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}
