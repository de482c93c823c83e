package snapshot

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A key given twice in one run fails it with ErrDuplicateKey (which is
// also an ErrBadKey), and the error names the repeated keys, each as
// (column=value, ...): Put names the key it was given, Commit (phase B,
// doc.go D5) the first few it finds, decoded from the row key encoding.

// maxNamedDuplicates is how many repeated keys one error names.
const maxNamedDuplicates = 5

// FormatKey renders key values with their column names, as errors name
// keys: (store_id=1, code="a"). Text kinds are quoted, bytes are hex.
func FormatKey(columns []string, key []Value) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, v := range key {
		if i > 0 {
			b.WriteString(", ")
		}
		if i < len(columns) {
			b.WriteString(columns[i])
			b.WriteByte('=')
		}
		switch v.Kind {
		case KindNull:
			b.WriteString("NULL")
		case KindInt, KindUint, KindFloat, KindDecimal, KindBool:
			b.WriteString(v.String())
		case KindBytes, KindGeometry:
			b.WriteString("0x" + hex.EncodeToString(v.Bytes))
		default:
			b.WriteString(strconv.Quote(string(v.Bytes)))
		}
	}
	b.WriteByte(')')
	return b.String()
}

// duplicateKeyError is ErrDuplicateKey naming keys (already formatted)
// and, when known, how many times each came.
func duplicateKeyError(keys []string) error {
	return fmt.Errorf("%w: %s", ErrDuplicateKey, strings.Join(keys, ", "))
}

// formatRowKey renders an encoded row key (encoding.go) as FormatKey does;
// a component it cannot decode is shown as the hex of the rest.
func (r *Run) formatRowKey(key []byte) string {
	var vals []Value
	for len(key) > 0 {
		v, n, ok := decodeKeyValue(key)
		if !ok {
			vals = append(vals, Value{Kind: KindBytes, Bytes: key})
			break
		}
		vals = append(vals, v)
		key = key[n:]
	}
	return FormatKey(r.opts.Schema.Key, vals)
}

// decodeKeyValue decodes the first component of a row key: its value and
// length. Decimals decode to their significant digits ("-12.5" for a key
// written as "-12.50").
func decodeKeyValue(b []byte) (Value, int, bool) {
	switch {
	case len(b) >= 9 && b[0] == tagInt:
		return Value{Kind: KindInt, Int: int64(binary.BigEndian.Uint64(b[1:9]) ^ 1<<63)}, 9, true
	case len(b) >= 9 && b[0] == tagUint:
		return Value{Kind: KindUint, Uint: binary.BigEndian.Uint64(b[1:9])}, 9, true
	case len(b) >= 9 && b[0] == tagFloat:
		bits := binary.BigEndian.Uint64(b[1:9])
		if bits&(1<<63) != 0 {
			bits &^= 1 << 63
		} else {
			bits = ^bits
		}
		return Value{Kind: KindFloat, Float: math.Float64frombits(bits)}, 9, true
	case len(b) >= 9 && b[0] == tagTime:
		us := int64(binary.BigEndian.Uint64(b[1:9]) ^ 1<<63)
		sign := ""
		if us < 0 {
			sign, us = "-", -us
		}
		s := fmt.Sprintf("%s%02d:%02d:%02d", sign, us/3_600_000_000, us/60_000_000%60, us/1_000_000%60)
		if f := us % 1_000_000; f != 0 {
			s += fmt.Sprintf(".%06d", f)
		}
		return Value{Kind: KindTime, Bytes: []byte(s)}, 9, true
	case len(b) >= 1 && b[0] == tagDecZero:
		return Value{Kind: KindDecimal, Bytes: []byte("0")}, 1, true
	case len(b) >= 6 && (b[0] == tagDecPos || b[0] == tagDecNeg):
		neg := b[0] == tagDecNeg
		body := b[1:]
		end := bytes.IndexByte(body[4:], map[bool]byte{false: 0x00, true: 0xff}[neg])
		if end < 0 {
			return Value{}, 0, false
		}
		enc := append([]byte{}, body[:4+end]...)
		if neg {
			for i := range enc {
				enc[i] = ^enc[i]
			}
		}
		exp := int(int32(binary.BigEndian.Uint32(enc[:4]) ^ 1<<31))
		digits := string(enc[4:])
		var s string
		switch {
		case exp <= 0:
			s = "0." + strings.Repeat("0", -exp) + digits
		case exp >= len(digits):
			s = digits + strings.Repeat("0", exp-len(digits))
		default:
			s = digits[:exp] + "." + digits[exp:]
		}
		if neg {
			s = "-" + s
		}
		return Value{Kind: KindDecimal, Bytes: []byte(s)}, 1 + 4 + end + 1, true
	case len(b) >= 1 && b[0] >= tagBytesBase && b[0]-tagBytesBase <= byte(lastKind):
		var out []byte
		for i := 1; i+1 < len(b); i++ {
			if b[i] != 0x00 {
				out = append(out, b[i])
				continue
			}
			switch b[i+1] {
			case 0xff:
				out = append(out, 0x00)
				i++
			case 0x01:
				if out == nil {
					out = []byte{}
				}
				return Value{Kind: Kind(b[0] - tagBytesBase), Bytes: out}, i + 2, true
			default:
				return Value{}, 0, false
			}
		}
	}
	return Value{}, 0, false
}
