package server

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/snapstore/snapstore/snapshot"
)

// Rows and values are written in JSON by snapshot's Value.AppendJSON and
// Row.AppendJSON (the forms documented on snapshot.Kind); this file adds the
// key array, the CSV text form and plain strings.

// ValueText returns v as one CSV field: decimal digits for numbers, the
// text for text, decimal, temporal and JSON kinds, standard base64 for bytes
// and geometry, and "" for NULL (CSV cannot tell NULL from an empty string;
// use JSON or NDJSON when that matters).
func ValueText(v snapshot.Value) string {
	switch v.Kind {
	case snapshot.KindNull:
		return ""
	case snapshot.KindInt:
		return strconv.FormatInt(v.Int, 10)
	case snapshot.KindUint:
		return strconv.FormatUint(v.Uint, 10)
	case snapshot.KindFloat:
		switch {
		case math.IsNaN(v.Float):
			return "NaN"
		case math.IsInf(v.Float, 1):
			return "+Inf"
		case math.IsInf(v.Float, -1):
			return "-Inf"
		}
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	}
	return v.String()
}

// AppendRowJSON appends row as one JSON object mapping column names to
// values in the row's column order (snapshot.Row.AppendJSON).
func AppendRowJSON(dst []byte, row snapshot.Row) []byte { return row.AppendJSON(dst) }

// appendKeyJSON appends key as a JSON array of values.
func appendKeyJSON(dst []byte, key []snapshot.Value) []byte {
	dst = append(dst, '[')
	for i, v := range key {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = v.AppendJSON(dst)
	}
	return append(dst, ']')
}

// appendChangeJSON appends one line of a diff (without its newline):
// {"op":..., "key":[...], "before":{...}, "after":{...}}, before absent for
// an insert and after for a delete.
func appendChangeJSON(dst []byte, ch snapshot.Change) []byte {
	dst = append(dst, `{"op":`...)
	dst = appendJSONString(dst, string(ch.Op))
	dst = append(dst, `,"key":`...)
	dst = appendKeyJSON(dst, ch.Key)
	if ch.Before != nil {
		dst = append(dst, `,"before":`...)
		dst = ch.Before.AppendJSON(dst)
	}
	if ch.After != nil {
		dst = append(dst, `,"after":`...)
		dst = ch.After.AppendJSON(dst)
	}
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string, byte for byte as
// encoding/json writes it: HTML-safe (<, > and & escaped), invalid UTF-8 as
// \ufffd, U+2028 and U+2029 escaped.
func appendJSONString[S []byte | string](dst []byte, s S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		n := min(len(s)-i, utf8.UTFMax)
		c, size := utf8.DecodeRuneInString(string(s[i : i+n]))
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendRowResult appends the body of GET /v1/datasets/{dataset}/rows/{key}:
// {"dataset":..., "version":..., "key":[...], "row":{...}}.
func AppendRowResult(dst []byte, dataset string, version int64, row snapshot.Row) []byte {
	dst = append(dst, `{"dataset":`...)
	dst = appendJSONString(dst, dataset)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, version, 10)
	dst = append(dst, `,"key":`...)
	dst = appendKeyJSON(dst, row.Key)
	dst = append(dst, `,"row":`...)
	dst = row.AppendJSON(dst)
	return append(dst, '}')
}

// appendStrings appends ss as a JSON array of strings.
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}
