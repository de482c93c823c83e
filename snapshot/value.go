package snapshot

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// Kind is the type of a Value as snapstore stores it. Source connectors map
// their column types to kinds (docs/types.md has the tables for MySQL,
// PostgreSQL and SQLite); the kind decides the stored bytes, the JSON form and, for key
// columns, the order-preserving row key encoding.
type Kind uint8

// The kinds. The payload of each (Value.Bytes unless noted) and its JSON form:
const (
	// KindNull is SQL NULL; JSON null. NULL is a value, not a deletion.
	KindNull Kind = iota
	// KindInt is a signed integer in Value.Int; JSON number, or a string
	// when beyond ±2^53 so no JSON reader rounds it (as KindUint).
	KindInt
	// KindUint is an unsigned integer in Value.Uint (BIGINT UNSIGNED, BIT(n));
	// JSON number, or a string when above 2^53 so no JSON reader rounds it.
	KindUint
	// KindFloat is an IEEE 754 double in Value.Float; JSON number
	// (non-finite values as the strings "NaN", "Infinity", "-Infinity",
	// PostgreSQL's spelling, which numeric's text shares).
	KindFloat
	// KindDecimal is an exact decimal as its canonical text ("-12.50");
	// JSON string, never a float.
	KindDecimal
	// KindString is UTF-8 text (CHAR, VARCHAR, TEXT, ENUM, SET as the
	// comma-separated members); JSON string.
	KindString
	// KindBytes is binary (BINARY, VARBINARY, BLOB, non-UTF-8 text);
	// JSON string, standard base64.
	KindBytes
	// KindDate is a calendar date as "YYYY-MM-DD" (zero date "0000-00-00"
	// kept as is); JSON string.
	KindDate
	// KindDateTime is a date and time of day without zone, as
	// "YYYY-MM-DD hh:mm:ss[.ffffff]"; JSON string.
	KindDateTime
	// KindTime is a signed duration of day as "[-]hhh:mm:ss[.ffffff]"
	// (MySQL TIME, which may be negative or exceed 24h); JSON string.
	KindTime
	// KindJSON is a JSON document's text, kept byte for byte; JSON: that
	// text as a JSON string (as Debezium serves JSON), so the document
	// null, a number's digits and key order all survive, and SQL NULL
	// (JSON null) stays apart from the document null (JSON "null").
	KindJSON
	// KindGeometry is a spatial value in MySQL's internal form (4-byte
	// little-endian SRID, then WKB); JSON string, standard base64.
	KindGeometry
	// KindEmbeddedJSON is KindJSON for an adapter that asks for embedding
	// (api.Adapter.EmbedJSON); JSON: the document itself (a string when
	// it is not valid JSON). It cannot tell the document null from SQL
	// NULL, which both serve as null.
	KindEmbeddedJSON
	// KindBool is a boolean as PostgreSQL's text "t" or "f" (so false
	// sorts first in a key); JSON true or false. MySQL's BOOL is a
	// TINYINT(1), KindInt.
	KindBool
	// KindArray is an array as the JSON text of its form: a JSON array of
	// the elements, nested per dimension, each in its element kind's JSON
	// form; when a dimension's lower bound is not 1, the object
	// {"lower":[...],"elements":[...]} with one bound per dimension.
	// JSON: that text itself, never a string.
	KindArray

	// lastKind is the highest kind; stored kinds above it are corrupt.
	lastKind = KindArray
)

// Value is one cell's typed value. The zero Value is NULL.
type Value struct {
	Kind  Kind
	Int   int64
	Uint  uint64
	Float float64
	// Bytes is the payload of the text and binary kinds.
	Bytes []byte
}

// BoolValue returns b as a KindBool value.
func BoolValue(b bool) Value {
	if b {
		return Value{Kind: KindBool, Bytes: []byte("t")}
	}
	return Value{Kind: KindBool, Bytes: []byte("f")}
}

// Equal reports whether two values are identical (same kind and payload;
// floats compare by bits, so NaN equals NaN).
func (v Value) Equal(o Value) bool {
	if v.Kind != o.Kind {
		return false
	}
	switch v.Kind {
	case KindNull:
		return true
	case KindInt:
		return v.Int == o.Int
	case KindUint:
		return v.Uint == o.Uint
	case KindFloat:
		return math.Float64bits(v.Float) == math.Float64bits(o.Float)
	}
	return bytes.Equal(v.Bytes, o.Bytes)
}

var kindNames = [...]string{"null", "int", "uint", "float", "decimal", "string", "bytes", "date", "datetime", "time", "json", "geometry", "embedded_json", "bool", "array"}

// String returns the kind's name: "null", "int", "uint", "float",
// "decimal", "string", "bytes", "date", "datetime", "time", "json",
// "geometry", "embedded_json", "bool", "array".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText renders the kind's name, so schemas read well in JSON.
func (k Kind) MarshalText() ([]byte, error) {
	if int(k) >= len(kindNames) {
		return nil, fmt.Errorf("%w: kind %d", ErrBadSchema, k)
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText parses a kind's name. ErrBadSchema for an unknown name.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("%w: unknown kind %q", ErrBadSchema, b)
}
