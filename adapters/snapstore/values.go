package snapstore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/snapstore/snapstore/snapshot"
)

// parseValue rebuilds a value of column c from its JSON form as the server
// writes it (snapshot.Value.AppendJSON), so that the value, and the
// checksum over it, are the source's: integers from numbers or, beyond
// ±2^53, strings; floats from the shortest text that reads back to the
// same bits (and "NaN", "Infinity", "-Infinity", or "+Inf" and "-Inf" of
// earlier servers); true and false for booleans; an array's JSON text as
// it is; base64 for bytes and geometry;
// the text of a string for the text kinds. An embedded JSON document is
// written as itself, which JSON cannot tell apart from some other values:
// null is SQL NULL unless the column is NOT NULL (then the document
// null), and a JSON string is taken as a document that is a string (the
// form a JSON column type always holds) rather than text that is not JSON.
func parseValue(c snapshot.Column, raw json.RawMessage) (snapshot.Value, error) {
	if bytes.Equal(raw, []byte("null")) {
		if c.Kind == snapshot.KindEmbeddedJSON && !c.Nullable {
			return snapshot.Value{Kind: c.Kind, Bytes: []byte("null")}, nil
		}
		return snapshot.Value{}, nil
	}
	bad := func(err error) (snapshot.Value, error) {
		return snapshot.Value{}, fmt.Errorf("column %q: %s is not a %s value: %w", c.Name, clip(raw), c.Kind, err)
	}
	v := snapshot.Value{Kind: c.Kind}
	switch c.Kind {
	case snapshot.KindInt, snapshot.KindUint, snapshot.KindFloat:
		text := raw
		if len(raw) > 0 && raw[0] == '"' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return bad(err)
			}
			text = []byte(s)
		}
		var err error
		switch c.Kind {
		case snapshot.KindInt:
			v.Int, err = strconv.ParseInt(string(text), 10, 64)
		case snapshot.KindUint:
			v.Uint, err = strconv.ParseUint(string(text), 10, 64)
		default:
			v.Float, err = strconv.ParseFloat(string(text), 64)
		}
		if err != nil {
			return bad(err)
		}
	case snapshot.KindBytes, snapshot.KindGeometry:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return bad(err)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return bad(err)
		}
		v.Bytes = b
	case snapshot.KindEmbeddedJSON, snapshot.KindArray:
		// An array is served as its stored JSON text, byte for byte.
		v.Bytes = bytes.Clone(raw)
	case snapshot.KindBool:
		switch string(raw) {
		case "true":
			v.Bytes = []byte("t")
		case "false":
			v.Bytes = []byte("f")
		default:
			return bad(fmt.Errorf("want true or false"))
		}
	case snapshot.KindNull:
		return bad(fmt.Errorf("a column of kind null holds only null"))
	default: // decimal, string, date, datetime, time, json
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return bad(err)
		}
		v.Bytes = []byte(s)
	}
	return v, nil
}

// clip shortens a value's JSON text for an error message.
func clip(raw []byte) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}
