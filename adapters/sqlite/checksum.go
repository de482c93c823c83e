package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// Checksums of SQLite key ranges, computed inside the read transaction
// (adapters/checksums.go says how runs use them): a range's rows and the
// sum modulo 2^64 of xxhash64 over each row's values as the read converts
// them (sqliteColumn.Convert), each column's kind, then its exact payload:
// an integer's or a float's 64 bits (so -0 and 0, and a float's last bit,
// differ), or the bytes after their length (so a character moving between
// adjacent columns changes the row); NULL is its kind alone, which differs
// from the empty string's. The hash is not linear, so the sum changes when
// two rows swap values.
//
// SQLite has no hash function of its own, and one registered with the
// driver would run in this process all the same: the database is a file
// the process reads, so a checksum cannot save a transfer, only the run's
// work on each row (comparing it with the current version, writing the
// new one). The checksum therefore reads the range's rows in the read's
// transaction and hashes the values the read would put; a change that the
// read's conversion does not see (a DATETIME text written in another
// form of the same time) is no change to the dataset either.
//
// The signature is the table's CREATE statement as sqlite_schema holds
// it, which names every column, its declared type and every generated
// column's expression.
//
// Chunk checksums need a key whose order SQLite and snapstore agree on:
// INTEGER columns, and text columns whose key index compares them with
// the BINARY collation (bytewise, as snapstore's key encoding).

// sqliteChecksumVersion names the row hash; it is part of the signature.
const sqliteChecksumVersion = "xxhash64-values-1"

// checksumInfo reads what the checksums need of the schema on first use:
// the table's CREATE statement and whether every key column orders as
// snapstore does. On error the table has no chunk checksums.
func (t *sqliteTable) checksumInfo(ctx context.Context) (sig, why string) {
	if t.cksDone {
		return t.cksSig, t.cksWhy
	}
	t.cksDone = true
	var create sql.NullString
	if err := t.tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?`, t.Resource.Name).Scan(&create); err != nil || !create.Valid {
		t.cksWhy = "the table's definition could not be read"
		return "", t.cksWhy
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\nkey %q\n", sqliteChecksumVersion, create.String, t.TableSchema.Key)
	t.cksSig = hex.EncodeToString(h.Sum(nil)[:12])
	t.cksWhy = t.rangesRefused(ctx)
	return t.cksSig, t.cksWhy
}

// rangesRefused says why the table's key allows no ranges, "" when it
// does: a key SQLite orders as snapstore does, of INTEGER columns and of
// TEXT ones compared bytewise (BINARY) by the unique indexes over them.
func (t *sqliteTable) rangesRefused(ctx context.Context) string {
	if len(t.keyIdx) == 0 {
		return "the table has no key"
	}
	if why := source.RangesRefused(t.TableSchema, t.Unique); why != "" {
		return why
	}
	for _, i := range t.keyIdx {
		switch c := &t.cols[i]; c.kind {
		case snapshot.KindInt:
		case snapshot.KindString:
			if !t.binaryKeyColumn(ctx, c.name) {
				return fmt.Sprintf("no unique index compares key column %s with the BINARY collation, by its bytes", c.name)
			}
		default:
			return source.KeyOrderRefused(c.name, c.decl, "INTEGER, or TEXT under the BINARY collation")
		}
	}
	return ""
}

// binaryKeyColumn reports whether the unique indexes over column name
// compare it with the BINARY collation (and at least one does).
func (t *sqliteTable) binaryKeyColumn(ctx context.Context, name string) bool {
	rows, err := t.tx.QueryContext(ctx, `SELECT x.coll FROM pragma_index_list(?) il, pragma_index_xinfo(il.name) x
		WHERE il."unique" = 1 AND x.key = 1 AND x.name = ?`, t.Resource.Name, name)
	if err != nil {
		return false
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		var coll string
		if rows.Scan(&coll) != nil || !strings.EqualFold(coll, "BINARY") {
			return false
		}
		found = true
	}
	return found && rows.Err() == nil
}

// ChecksumSignature implements source.Checksummer.
func (t *sqliteTable) ChecksumSignature() string {
	sig, _ := t.checksumInfo(context.Background())
	return sig
}

// Chunkable implements source.Checksummer.
func (t *sqliteTable) Chunkable() (bool, string) {
	_, why := t.checksumInfo(context.Background())
	return why == "", why
}

// ChunkChecksum implements source.Checksummer: the rows and the sum of
// their hashes for keys after lo (nil: from the first) up to hi included
// (nil: to the last).
func (t *sqliteTable) ChunkChecksum(ctx context.Context, lo, hi []snapshot.Value) (int64, uint64, error) {
	var sel, keys []string
	for _, c := range t.cols {
		sel = append(sel, quoteSQLiteIdent(c.name))
	}
	for _, i := range t.keyIdx {
		keys = append(keys, quoteSQLiteIdent(t.cols[i].name))
	}
	row := "(" + strings.Join(keys, ", ") + ")"
	ph := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(keys)), ", ") + ")"
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + quoteSQLiteIdent(t.Resource.Name)
	var where []string
	var args []any
	if lo != nil {
		where, args = append(where, row+" > "+ph), append(args, sqliteKeyArgs(lo)...)
	}
	if hi != nil {
		where, args = append(where, row+" <= "+ph), append(args, sqliteKeyArgs(hi)...)
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	fail := func(err error) (int64, uint64, error) {
		return 0, 0, fmt.Errorf("checksum of a range of %s: %w", t.Resource.Name, err)
	}
	rs, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return fail(err)
	}
	defer rs.Close()
	raw, dest := source.ScanBuffers[any](len(t.cols))
	vals := make([]snapshot.Value, len(t.cols))
	var rows int64
	var sum uint64
	var buf []byte
	for rs.Next() {
		if err := rs.Scan(dest...); err != nil {
			return fail(err)
		}
		if err := source.ConvertRow(t.cols, raw, vals); err != nil {
			return fail(err)
		}
		buf = appendRowHashInput(buf[:0], vals)
		sum += xxhash.Sum64(buf)
		rows++
	}
	if err := rs.Err(); err != nil {
		return fail(err)
	}
	return rows, sum, nil
}

// appendRowHashInput appends what a row's hash is computed over (the
// comment at the top).
func appendRowHashInput(dst []byte, vals []snapshot.Value) []byte {
	for _, v := range vals {
		dst = append(dst, byte(v.Kind))
		switch v.Kind {
		case snapshot.KindNull:
		case snapshot.KindInt:
			dst = binary.BigEndian.AppendUint64(dst, uint64(v.Int))
		case snapshot.KindUint:
			dst = binary.BigEndian.AppendUint64(dst, v.Uint)
		case snapshot.KindFloat:
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v.Float))
		default:
			dst = binary.AppendUvarint(dst, uint64(len(v.Bytes)))
			dst = append(dst, v.Bytes...)
		}
	}
	return dst
}

// ReadRange implements source.Checksummer: the next rows are those of the
// keys after lo up to hi included (nil: no bound).
func (t *sqliteTable) ReadRange(lo, hi []snapshot.Value) {
	t.SetRange(sqliteKeyArgs(lo), sqliteKeyArgs(hi))
}

// sqliteKeyArgs is the query arguments of a key (nil for nil): integers
// and text, the kinds of a chunkable key.
func sqliteKeyArgs(key []snapshot.Value) []any {
	if key == nil {
		return nil
	}
	out := make([]any, len(key))
	for j, v := range key {
		if v.Kind == snapshot.KindInt {
			out[j] = v.Int
		} else {
			out[j] = string(v.Bytes)
		}
	}
	return out
}
