package mysql

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// Checksums MySQL and MariaDB compute inside the read's consistent snapshot
// (checksums.go says how runs use them, and why not CHECKSUM TABLE;
// TestMySQLChecksumInSnapshot pins the snapshot on MariaDB): a key range's
// COUNT(*) and BIT_XOR of a 64-bit hash of each row's text, after
// pt-table-checksum: CONCAT_WS('#', the columns, a number whose bits say
// which nullable columns are NULL), so that NULL and ” differ.
//
//   - Every column whose text may hold a '#' (text, binary, JSON, BIT,
//     geometry) comes after its LENGTH, so that no two rows have one text
//     ('x#','y' and 'x','#y' would).
//   - The hash is the first 64 bits of SHA1: a BIT_XOR of CRC32s is blind
//     to changes that cancel under XOR, as two rows swapping their values
//     do, CRC32 being linear.
//   - VIRTUAL generated columns are in the text, evaluated; the signature
//     holds every generated column's expression, so that a digest written
//     before the expression changed is never compared.
//
// Chunk checksums need a key the ranges can be written with and whose
// order the source and snapstore agree on (keyOrderAgrees), of one or
// more columns. Other tables are read in full every run.
// mysqlChecksumVersion names the row expression; it is part of the
// signature, so a digest of another expression is never compared.
const mysqlChecksumVersion = "sha1_64-concat_ws-lengths-nullmask-2"

// maxNullMask is the most nullable columns the null mask holds (a BIGINT).
const maxNullMask = 62

// rowChecksumExpr is the SQL of one row's checksum.
func (t *mysqlTable) rowChecksumExpr() (string, bool) {
	var cols, nulls []string
	for _, c := range t.cols {
		q := quoteMySQLIdent(c.name)
		if !c.plainText() {
			cols = append(cols, "LENGTH("+q+")")
		}
		cols = append(cols, c.selectExpr())
		if c.nullable {
			nulls = append(nulls, fmt.Sprintf("(%s IS NULL)*%d", q, int64(1)<<len(nulls)))
		}
	}
	if len(nulls) > maxNullMask {
		return "", false
	}
	if len(nulls) == 0 {
		nulls = []string{"0"}
	}
	text := "CONCAT_WS('#', " + strings.Join(cols, ", ") + ", " + strings.Join(nulls, " + ") + ")"
	return "CAST(CONV(LEFT(SHA1(" + text + "), 16), 16, 10) AS UNSIGNED)", true
}

// plainText reports whether the column's text in a row checksum can hold
// no '#' and needs no length before it: numbers, decimals and temporal
// values.
func (c *mysqlColumn) plainText() bool {
	switch c.kind {
	case snapshot.KindInt, snapshot.KindFloat, snapshot.KindDecimal, snapshot.KindDate, snapshot.KindDateTime, snapshot.KindTime:
		return true
	case snapshot.KindUint:
		return !c.bit
	}
	return false
}

// ChecksumSignature implements source.Checksummer: the expression, the columns
// with their types and the key.
func (t *mysqlTable) ChecksumSignature() string {
	expr, _ := t.rowChecksumExpr()
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", mysqlChecksumVersion, expr)
	for _, c := range t.cols {
		fmt.Fprintf(h, "%s %s %v %q %q\n", c.name, c.columnType, c.nullable, c.generated, c.genExpr)
	}
	fmt.Fprintf(h, "key %v\n", t.TableSchema.Key)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// Chunkable implements source.Checksummer.
func (t *mysqlTable) Chunkable() bool {
	if len(t.keyIdx) == 0 || !t.Unique {
		return false
	}
	if _, ok := t.rowChecksumExpr(); !ok {
		return false
	}
	for _, i := range t.keyIdx {
		if !t.cols[i].keyOrderAgrees() {
			return false
		}
	}
	return true
}

// keyOrderAgrees reports whether the column's ORDER BY order is the order
// of snapstore's key encoding of its values: integers (not BIT), DECIMAL,
// DATE and DATETIME (their text, fixed width, orders as the time does;
// not TIMESTAMP, whose text follows the session's time zone, where a DST
// fold orders two instants backwards), and BINARY and VARBINARY, which
// compare bytewise with no pad. Text columns compare by their collation,
// which differs from the bytes' order even for _bin ones (PAD SPACE puts
// 'a\t' before 'a'); ENUM and SET order by index, not by their text.
func (c *mysqlColumn) keyOrderAgrees() bool {
	if c.enumLike || c.bit {
		return false
	}
	switch c.kind {
	case snapshot.KindInt, snapshot.KindUint, snapshot.KindDecimal:
		return true
	case snapshot.KindDate, snapshot.KindDateTime:
		return c.dataType == "date" || c.dataType == "datetime"
	case snapshot.KindBytes:
		return c.dataType == "binary" || c.dataType == "varbinary"
	}
	return false
}

// ChunkChecksum implements source.Checksummer: the rows and the XOR of their
// checksums for keys after lo (nil: from the first) up to hi included
// (nil: to the last).
func (t *mysqlTable) ChunkChecksum(ctx context.Context, lo, hi []snapshot.Value) (int64, uint64, error) {
	expr, _ := t.rowChecksumExpr()
	keys := make([]source.KeysetColumn, len(t.keyIdx))
	for j, i := range t.keyIdx {
		c := &t.cols[i]
		keys[j] = source.KeysetColumn{Expr: c.keyExpr(), Placeholder: c.keyPlaceholder()}
	}
	q := "SELECT COUNT(*), COALESCE(BIT_XOR(" + expr + "), 0) FROM " + t.qualified()
	var where []string
	var args []any
	if lo != nil {
		where, args = append(where, "("+source.AfterKey(keys)+")"), append(args, source.KeysetArgs(t.keyArgs(lo))...)
	}
	if hi != nil {
		where, args = append(where, "("+source.UpToKey(keys)+")"), append(args, source.UpToArgs(t.keyArgs(hi))...)
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	var rows int64
	var crc uint64
	if err := t.conn.QueryRowContext(ctx, q, args...).Scan(&rows, &crc); err != nil {
		return 0, 0, fmt.Errorf("checksum of a range of %s: %w", t.qualified(), wrapMySQLErr(ctx, err))
	}
	return rows, crc, nil
}

// ReadRange implements source.Checksummer: the next rows are those of the keys
// after lo up to hi included (nil: no bound).
func (t *mysqlTable) ReadRange(lo, hi []snapshot.Value) {
	t.SetRange(t.keyArgs(lo), t.keyArgs(hi))
}

// keyArgs is the query arguments of a key's values (nil for nil).
func (t *mysqlTable) keyArgs(key []snapshot.Value) []any {
	if key == nil {
		return nil
	}
	out := make([]any, len(key))
	for j, i := range t.keyIdx {
		out[j] = t.cols[i].keyArg(key[j])
	}
	return out
}
