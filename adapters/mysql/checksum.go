package mysql

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

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
// order the source and snapstore agree on: one integer column (signed or
// not) of a declared unique key, the common primary key. Other tables are
// read in full every run.
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
		cols = append(cols, q)
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
	if len(t.keyIdx) != 1 || !t.Unique {
		return false
	}
	if _, ok := t.rowChecksumExpr(); !ok {
		return false
	}
	c := &t.cols[t.keyIdx[0]]
	return (c.kind == snapshot.KindInt || c.kind == snapshot.KindUint) && !c.bit
}

// ChunkChecksum implements source.Checksummer: the rows and the XOR of their
// checksums for keys after lo (nil: from the first) up to hi included
// (nil: to the last).
func (t *mysqlTable) ChunkChecksum(ctx context.Context, lo, hi *snapshot.Value) (int64, uint64, error) {
	expr, _ := t.rowChecksumExpr()
	k := quoteMySQLIdent(t.cols[t.keyIdx[0]].name)
	q := "SELECT COUNT(*), COALESCE(BIT_XOR(" + expr + "), 0) FROM " + t.qualified()
	var where []string
	var args []any
	if lo != nil {
		where, args = append(where, k+" > ?"), append(args, keyValueArg(*lo))
	}
	if hi != nil {
		where, args = append(where, k+" <= ?"), append(args, keyValueArg(*hi))
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
func (t *mysqlTable) ReadRange(lo, hi *snapshot.Value) {
	var l, h any
	if lo != nil {
		l = keyValueArg(*lo)
	}
	if hi != nil {
		h = keyValueArg(*hi)
	}
	t.SetRange(l, h)
}

// keyValueArg is the query argument of an integer key value.
func keyValueArg(v snapshot.Value) any {
	if v.Kind == snapshot.KindUint {
		return v.Uint
	}
	return v.Int
}
