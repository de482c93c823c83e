package server

import (
	"math"
	"strconv"

	"github.com/snapstore/snapstore/internal/jsonstr"
	"github.com/snapstore/snapstore/snapshot"
)

// Rows and values are written in JSON by snapshot's Value.AppendJSON and
// Row.AppendJSON (the forms documented on snapshot.Kind); this file adds the
// key array, the CSV text form and plain strings.

// ValueText returns v as one CSV field: decimal digits for numbers
// ("Infinity", "-Infinity", "NaN" for the non-finite floats), true or false
// for booleans, the text for text, decimal, temporal, JSON and array kinds
// (an array's JSON form), standard base64 for bytes
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
			return "Infinity"
		case math.IsInf(v.Float, -1):
			return "-Infinity"
		}
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	}
	return v.String()
}

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
// {"op":..., "key":[...], "before":{...}, "after":{...}, "changed":[...]},
// before absent for an insert and after for a delete, changed (the columns
// that differ) only for an update.
func appendChangeJSON(dst []byte, ch snapshot.Change) []byte {
	dst = append(dst, `{"op":`...)
	dst = jsonstr.Append(dst, string(ch.Op))
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
	if ch.Changed != nil {
		dst = append(dst, `,"changed":`...)
		dst = appendStrings(dst, ch.Changed)
	}
	return append(dst, '}')
}

// appendResultHead appends the start of a row result, up to the key:
// {"dataset":..., "version":...
func appendResultHead(dst []byte, dataset string, version int64) []byte {
	dst = append(dst, `{"dataset":`...)
	dst = jsonstr.Append(dst, dataset)
	dst = append(dst, `,"version":`...)
	return strconv.AppendInt(dst, version, 10)
}

// appendStrings appends ss as a JSON array of strings.
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, s)
	}
	return append(b, ']')
}
