package snapshot

import (
	"encoding/base64"
	"encoding/json"
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
		if v.Int > 1<<53 || v.Int < -(1<<53) {
			dst = append(dst, '"')
			dst = strconv.AppendInt(dst, v.Int, 10)
			return append(dst, '"')
		}
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
			return append(dst, `"Infinity"`...)
		case math.IsInf(v.Float, -1):
			return append(dst, `"-Infinity"`...)
		}
		return strconv.AppendFloat(dst, v.Float, 'g', -1, 64)
	case KindBytes, KindGeometry:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.Bytes)
		return append(dst, '"')
	case KindBool:
		if string(v.Bytes) == "t" {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case KindArray:
		return append(dst, v.Bytes...)
	case KindEmbeddedJSON:
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
