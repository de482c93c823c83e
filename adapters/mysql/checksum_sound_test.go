package mysql

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// openChecksummer opens table of src as a chunkable Checksummer.
func openChecksummer(t *testing.T, src source.Source, table string, chunkRows int) (source.TableReader, source.Checksummer) {
	t.Helper()
	tr, err := src.OpenTable(context.Background(), source.TableRequest{Resource: table, ChunkRows: chunkRows})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	cs := tr.(source.Checksummer)
	if !cs.Chunkable() {
		t.Fatalf("%s is not chunkable", table)
	}
	return tr, cs
}

// TestMySQLChecksumSound: the signature or the checksum of a table
// changes with every change a read would see, each on its own, on the
// real MariaDB. (A DOUBLE -0 reads as 0 on MariaDB 10.11, its text and
// its HEX alike: the read sees no change there.)
func TestMySQLChecksumSound(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "cksd")
	src := e.openSource(t, db)
	cases := []struct {
		name           string
		before, change []string
		schema         bool // the signature changes (else the checksum)
	}{
		{name: "two rows swap values", change: []string{"UPDATE %s SET a = IF(id = 1, 'y', 'x')"}},
		{name: "a character moves between adjacent columns", change: []string{"UPDATE %s SET a = 'xa', b = 'b' WHERE id = 1"}},
		{name: "NULL against the empty string", before: []string{"UPDATE %s SET a = '' WHERE id = 2"}, change: []string{"UPDATE %s SET a = NULL WHERE id = 2"}},
		{name: "NULL moves between columns", before: []string{"UPDATE %s SET a = NULL, b = 'q' WHERE id = 2"}, change: []string{"UPDATE %s SET a = 'q', b = NULL WHERE id = 2"}},
		{name: "a float's last bit", change: []string{"UPDATE %s SET f = 1.0000000000000002 WHERE id = 1"}},
		{name: "a FLOAT's last bit", before: []string{"UPDATE %s SET s = 1.0000001 WHERE id = 1"}, change: []string{"UPDATE %s SET s = 1.0000002 WHERE id = 1"}},
		{name: "a float's sign", change: []string{"UPDATE %s SET f = -1.0 WHERE id = 1"}},
		{name: "a decimal's value", change: []string{"UPDATE %s SET n = 1.001 WHERE id = 1"}},
		{name: "a generated column's expression", change: []string{"ALTER TABLE %s MODIFY g INT AS (id + id) VIRTUAL"}, schema: true},
		{name: "a column added", change: []string{"ALTER TABLE %s ADD COLUMN z INT"}, schema: true},
		{name: "a column retyped", change: []string{"ALTER TABLE %s MODIFY b VARCHAR(20)"}, schema: true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl := fmt.Sprintf("t%d", i)
			stmts := func(s []string) []string {
				var out []string
				for _, q := range s {
					out = append(out, strings.ReplaceAll(q, "%s", tbl))
				}
				return out
			}
			e.exec(t, db, fmt.Sprintf("CREATE TABLE %s (id INT PRIMARY KEY, a VARCHAR(10) NULL, b VARCHAR(10) NULL, f DOUBLE, s FLOAT, n DECIMAL(8,3), g INT AS (id * 2) VIRTUAL)", tbl),
				fmt.Sprintf("INSERT INTO %s (id, a, b, f, n) VALUES (1, 'x', 'ab', 1.0, 1.0), (2, 'y', 'c', 0, 2)", tbl))
			e.exec(t, db, stmts(c.before)...)
			tr1, cs1 := openChecksummer(t, src, tbl, 0)
			sig1 := cs1.ChecksumSignature()
			rows1, crc1, err := cs1.ChunkChecksum(ctx, nil, nil)
			if err != nil || rows1 != 2 {
				t.Fatalf("checksum: %d rows, %v", rows1, err)
			}
			tr1.Close() // its snapshot holds a lock that ALTER TABLE waits for
			e.exec(t, db, stmts(c.change)...)
			_, cs2 := openChecksummer(t, src, tbl, 0)
			sig2 := cs2.ChecksumSignature()
			rows2, crc2, err := cs2.ChunkChecksum(ctx, nil, nil)
			if err != nil || rows2 != 2 {
				t.Fatalf("checksum after the change: %d rows, %v", rows2, err)
			}
			if c.schema && sig1 == sig2 {
				t.Errorf("the signature did not change")
			}
			if !c.schema && (sig1 != sig2 || crc1 == crc2) {
				t.Errorf("signature %s -> %s, checksum %x -> %x; want the same signature and another checksum", sig1, sig2, crc1, crc2)
			}
		})
	}
}

// TestMySQLChecksumCompositeKey: a VARBINARY and INT key cuts ranges
// whose checksums count their rows, and a range read gives exactly those
// rows, a chunk at a time; a key of a text column under a collation is
// not chunkable.
func TestMySQLChecksumCompositeKey(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "cksk")
	e.exec(t, db, "CREATE TABLE t (k VARBINARY(10), n INT, v VARCHAR(10), PRIMARY KEY (k, n))",
		"INSERT INTO t VALUES ('a', 1, 'p'), ('a', 2, 'q'), ('b', 1, 'r'), ('b', 3, 's'), ('c', 0, 't')",
		"CREATE TABLE ci (k VARCHAR(10) PRIMARY KEY, v INT)")
	src := e.openSource(t, db)
	tr, cs := openChecksummer(t, src, "t", 1)
	key := func(k string, n int64) []snapshot.Value {
		return []snapshot.Value{{Kind: snapshot.KindBytes, Bytes: []byte(k)}, {Kind: snapshot.KindInt, Int: n}}
	}
	lo, hi := key("a", 1), key("b", 3)
	if rows, _, err := cs.ChunkChecksum(ctx, lo, hi); err != nil || rows != 3 {
		t.Errorf("range (a 1, b 3]: %d rows, %v", rows, err)
	}
	read := func() string {
		var got []string
		for tr.Next(ctx) {
			v := tr.Values()
			got = append(got, fmt.Sprintf("%s%d", v[0].Bytes, v[1].Int))
		}
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, " ")
	}
	cs.ReadRange(lo, hi)
	if got := read(); got != "a2 b1 b3" {
		t.Errorf("range read: %s", got)
	}
	cs.ReadRange(hi, nil)
	if got := read(); got != "c0" {
		t.Errorf("open range read: %s", got)
	}
	cs.ReadRange(nil, key("a", 2))
	if got := read(); got != "a1 a2" {
		t.Errorf("range read from the first key: %s", got)
	}
	ci, err := src.OpenTable(ctx, source.TableRequest{Resource: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	defer ci.Close()
	if ci.(source.Checksummer).Chunkable() {
		t.Error("a VARCHAR key under a collation is chunkable")
	}
}
