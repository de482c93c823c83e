package adapters

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/snapshot"
)

// Checksums MySQL and MariaDB compute inside the read's consistent snapshot
// (checksums.go says how runs use them):
//
//   - the whole table's: CHECKSUM TABLE, which InnoDB computes from the
//     stored rows with a consistent read of the transaction's snapshot
//     (TestMySQLChecksumInSnapshot pins this on MariaDB);
//   - a key range's: COUNT(*) and BIT_XOR(CRC32(...)) of each row's text,
//     the technique of pt-table-checksum: CONCAT_WS('#', the columns, a
//     number whose bits say which nullable columns are NULL), so that NULL
//     and '' differ.
//
// Chunk checksums need a key the ranges can be written with and whose
// order the source and snapstore agree on: one integer column (signed or
// not) of a declared unique key, the common primary key. Other keys get
// the whole table's checksum only.

// mysqlChecksumVersion names the row expression; it is part of the
// signature, so a digest of another expression is never compared.
const mysqlChecksumVersion = "crc32-concat_ws-nullmask-1"

// maxNullMask is the most nullable columns the null mask holds (a BIGINT).
const maxNullMask = 62

// rowChecksumExpr is the SQL of one row's checksum.
func (t *mysqlTable) rowChecksumExpr() (string, bool) {
	var cols, nulls []string
	for _, c := range t.cols {
		q := quoteMySQLIdent(c.name)
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
	return "CRC32(CONCAT_WS('#', " + strings.Join(cols, ", ") + ", " + strings.Join(nulls, " + ") + "))", true
}

// checksumSignature implements checksummer: the expression, the columns
// with their types and the key.
func (t *mysqlTable) checksumSignature() string {
	expr, _ := t.rowChecksumExpr()
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", mysqlChecksumVersion, expr)
	for _, c := range t.cols {
		fmt.Fprintf(h, "%s %s %v\n", c.name, c.columnType, c.nullable)
	}
	fmt.Fprintf(h, "key %v\n", t.schema.Key)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// chunkable implements checksummer.
func (t *mysqlTable) chunkable() bool {
	if len(t.keyIdx) != 1 || !t.unique {
		return false
	}
	if _, ok := t.rowChecksumExpr(); !ok {
		return false
	}
	c := &t.cols[t.keyIdx[0]]
	return (c.kind == snapshot.KindInt || c.kind == snapshot.KindUint) && !c.bit
}

// tableChecksum implements checksummer: CHECKSUM TABLE inside the read's
// transaction.
func (t *mysqlTable) tableChecksum(ctx context.Context) (string, error) {
	var name string
	var sum sql.NullString
	if err := t.conn.QueryRowContext(ctx, "CHECKSUM TABLE "+t.qualified()).Scan(&name, &sum); err != nil {
		return "", fmt.Errorf("checksum of %s: %w", t.qualified(), wrapSourceErr(ctx, err))
	}
	if !sum.Valid {
		return "", fmt.Errorf("checksum of %s: the server returned none", t.qualified())
	}
	return sum.String, nil
}

// chunkChecksum implements checksummer: the rows and the XOR of their
// checksums for keys after lo (nil: from the first) up to hi included
// (nil: to the last).
func (t *mysqlTable) chunkChecksum(ctx context.Context, lo, hi *snapshot.Value) (int64, uint64, error) {
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
		return 0, 0, fmt.Errorf("checksum of a range of %s: %w", t.qualified(), wrapSourceErr(ctx, err))
	}
	return rows, crc, nil
}

// readRange implements checksummer: the next rows are those of the keys
// after lo up to hi included (nil: no bound).
func (t *mysqlTable) readRange(lo, hi *snapshot.Value) {
	var l, h any
	if lo != nil {
		l = keyValueArg(*lo)
	}
	if hi != nil {
		h = keyValueArg(*hi)
	}
	t.setRange(l, h)
}

// keyValueArg is the query argument of an integer key value.
func keyValueArg(v snapshot.Value) any {
	if v.Kind == snapshot.KindUint {
		return v.Uint
	}
	return v.Int
}

// digestKey and parseDigestKey convert an integer key value to and from the
// text a digest stores (JSON numbers would round beyond 2^53).
func digestKey(v snapshot.Value) string {
	if v.Kind == snapshot.KindUint {
		return "u" + strconv.FormatUint(v.Uint, 10)
	}
	return strconv.FormatInt(v.Int, 10)
}

func parseDigestKey(s string) (snapshot.Value, error) {
	if u, ok := strings.CutPrefix(s, "u"); ok {
		n, err := strconv.ParseUint(u, 10, 64)
		return snapshot.Value{Kind: snapshot.KindUint, Uint: n}, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return snapshot.Value{Kind: snapshot.KindInt, Int: n}, err
}
