package pebble

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Key layout (see the package doc and docs/storage-format.md):
//
//	esc(table) 00 01  esc(row) 00 01  esc(column) 00 01  ^ts (8 bytes, big-endian)
//
// esc replaces every 0x00 byte by 0x00 0xFF, so 0x00 0x01 can only be a
// terminator. This is CockroachDB's ascending bytes encoding
// (pkg/util/encoding EncodeBytesAscending): it preserves bytewise order and
// no encoded string is a prefix of another.
const (
	escByte    = 0x00
	escEscaped = 0xFF
	escTerm    = 0x01
	tsLen      = 8
	termLen    = 2
)

// formatKey is the reserved key holding the storage format version. It is the
// encoding of the empty table name followed by a name: no table can produce
// it because an empty table name is rejected (store.CheckTable).
var formatKey = []byte("\x00\x01storage-format")

// counterPrefix starts the key of every counter (store.S8), in the
// reserved space of the empty table name as formatKey is, so that no cell
// key and no scan of a table can reach a counter:
//
//	00 01 "counter" 00 01 | esc(table) 00 01 | esc(row) 00 01 | esc(column) 00 01
//
// value: the counter, 8 bytes big-endian.
var counterPrefix = []byte("\x00\x01counter\x00\x01")

// appendCounterKey appends the key of the counter (table, row, column);
// with a nil column, the prefix of the counters of row (DeleteRange's
// bounds).
func appendCounterKey(dst []byte, table string, row, column []byte) []byte {
	dst = append(dst, counterPrefix...)
	dst = appendTable(dst, table)
	if row == nil {
		return dst
	}
	dst = appendEscaped(dst, row)
	if column == nil {
		return dst
	}
	return appendEscaped(dst, column)
}

// errCorruptKey is returned when a stored key does not parse.
var errCorruptKey = errors.New("pebble: corrupt key")

// escapedLen returns the length of esc(b) plus its terminator.
func escapedLen(b []byte) int {
	return len(b) + bytes.Count(b, []byte{escByte}) + termLen
}

// appendEscaped appends esc(b) and the terminator 0x00 0x01 to dst.
func appendEscaped(dst, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, escByte)
		if i < 0 {
			break
		}
		dst = append(dst, b[:i]...)
		dst = append(dst, escByte, escEscaped)
		b = b[i+1:]
	}
	dst = append(dst, b...)
	return append(dst, escByte, escTerm)
}

// putEscaped writes esc(b) and the terminator into dst, which must have room
// for escapedLen(b) bytes, and returns the number of bytes written.
func putEscaped(dst, b []byte) int {
	n := 0
	for {
		i := bytes.IndexByte(b, escByte)
		if i < 0 {
			break
		}
		n += copy(dst[n:], b[:i])
		dst[n], dst[n+1] = escByte, escEscaped
		n += 2
		b = b[i+1:]
	}
	n += copy(dst[n:], b)
	dst[n], dst[n+1] = escByte, escTerm
	return n + 2
}

// appendTable appends the encoded table prefix.
func appendTable(dst []byte, table string) []byte {
	// Avoid converting the string to []byte on the common path.
	if len(table) > 0 && table[0] != 0 && bytes.IndexByte([]byte(table), escByte) < 0 {
		dst = append(dst, table...)
		return append(dst, escByte, escTerm)
	}
	return appendEscaped(dst, []byte(table))
}

// encodeTS returns the descending encoding of a non-negative timestamp.
func encodeTS(ts int64) uint64 { return ^uint64(ts) }

// decodeTS inverts encodeTS.
func decodeTS(b []byte) int64 { return int64(^binary.BigEndian.Uint64(b)) }

// appendCellKey appends the full key of (row, column, ts) after an encoded
// table prefix.
func appendCellKey(dst, tablePrefix, row, column []byte, ts int64) []byte {
	dst = append(dst, tablePrefix...)
	dst = appendEscaped(dst, row)
	dst = appendEscaped(dst, column)
	return binary.BigEndian.AppendUint64(dst, encodeTS(ts))
}

// cellKeyLen returns the length of a full cell key.
func cellKeyLen(tablePrefix, row, column []byte) int {
	return len(tablePrefix) + escapedLen(row) + escapedLen(column) + tsLen
}

// putCellKey writes a full cell key into dst (of length cellKeyLen).
func putCellKey(dst, tablePrefix, row, column []byte, ts int64) {
	n := copy(dst, tablePrefix)
	n += putEscaped(dst[n:], row)
	n += putEscaped(dst[n:], column)
	binary.BigEndian.PutUint64(dst[n:], encodeTS(ts))
}

// prefixEnd returns the smallest key greater than every key that starts with
// p, where p ends with a terminator 0x00 0x01: p with its last byte raised to
// 0x02. The result is appended to dst.
func prefixEnd(dst, p []byte) []byte {
	dst = append(dst, p...)
	dst[len(dst)-1]++
	return dst
}

// findTerm returns the index just past the first terminator in b (the length
// of the escaped segment including 00 01), and whether the segment contains
// escaped zero bytes.
func findTerm(b []byte) (end int, escaped bool, ok bool) {
	off := 0
	for {
		i := bytes.IndexByte(b[off:], escByte)
		if i < 0 || off+i+1 >= len(b) {
			return 0, false, false
		}
		switch b[off+i+1] {
		case escTerm:
			return off + i + 2, escaped, true
		case escEscaped:
			escaped = true
			off += i + 2
		default:
			return 0, false, false
		}
	}
}

// unescape decodes an escaped segment (without its terminator) into dst.
func unescape(dst, seg []byte) []byte {
	for {
		i := bytes.IndexByte(seg, escByte)
		if i < 0 {
			return append(dst, seg...)
		}
		dst = append(dst, seg[:i]...)
		dst = append(dst, escByte)
		seg = seg[i+2:]
	}
}

// splitCellKey parses a cell key after its table prefix (tlen bytes). It
// returns the end offsets of the row segment and the column segment (each
// including its terminator), whether they contain escapes, and the
// timestamp.
type parsedKey struct {
	rowEnd, colEnd     int
	rowEsc, colEsc     bool
	ts                 int64
	rowStart, colStart int
}

// parseCellKeyInRow parses a cell key that starts with rowPrefix, the
// encoded table and row of an earlier key (rowPrefix includes the row's
// terminator, so the row segment of key ends where rowPrefix does; rowEsc
// says whether that row has escapes). The caller has checked the prefix.
func parseCellKeyInRow(key []byte, tlen, rowEnd int, rowEsc bool) (parsedKey, error) {
	p := parsedKey{rowStart: tlen, rowEnd: rowEnd, rowEsc: rowEsc, colStart: rowEnd}
	if len(key) < rowEnd+termLen+tsLen {
		return p, errCorruptKey
	}
	body := key[:len(key)-tsLen]
	n, esc, ok := findTerm(body[rowEnd:])
	if !ok || rowEnd+n != len(body) {
		return p, errCorruptKey
	}
	p.colEnd, p.colEsc = rowEnd+n, esc
	p.ts = decodeTS(key[len(key)-tsLen:])
	return p, nil
}

func parseCellKey(key []byte, tlen int) (parsedKey, error) {
	var p parsedKey
	if len(key) < tlen+2*termLen+tsLen {
		return p, errCorruptKey
	}
	body := key[:len(key)-tsLen]
	p.rowStart = tlen
	n, esc, ok := findTerm(body[tlen:])
	if !ok {
		return p, errCorruptKey
	}
	p.rowEnd, p.rowEsc = tlen+n, esc
	p.colStart = p.rowEnd
	n, esc, ok = findTerm(body[p.rowEnd:])
	if !ok || p.rowEnd+n != len(body) {
		return p, errCorruptKey
	}
	p.colEnd, p.colEsc = p.rowEnd+n, esc
	p.ts = decodeTS(key[len(key)-tsLen:])
	return p, nil
}
