package postgres

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
	if ok, why := cs.Chunkable(); !ok {
		t.Fatalf("%s is not chunkable: %s", table, why)
	}
	return tr, cs
}

// TestPostgresChecksumSound: the signature or the checksum of a table
// changes with every change a read would see, each on its own.
func TestPostgresChecksumSound(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "cks")
	src := e.openSource(t, db)
	cases := []struct {
		name           string
		before, change []string
		schema         bool // the signature changes (else the checksum)
	}{
		{name: "two rows swap values", change: []string{"UPDATE %s SET a = CASE id WHEN 1 THEN 'y' ELSE 'x' END"}},
		{name: "a character moves between adjacent columns", change: []string{"UPDATE %s SET a = 'xa', b = 'b' WHERE id = 1"}},
		{name: "NULL against the empty string", before: []string{"UPDATE %s SET a = '' WHERE id = 2"}, change: []string{"UPDATE %s SET a = NULL WHERE id = 2"}},
		{name: "NULL moves between columns", before: []string{"UPDATE %s SET a = NULL, b = 'q' WHERE id = 2"}, change: []string{"UPDATE %s SET a = 'q', b = NULL WHERE id = 2"}},
		{name: "a float's last bit", change: []string{"UPDATE %s SET f = 1.0000000000000002 WHERE id = 1"}},
		{name: "-0 against 0", change: []string{"UPDATE %s SET f = '-0' WHERE id = 2"}},
		{name: "a numeric's scale", change: []string{"UPDATE %s SET n = 1.00 WHERE id = 1"}},
		{name: "an array's order", change: []string{"UPDATE %s SET arr = '{2,1}' WHERE id = 1"}},
		{name: "a jsonb number's text", change: []string{`UPDATE %s SET j = '{"a": 1.0}' WHERE id = 1`}},
		{name: "an enum label renamed", before: []string{"UPDATE %s SET m = 'lo' WHERE id = 1"}, change: []string{"ALTER TYPE mood RENAME VALUE 'lo' TO 'low'"}},
		{name: "a label of an enum under a domain renamed", before: []string{"UPDATE %s SET dm = 'up' WHERE id = 1"}, change: []string{"ALTER TYPE spin RENAME VALUE 'up' TO 'upward'"}},
		{name: "a character(n)'s last character", change: []string{"UPDATE %s SET c = 'ab' WHERE id = 1"}},
		{name: "a bpchar's trailing space", change: []string{"UPDATE %s SET bp = 'a ' WHERE id = 1"}},
		{name: "a generated column's expression", change: []string{"ALTER TABLE %s DROP COLUMN g", "ALTER TABLE %s ADD COLUMN g int GENERATED ALWAYS AS (id + id) STORED"}, schema: true},
		{name: "a column added", change: []string{"ALTER TABLE %s ADD COLUMN z int"}, schema: true},
		{name: "a column retyped", change: []string{"ALTER TABLE %s ALTER COLUMN b TYPE varchar(10)"}, schema: true},
	}
	e.exec(t, db, "CREATE TYPE mood AS ENUM ('lo', 'hi')", "CREATE TYPE spin AS ENUM ('up', 'down')", "CREATE DOMAIN spin_d AS spin")
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
			e.exec(t, db, fmt.Sprintf("CREATE TABLE %s (id int PRIMARY KEY, a text, b text, f float8, n numeric, arr int[], j jsonb, m mood, dm spin_d, c char(3), bp bpchar, g int GENERATED ALWAYS AS (id * 2) STORED)", tbl),
				fmt.Sprintf(`INSERT INTO %s (id, a, b, f, n, arr, j, c, bp) VALUES (1, 'x', 'ab', 1.0, 1.0, '{1,2}', '{"a": 1}', 'a', 'a'), (2, 'y', 'c', 0, 2, NULL, NULL, NULL, NULL)`, tbl))
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

// TestPostgresChecksumRanges: inside a reader's snapshot the checksums
// keep the snapshot's values while another session commits a change; a
// composite text and integer key cuts ranges whose checksums count their
// rows, and a range read gives exactly those rows, a chunk at a time.
func TestPostgresChecksumRanges(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "ckr")
	src := e.openSource(t, db)
	e.exec(t, db, "CREATE TABLE t (k text, n int, v text, PRIMARY KEY (k, n))",
		"INSERT INTO t VALUES ('a', 1, 'p'), ('a', 2, 'q'), ('b', 1, 'r'), ('b', 3, 's'), ('c', 0, 't')")
	tr, cs := openChecksummer(t, src, "t", 1)
	_, all, err := cs.ChunkChecksum(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.exec(t, db, "UPDATE t SET v = 'changed' WHERE k = 'b' AND n = 1")
	if rows, crc, err := cs.ChunkChecksum(ctx, nil, nil); err != nil || rows != 5 || crc != all {
		t.Errorf("checksum inside the snapshot after another session's commit: %d %x %v; want 5 %x", rows, crc, err, all)
	}
	key := func(k string, n int64) []snapshot.Value {
		return []snapshot.Value{{Kind: snapshot.KindString, Bytes: []byte(k)}, {Kind: snapshot.KindInt, Int: n}}
	}
	lo, hi := key("a", 1), key("b", 3)
	rows, before, err := cs.ChunkChecksum(ctx, lo, hi)
	if err != nil || rows != 3 {
		t.Errorf("range (a 1, b 3]: %d rows, %v", rows, err)
	}
	cs.ReadRange(lo, hi)
	var got []string
	for tr.Next(ctx) {
		v := tr.Values()
		got = append(got, fmt.Sprintf("%s%d", v[0].Bytes, v[1].Int))
	}
	if err := tr.Err(); err != nil || fmt.Sprint(got) != "[a2 b1 b3]" {
		t.Errorf("range read: %v %v", got, err)
	}
	cs.ReadRange(hi, nil)
	got = got[:0]
	for tr.Next(ctx) {
		v := tr.Values()
		got = append(got, fmt.Sprintf("%s%d", v[0].Bytes, v[1].Int))
	}
	if err := tr.Err(); err != nil || fmt.Sprint(got) != "[c0]" {
		t.Errorf("open range read: %v %v", got, err)
	}
	_, cs2 := openChecksummer(t, src, "t", 1)
	if _, crc, _ := cs2.ChunkChecksum(ctx, lo, hi); crc == before {
		t.Error("a later reader's checksum did not change")
	}
}
