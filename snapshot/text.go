package snapshot

import (
	"encoding/base64"
	"fmt"
	"strconv"
)

// String renders v as text: the JSON form without quotes for text kinds,
// "NULL" for NULL.
func (v Value) String() string {
	switch v.Kind {
	case KindNull:
		return "NULL"
	case KindDecimal, KindString, KindDate, KindDateTime, KindTime, KindJSON, KindEmbeddedJSON, KindArray:
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

// ParseValue converts text (a URL path segment, a CLI argument) to a value
// of kind k: integers and floats in Go syntax (floats also "Infinity",
// "-Infinity", "NaN"), booleans as true/false or t/f, bytes and geometry as
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
	case KindBool:
		switch s {
		case "true", "t":
			v = BoolValue(true)
		case "false", "f":
			v = BoolValue(false)
		default:
			err = ErrBadKey
		}
	case KindString, KindJSON, KindEmbeddedJSON, KindArray:
		v.Bytes = []byte(s)
	default:
		err = ErrBadKey
	}
	if err != nil {
		return Value{}, fmt.Errorf("%w: %q is not a valid %s%s", ErrBadKey, s, k, keyFormHint[k])
	}
	return v, nil
}

// keyFormHint says, in ParseValue's error, the form a text of a date or
// time kind must take: such a key is compared as the text reads give it,
// so a prefix of it ("2026-01-02" for a datetime) is no key.
var keyFormHint = map[Kind]string{
	KindDate:     " (want YYYY-MM-DD)",
	KindDateTime: " (want YYYY-MM-DD HH:MM:SS, with the fraction and zone the column's values are read with, e.g. 2026-01-02 09:00:00.000000 or 2026-01-02 09:00:00+00)",
	KindTime:     " (want HH:MM:SS, with a fraction as the column's values have it)",
}
