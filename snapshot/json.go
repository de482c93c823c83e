package snapshot

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/snapstore/snapstore/internal/jsonstr"
)

// AppendJSON appends v's JSON form (see the Kind constants) to dst.
func (v Value) AppendJSON(dst []byte) []byte {
	switch v.Kind {
	case KindNull:
		return append(dst, "null"...)
	case KindInt:
		return strconv.AppendInt(dst, v.Int, 10)
	case KindUint:
		if v.Uint > 1<<53 {
			dst = append(dst, '"')
			dst = strconv.AppendUint(dst, v.Uint, 10)
			return append(dst, '"')
		}
		return strconv.AppendUint(dst, v.Uint, 10)
	case KindFloat:
		switch {
		case math.IsNaN(v.Float):
			return append(dst, `"NaN"`...)
		case math.IsInf(v.Float, 1):
			return append(dst, `"+Inf"`...)
		case math.IsInf(v.Float, -1):
			return append(dst, `"-Inf"`...)
		}
		return strconv.AppendFloat(dst, v.Float, 'g', -1, 64)
	case KindBytes, KindGeometry:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.Bytes)
		return append(dst, '"')
	case KindJSON:
		if json.Valid(v.Bytes) {
			return append(dst, v.Bytes...)
		}
		return jsonstr.Append(dst, v.Bytes)
	default: // decimal, string, date, datetime, time
		return jsonstr.Append(dst, v.Bytes)
	}
}

// MarshalJSON renders v as documented for its Kind.
func (v Value) MarshalJSON() ([]byte, error) { return v.AppendJSON(nil), nil }

// String renders v as text: the JSON form without quotes for text kinds,
// "NULL" for NULL.
func (v Value) String() string {
	switch v.Kind {
	case KindNull:
		return "NULL"
	case KindDecimal, KindString, KindDate, KindDateTime, KindTime, KindJSON:
		return string(v.Bytes)
	case KindUint:
		return strconv.FormatUint(v.Uint, 10)
	}
	b := v.AppendJSON(nil)
	if len(b) >= 2 && b[0] == '"' {
		return string(b[1 : len(b)-1])
	}
	return string(b)
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

// AppendJSON appends the row as one JSON object, column name to value, in
// column order: {"id":1,"name":"x"}.
func (r Row) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	for i, c := range r.Columns {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, c)
		dst = append(dst, ':')
		dst = r.Values[i].AppendJSON(dst)
	}
	return append(dst, '}')
}

// MarshalJSON renders the row as AppendJSON does.
func (r Row) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// ParseValue converts text (a URL path segment, a CLI argument) to a value
// of kind k: integers and floats in Go syntax, bytes and geometry as
// standard or URL-safe base64 (padding optional), other kinds as the text
// itself after a format check. ErrBadKey when the text does not fit.
func ParseValue(k Kind, s string) (Value, error) {
	v := Value{Kind: k}
	var err error
	switch k {
	case KindInt:
		v.Int, err = strconv.ParseInt(s, 10, 64)
	case KindUint:
		v.Uint, err = strconv.ParseUint(s, 10, 64)
	case KindFloat:
		v.Float, err = strconv.ParseFloat(s, 64)
	case KindDecimal:
		_, _, _, err = parseDecimal([]byte(s))
		v.Bytes = []byte(s)
	case KindTime:
		_, err = parseTimeMicros(s)
		v.Bytes = []byte(s)
	case KindDate:
		if len(s) != 10 || s[4] != '-' || s[7] != '-' {
			err = ErrBadKey
		}
		v.Bytes = []byte(s)
	case KindDateTime:
		if len(s) < 19 || s[4] != '-' || s[10] != ' ' && s[10] != 'T' {
			err = ErrBadKey
		}
		b := []byte(s)
		if len(b) > 10 && b[10] == 'T' {
			b[10] = ' '
		}
		v.Bytes = b
	case KindBytes, KindGeometry:
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			if v.Bytes, err = enc.DecodeString(s); err == nil {
				break
			}
		}
	case KindString, KindJSON:
		v.Bytes = []byte(s)
	default:
		err = ErrBadKey
	}
	if err != nil {
		return Value{}, fmt.Errorf("%w: %q is not a valid %s", ErrBadKey, s, k)
	}
	return v, nil
}

var kindNames = [...]string{"null", "int", "uint", "float", "decimal", "string", "bytes", "date", "datetime", "time", "json", "geometry"}

// String returns the kind's name: "null", "int", "uint", "float",
// "decimal", "string", "bytes", "date", "datetime", "time", "json",
// "geometry".
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
