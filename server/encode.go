package server

import (
	"encoding/json"
	"math"
	"strconv"

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

// AppendKeyJSON appends key as a JSON array of values.
func AppendKeyJSON(dst []byte, key []snapshot.Value) []byte {
	dst = append(dst, '[')
	for i, v := range key {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = v.AppendJSON(dst)
	}
	return append(dst, ']')
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst, s []byte) []byte {
	b, _ := json.Marshal(string(s)) // a string always encodes
	return append(dst, b...)
}
