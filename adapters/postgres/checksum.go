package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// Checksums PostgreSQL computes inside the read's REPEATABLE READ snapshot
// (adapters/checksums.go says how runs use them): a key range's count(*)
// and bit_xor of a 64-bit hash of each row, hash_record_extended over a
// row of the table's columns (PostgreSQL 14 and later). Each column is
// hashed by its type's extended hash function from its binary value, with
// no text formatted, where that hash tells apart every two values whose
// text differs:
//
//   - integers, oid, bool, date, timestamp, timestamptz, uuid and bytea
//     as they are;
//   - text and varchar under COLLATE "C", which hashes the bytes (a
//     nondeterministic collation's hash would make 'a' and 'A' alike);
//   - float4, float8 and numeric by their binary send form (float8send,
//     numeric_send), a bytea: the float hash makes -0 and 0 alike, the
//     numeric hash 1.0 and 1.00;
//   - character(n) and enums by their send form too (bpcharsend,
//     enum_send: the bytes as stored, the label): bpchar's hash ignores
//     trailing spaces, an enum's hashes its OID, which a renamed label
//     keeps;
//   - every other column (arrays, json, interval, whose hashes equate
//     values of different text, and types with no hash) together by
//     record_send of a row of them, the exact binary send form.
//
// A row's hash combines its columns' hashes in order (h = 31h + column's),
// a NULL column as 0, so NULL differs from '' and NULL in one column from
// NULL in another; the hashes are not linear in the values, so the XOR
// over rows changes when two rows swap values (a CRC would not). On the
// 200k-row table of docs/benchmarks.md this hash takes about 0.3 of the
// time of hashtextextended over each row's text, and a tenth of md5 of it.
//
// Generated columns are STORED: their values are in the row; the signature
// holds each one's expression, as it does each column's type and collation.
//
// Chunk checksums need a key whose order the source and snapstore agree
// on (keyOrderAgrees), of one or more columns.

// pgChecksumVersion names the row expression; it is part of the signature.
const pgChecksumVersion = "hash_record_extended-send-2"

// pgChecksumInfo is what the checksums need of the catalog beyond the
// columns the read describes, read once inside the read's transaction.
type pgChecksumInfo struct {
	ok        bool     // the server has hash_record_extended (14+)
	collation []string // each column's collation name, "" for none
	generated []string // each column's generation expression, "" for none
	dbCollate string   // the database's default collation (datcollate)
}

// checksumInfo loads pgChecksumInfo on first use; on error the table has
// no chunk checksums.
func (t *pgTable) checksumInfo() *pgChecksumInfo {
	t.cksOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		info := &pgChecksumInfo{}
		var version int
		if err := t.conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int,
				(SELECT datcollate::text FROM pg_database WHERE datname = current_database())`).Scan(&version, &info.dbCollate); err != nil {
			return
		}
		rows, err := t.conn.Query(ctx, `SELECT COALESCE(co.collname::text, ''),
				CASE WHEN a.attgenerated <> '' THEN COALESCE(pg_get_expr(d.adbin, d.adrelid), '?') ELSE '' END
			FROM pg_attribute a
			LEFT JOIN pg_collation co ON co.oid = a.attcollation
			LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, t.oid)
		if err != nil {
			return
		}
		for rows.Next() {
			var coll, gen string
			if err := rows.Scan(&coll, &gen); err != nil {
				rows.Close()
				return
			}
			info.collation = append(info.collation, coll)
			info.generated = append(info.generated, gen)
		}
		rows.Close()
		if rows.Err() != nil || len(info.collation) != len(t.cols) {
			return
		}
		info.ok = version >= 140000
		t.cks = info
	})
	if t.cks == nil {
		return &pgChecksumInfo{}
	}
	return t.cks
}

// rowChecksumExpr is the SQL of one row's checksum (the comment above).
func (t *pgTable) rowChecksumExpr() string {
	var cols, rest []string
	for _, c := range t.cols {
		q := quotePostgresIdent(c.name)
		native := ""
		if c.baseSchema == "pg_catalog" && c.baseTypcategory != "A" {
			switch c.baseName {
			case "int2", "int4", "int8", "oid", "bool", "date", "timestamp", "timestamptz", "uuid", "bytea":
				native = q + "::pg_catalog." + c.baseName
			case "text", "varchar":
				native = q + "::pg_catalog.text COLLATE \"C\""
			case "float4":
				native = "pg_catalog.float4send(" + q + ")"
			case "float8":
				native = "pg_catalog.float8send(" + q + ")"
			case "numeric":
				native = "pg_catalog.numeric_send(" + q + ")"
			case "bpchar":
				native = "pg_catalog.bpcharsend(" + q + ")"
			}
		}
		if c.baseTyptype == "e" && c.baseTypcategory != "A" {
			// A domain over an enum is cast to the enum, which anyenum
			// takes.
			native = "pg_catalog.enum_send(" + q + "::" + quotePostgresIdent(c.baseSchema) + "." + quotePostgresIdent(c.baseName) + ")"
		}
		if native == "" {
			rest = append(rest, q)
			continue
		}
		cols = append(cols, native)
	}
	if len(rest) > 0 {
		cols = append(cols, "pg_catalog.record_send(ROW("+strings.Join(rest, ", ")+"))")
	}
	return "pg_catalog.hash_record_extended(ROW(" + strings.Join(cols, ", ") + "), 0)"
}

// ChecksumSignature implements source.Checksummer: the expression, the
// columns with their types, collations and generation expressions, and
// the key.
func (t *pgTable) ChecksumSignature() string {
	info := t.checksumInfo()
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", pgChecksumVersion, t.rowChecksumExpr())
	for i, c := range t.cols {
		var coll, gen string
		if i < len(info.collation) {
			coll, gen = info.collation[i], info.generated[i]
		}
		fmt.Fprintf(h, "%q %q %v %q %q\n", c.name, c.typeName, c.nullable, coll, gen)
	}
	fmt.Fprintf(h, "key %q\n", t.TableSchema.Key)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// Chunkable implements source.Checksummer.
func (t *pgTable) Chunkable() (bool, string) {
	info := t.checksumInfo()
	switch {
	case !info.ok:
		return false, "the server's hash_record_extended (PostgreSQL 14 or later) or its catalog could not be used"
	case len(t.keyIdx) == 0:
		return false, "the table has no key"
	}
	if why := source.RangesRefused(t.TableSchema, t.Unique); why != "" {
		return false, why
	}
	for _, i := range t.keyIdx {
		if !t.keyOrderAgrees(i, info) {
			c := &t.cols[i]
			typ := c.typeName
			switch coll := info.collation[i]; coll {
			case "":
			case "default":
				typ += ", the database's collation " + info.dbCollate
			default:
				typ += ", collation " + coll
			}
			return false, source.KeyOrderRefused(c.name, typ, "integers, numeric, bool, uuid, bytea, or text under the C collation")
		}
	}
	return true, ""
}

// keyOrderAgrees reports whether key column i orders as snapstore's key
// encoding of its values does: integers, oid, bool and numeric by value,
// uuid (its lower-case text orders as its bytes), bytea (bytewise), and
// text and varchar under a collation that orders by the bytes of UTF-8:
// C, POSIX, ucs_basic, C.UTF-8 (code point order, which UTF-8's bytes
// keep), or the default one when the database's is one of those. Dates
// and timestamps are left out: their text orders wrongly before year 1
// and for infinity.
func (t *pgTable) keyOrderAgrees(i int, info *pgChecksumInfo) bool {
	c := &t.cols[i]
	if c.baseSchema != "pg_catalog" || c.baseTypcategory == "A" {
		return false
	}
	switch c.baseName {
	case "int2", "int4", "int8", "oid", "bool", "numeric", "uuid", "bytea":
		return true
	case "text", "varchar":
		coll := info.collation[i]
		if coll == "default" {
			coll = info.dbCollate
		}
		switch strings.ToLower(coll) {
		case "c", "posix", "ucs_basic", "c.utf-8", "c.utf8":
			return true
		}
	}
	return false
}

// ChunkChecksum implements source.Checksummer: the rows and the XOR of their
// checksums for keys after lo (nil: from the first) up to hi included
// (nil: to the last).
func (t *pgTable) ChunkChecksum(ctx context.Context, lo, hi []snapshot.Value) (int64, uint64, error) {
	var keys []string
	for _, i := range t.keyIdx {
		keys = append(keys, quotePostgresIdent(t.cols[i].name))
	}
	row := "(" + strings.Join(keys, ", ") + ")"
	q := "SELECT count(*), COALESCE(bit_xor(" + t.rowChecksumExpr() + "), 0) FROM " + t.qualified()
	var where []string
	var args []any
	bound := func(op string, key []snapshot.Value) {
		var ph []string
		for j, i := range t.keyIdx {
			args = append(args, pgKeyText(key[j]))
			ph = append(ph, t.cols[i].keyPlaceholder(len(args)))
		}
		where = append(where, row+" "+op+" ("+strings.Join(ph, ", ")+")")
	}
	if lo != nil {
		bound(">", lo)
	}
	if hi != nil {
		bound("<=", hi)
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	var rows, crc int64
	if err := t.conn.QueryRow(ctx, q, args...).Scan(&rows, &crc); err != nil {
		return 0, 0, fmt.Errorf("checksum of a range of %s: %w", t.Name, wrapPostgresErr(ctx, err))
	}
	return rows, uint64(crc), nil
}

// ReadRange implements source.Checksummer: the next rows are those of the
// keys after lo up to hi included (nil: no bound).
func (t *pgTable) ReadRange(lo, hi []snapshot.Value) {
	t.SetRange(pgKeyArgs(lo), pgKeyArgs(hi))
}

// pgKeyArgs is the cursor of a key: the text of each value (RowCursor).
func pgKeyArgs(key []snapshot.Value) []any {
	if key == nil {
		return nil
	}
	out := make([]any, len(key))
	for j, v := range key {
		out[j] = pgKeyText(v)
	}
	return out
}

// pgKeyText is the text of a key value that keyPlaceholder casts back to
// the column's type: the server's own text (bool as 0 or 1, bytea in hex
// form).
func pgKeyText(v snapshot.Value) string {
	switch v.Kind {
	case snapshot.KindInt:
		return strconv.FormatInt(v.Int, 10)
	case snapshot.KindUint:
		return strconv.FormatUint(v.Uint, 10)
	case snapshot.KindBytes:
		return `\x` + hex.EncodeToString(v.Bytes)
	}
	return string(v.Bytes)
}

var _ source.Checksummer = (*pgTable)(nil)

// cksState is the lazily loaded checksum catalog of a pgTable.
type cksState struct {
	cksOnce sync.Once
	cks     *pgChecksumInfo
}
