package hbase

import (
	"math"

	"github.com/snapstore/snapstore/store"
)

// family is the one HBase column family of the store's table.
var family = []byte("c")

// qualifierPrefix starts every HBase qualifier: qualifier = '_' | column,
// so that no cell has HBase's empty qualifier, which a family delete marker
// also carries (with NEW_VERSION_BEHAVIOR, HBase does not mask a put of the
// empty qualifier with it). A row delete marker is column "", qualifier "_".
const qualifierPrefix = '_'

// counterQualifierPrefix starts the qualifier of a counter (M6):
// '#' | column, its value the 8 raw bytes HBase's increment works on.
const counterQualifierPrefix = '#'

// counterQualifier returns the HBase qualifier of a counter.
func counterQualifier(column []byte) []byte {
	q := make([]byte, 1+len(column))
	q[0] = counterQualifierPrefix
	copy(q[1:], column)
	return q
}

// isCounter reports whether an HBase cell is a counter, which reads of
// cells skip (store.S8).
func isCounter(cv *tColumnValue) bool {
	return len(cv.qualifier) > 0 && cv.qualifier[0] == counterQualifierPrefix
}

// qualifier returns the HBase qualifier of a store column.
func qualifier(column []byte) []byte {
	q := make([]byte, 1+len(column))
	q[0] = qualifierPrefix
	copy(q[1:], column)
	return q
}

// appendEscaped appends the order-preserving encoding of s (CockroachDB's
// EncodeBytesAscending, as store/pebble does): each 00 byte becomes 00 ff
// and 00 01 ends the string, so no encoded string is a prefix of another
// and encoded strings sort as the raw ones.
func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			dst = append(dst, 0, 0xff)
		} else {
			dst = append(dst, s[i])
		}
	}
	return append(dst, 0, 1)
}

// tablePrefix is the prefix of every HBase row key of a store table:
// esc(table) 00 01.
func tablePrefix(table string) []byte { return appendEscaped(nil, table) }

// tableEnd is the first HBase row key after every row of table:
// esc(table) 00 02.
func tableEnd(table string) []byte {
	p := tablePrefix(table)
	p[len(p)-1] = 2
	return p
}

// rowKey is the HBase row key of a store row: prefix | row.
func rowKey(prefix, row []byte) []byte {
	k := make([]byte, 0, len(prefix)+len(row))
	return append(append(k, prefix...), row...)
}

// Value encoding: the first byte is the cell kind, with topBit set when the
// store timestamp is store.MaxTimestamp (see hbaseTimestamp); a put's value
// follows.
const topBit = 0x80

// topHBaseTimestamp is the largest timestamp an HBase cell can carry: HBase
// reads Long.MAX_VALUE in a put as "now" (HConstants.LATEST_TIMESTAMP).
const topHBaseTimestamp = math.MaxInt64 - 1

// hbaseTimestamp maps a store timestamp to HBase's: the identity, except
// store.MaxTimestamp, which shares topHBaseTimestamp with MaxTimestamp-1
// and is told apart by topBit in the value.
func hbaseTimestamp(ts int64) (hts int64, top bool) {
	if ts == store.MaxTimestamp {
		return topHBaseTimestamp, true
	}
	return ts, false
}

// encodeValue returns the HBase value of a cell.
func encodeValue(kind store.CellKind, top bool, value []byte) []byte {
	b := byte(kind)
	if top {
		b |= topBit
	}
	if kind != store.KindPut {
		return []byte{b}
	}
	v := make([]byte, 1+len(value))
	v[0] = b
	copy(v[1:], value)
	return v
}

// decodeCell fills c from an HBase cell of row (the store row key), or
// returns false for a value this package did not write.
func decodeCell(c *store.Cell, row []byte, cv *tColumnValue) bool {
	if len(cv.value) == 0 || len(cv.qualifier) == 0 || cv.qualifier[0] != qualifierPrefix {
		return false
	}
	kind := store.CellKind(cv.value[0] &^ topBit)
	c.Row = row
	c.Column = cv.qualifier[1:]
	c.Timestamp = cv.timestamp
	if cv.value[0]&topBit != 0 {
		c.Timestamp = store.MaxTimestamp
	}
	c.Kind = kind
	switch kind {
	case store.KindPut:
		c.Value = cv.value[1:]
	case store.KindDeleteColumn, store.KindDeleteRow:
		c.Value = nil
		if kind == store.KindDeleteRow {
			c.Column = nil
		}
	default:
		return false
	}
	return true
}
