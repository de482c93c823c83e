package snapshot

// Encodings of values into storage bytes.
//
// # Cell values
//
// A cell's value is one kind byte (the Kind) followed by the payload:
//
//	KindNull                      nothing
//	KindInt                       zig-zag varint (encoding/binary.AppendVarint)
//	KindUint                      uvarint
//	KindFloat                     8 bytes, IEEE 754 bits, big-endian
//	every other kind              Value.Bytes as is
//
// # Row keys
//
// A row key is the concatenation of the order-preserving encodings of the
// key column values, in key order. Each component starts with a tag byte
// and is self-delimiting, so the encoding of the first n key columns is a
// byte prefix of the full key and bytewise order of keys equals the order
// of the value tuples (composite keys compare column by column):
//
//	KindInt       0x10, 8 bytes big-endian of uint64(v) ^ 1<<63 (sign flip)
//	KindUint      0x11, 8 bytes big-endian
//	KindFloat     0x12, 8 bytes: IEEE bits, all flipped when negative, else
//	              the sign bit set (-0 is encoded as +0)
//	KindDecimal   0x13 negative, 0x14 zero, 0x15 positive; for nonzero: the
//	              decimal exponent (count of integer digits, may be <= 0) as
//	              4 bytes big-endian with the sign flipped, then the
//	              significant digits as ASCII, then 0x00; all bits of
//	              exponent, digits and terminator complemented when negative
//	KindTime      0x16, signed microseconds as KindInt's 8 bytes (MySQL TIME
//	              text does not sort: "100:00:00" < "23:00:00")
//	KindString, KindBytes, KindDate, KindDateTime, KindJSON, KindGeometry,
//	KindEmbeddedJSON, KindBool ("f" < "t"), KindArray
//	              0x20 + kind, then the bytes with 0x00 escaped as 0x00 0xFF,
//	              then the terminator 0x00 0x01 (CockroachDB's and
//	              FoundationDB's byte-string encoding). Dates and datetimes
//	              are fixed-width text, so text order is time order.
//
// Worked example: key columns (region VARCHAR, id INT), row ("eu", -2):
//
//	25 65 75 00 01                  "eu": tag 0x20+KindString(5), 'e' 'u', terminator
//	10 7f ff ff ff ff ff ff fe      -2: tag 0x10, 0xfffffffffffffffe ^ 1<<63
//
// so ("eu", -2) = 25 65 75 00 01 10 7f ff ff ff ff ff ff fe sorts before
// ("eu", 1) = 25 65 75 00 01 10 80 00 00 00 00 00 00 01 and after
// ("e", 7) = 25 65 00 01 ..., because 0x00 < 'u'.
// A decimal key -12.50 is 13 then the complement of (80 00 00 02 '1' '2' 00):
// exponent 2, digits "125", terminator.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

const (
	tagInt       = 0x10
	tagUint      = 0x11
	tagFloat     = 0x12
	tagDecNeg    = 0x13
	tagDecZero   = 0x14
	tagDecPos    = 0x15
	tagTime      = 0x16
	tagBytesBase = 0x20
)

// appendCellValue appends v's cell encoding to dst.
func appendCellValue(dst []byte, v Value) []byte {
	dst = append(dst, byte(v.Kind))
	switch v.Kind {
	case KindNull:
	case KindInt:
		dst = binary.AppendVarint(dst, v.Int)
	case KindUint:
		dst = binary.AppendUvarint(dst, v.Uint)
	case KindFloat:
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v.Float))
	default:
		dst = append(dst, v.Bytes...)
	}
	return dst
}

// decodeCellValue decodes a cell value. When copyBytes is false, the Bytes
// of the result alias b.
func decodeCellValue(b []byte, copyBytes bool) (Value, error) {
	if len(b) == 0 {
		return Value{}, fmt.Errorf("%w: empty cell value", ErrCorrupt)
	}
	v := Value{Kind: Kind(b[0])}
	p := b[1:]
	switch v.Kind {
	case KindNull:
	case KindInt:
		x, n := binary.Varint(p)
		if n <= 0 {
			return Value{}, fmt.Errorf("%w: int", ErrCorrupt)
		}
		v.Int = x
	case KindUint:
		x, n := binary.Uvarint(p)
		if n <= 0 {
			return Value{}, fmt.Errorf("%w: uint", ErrCorrupt)
		}
		v.Uint = x
	case KindFloat:
		if len(p) != 8 {
			return Value{}, fmt.Errorf("%w: float", ErrCorrupt)
		}
		v.Float = math.Float64frombits(binary.BigEndian.Uint64(p))
	default:
		if v.Kind > lastKind {
			return Value{}, fmt.Errorf("%w: kind %d", ErrCorrupt, v.Kind)
		}
		if copyBytes {
			v.Bytes = append([]byte{}, p...)
		} else {
			v.Bytes = p
		}
		if v.Bytes == nil {
			v.Bytes = []byte{}
		}
	}
	return v, nil
}

// AppendKey appends the order-preserving encoding of key values (a whole
// key, or its first columns: a prefix) to dst, as row keys are stored:
// bytes.Compare of two encodings orders their keys as a scan does, and a
// key's encoding begins with each of its prefixes' (so a prefix as a
// scan's start includes the keys that begin with it, and as its end
// leaves them out). ErrBadKey for NULL and for text that does not parse
// (decimal, time).
func AppendKey(dst []byte, key []Value) ([]byte, error) {
	for _, v := range key {
		var err error
		if dst, err = appendKeyValue(dst, v); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// appendKeyValue appends the order-preserving encoding of one key column
// value. ErrBadKey for NULL and for text that does not parse (decimal,
// time).
func appendKeyValue(dst []byte, v Value) ([]byte, error) {
	switch v.Kind {
	case KindNull:
		return dst, fmt.Errorf("%w: NULL in a key column", ErrBadKey)
	case KindInt:
		dst = append(dst, tagInt)
		return binary.BigEndian.AppendUint64(dst, uint64(v.Int)^(1<<63)), nil
	case KindUint:
		dst = append(dst, tagUint)
		return binary.BigEndian.AppendUint64(dst, v.Uint), nil
	case KindFloat:
		f := v.Float
		if f == 0 {
			f = 0 // -0 -> +0
		}
		bits := math.Float64bits(f)
		if bits&(1<<63) != 0 {
			bits = ^bits
		} else {
			bits |= 1 << 63
		}
		dst = append(dst, tagFloat)
		return binary.BigEndian.AppendUint64(dst, bits), nil
	case KindDecimal:
		return appendDecimalKey(dst, v.Bytes)
	case KindTime:
		us, err := parseTimeMicros(string(v.Bytes))
		if err != nil {
			return dst, err
		}
		dst = append(dst, tagTime)
		return binary.BigEndian.AppendUint64(dst, uint64(us)^(1<<63)), nil
	case KindString, KindBytes, KindDate, KindDateTime, KindJSON, KindGeometry, KindEmbeddedJSON, KindBool, KindArray:
		dst = append(dst, tagBytesBase+byte(v.Kind))
		return appendEscaped(dst, v.Bytes), nil
	}
	return dst, fmt.Errorf("%w: unknown kind %d", ErrBadKey, v.Kind)
}

func appendEscaped(dst, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			dst = append(dst, b...)
			break
		}
		dst = append(dst, b[:i]...)
		dst = append(dst, 0x00, 0xff)
		b = b[i+1:]
	}
	return append(dst, 0x00, 0x01)
}

// parseDecimal splits canonical decimal text into sign, significant digits
// (no leading or trailing zeros) and exponent (digits before the point).
func parseDecimal(s []byte) (neg bool, digits []byte, exp int, err error) {
	t := s
	if len(t) > 0 && (t[0] == '-' || t[0] == '+') {
		neg = t[0] == '-'
		t = t[1:]
	}
	intPart, frac, hasPoint := bytes.Cut(t, []byte{'.'})
	if len(intPart) == 0 && (!hasPoint || len(frac) == 0) {
		return false, nil, 0, fmt.Errorf("%w: decimal %q", ErrBadKey, s)
	}
	for _, p := range [][]byte{intPart, frac} {
		for _, c := range p {
			if c < '0' || c > '9' {
				return false, nil, 0, fmt.Errorf("%w: decimal %q", ErrBadKey, s)
			}
		}
	}
	intPart = bytes.TrimLeft(intPart, "0")
	exp = len(intPart)
	all := append(append([]byte{}, intPart...), frac...)
	if len(intPart) == 0 {
		// leading zeros of the fraction lower the exponent
		n := len(all)
		all = bytes.TrimLeft(all, "0")
		exp = -(n - len(all))
	}
	all = bytes.TrimRight(all, "0")
	if len(all) == 0 {
		return false, nil, 0, nil
	}
	return neg, all, exp, nil
}

func appendDecimalKey(dst, s []byte) ([]byte, error) {
	neg, digits, exp, err := parseDecimal(s)
	if err != nil {
		return dst, err
	}
	if len(digits) == 0 {
		return append(dst, tagDecZero), nil
	}
	if neg {
		dst = append(dst, tagDecNeg)
	} else {
		dst = append(dst, tagDecPos)
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(int32(exp))^(1<<31))
	dst = append(dst, digits...)
	dst = append(dst, 0)
	if neg {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	return dst, nil
}

// parseTimeMicros parses MySQL TIME text "[-]h+:mm:ss[.ffffff]".
func parseTimeMicros(s string) (int64, error) {
	bad := fmt.Errorf("%w: time %q", ErrBadKey, s)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	hms, frac, _ := strings.Cut(s, ".")
	parts := strings.Split(hms, ":")
	if len(parts) != 3 {
		return 0, bad
	}
	var n [3]int64
	for i, p := range parts {
		x, err := strconv.ParseInt(p, 10, 64)
		if err != nil || x < 0 || p == "" || (i > 0 && (len(p) != 2 || x > 59)) || x > 1e9 {
			return 0, bad
		}
		n[i] = x
	}
	us := (n[0]*3600 + n[1]*60 + n[2]) * 1e6
	if frac != "" {
		if len(frac) > 6 {
			return 0, bad
		}
		f, err := strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		if err != nil || f < 0 {
			return 0, bad
		}
		us += f
	}
	if neg {
		us = -us
	}
	return us, nil
}

// appendColumnValue appends the packed encoding of v: its cell encoding
// (appendCellValue), the bytes of a text or binary value after their
// length, so that a row version can hold several values.
func appendColumnValue(dst []byte, v Value) []byte {
	switch v.Kind {
	case KindNull, KindInt, KindUint, KindFloat:
		return appendCellValue(dst, v)
	}
	dst = append(dst, byte(v.Kind))
	dst = binary.AppendUvarint(dst, uint64(len(v.Bytes)))
	return append(dst, v.Bytes...)
}

// columnValueLen returns the length of the packed column value at the
// start of b, or -1 when it does not parse.
func columnValueLen(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	switch Kind(b[0]) {
	case KindNull, deleteColumn:
		return 1
	case KindInt:
		_, n := binary.Varint(b[1:])
		if n <= 0 {
			return -1
		}
		return 1 + n
	case KindUint:
		_, n := binary.Uvarint(b[1:])
		if n <= 0 {
			return -1
		}
		return 1 + n
	case KindFloat:
		if len(b) < 9 {
			return -1
		}
		return 9
	}
	if Kind(b[0]) > lastKind {
		return -1
	}
	l, n := binary.Uvarint(b[1:])
	if n <= 0 || l > uint64(len(b)-1-n) {
		return -1
	}
	return 1 + n + int(l)
}

// decodeColumnValue decodes a packed column value (as columnValueLen
// delimits it); the Bytes of the result alias b.
func decodeColumnValue(b []byte) (Value, error) {
	if len(b) == 0 {
		return Value{}, fmt.Errorf("%w: empty column value", ErrCorrupt)
	}
	v := Value{Kind: Kind(b[0])}
	switch {
	case v.Kind == KindNull, v.Kind == KindInt, v.Kind == KindUint, v.Kind == KindFloat:
		return decodeCellValue(b, false)
	case v.Kind > lastKind:
		return Value{}, fmt.Errorf("%w: kind %d", ErrCorrupt, v.Kind)
	}
	l, n := binary.Uvarint(b[1:])
	if n <= 0 || uint64(len(b)-1-n) != l {
		return Value{}, fmt.Errorf("%w: %s value length", ErrCorrupt, v.Kind)
	}
	v.Bytes = b[1+n : len(b) : len(b)]
	return v, nil
}
