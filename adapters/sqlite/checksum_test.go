package sqlite

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// openChecksummer opens table of the database at path as a chunkable
// Checksummer; close ends its read.
func openChecksummer(t testing.TB, path, table string, chunkRows int) (tr source.TableReader, cs source.Checksummer, close func()) {
	t.Helper()
	ctx := context.Background()
	src, err := sqliteConnector{}.Open(ctx, source.SourceConfig{Name: "test", Options: source.OptionValues{"path": path}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tr, err = src.OpenTable(ctx, source.TableRequest{Resource: table, ChunkRows: chunkRows})
	if err != nil {
		src.Close()
		t.Fatal(err)
	}
	cs = tr.(source.Checksummer)
	if ok, why := cs.Chunkable(); !ok {
		t.Fatalf("%s is not chunkable: %s", table, why)
	}
	return tr, cs, func() { tr.Close(); src.Close() }
}

// TestSQLiteChecksumSound: the signature or the checksum of a table
// changes with every change a read would see, each on its own. (SQLite
// keeps no -0: a REAL of integer value is stored as that integer, so -0.0
// reads back as 0, and the read gives a text column's blob as its text.)
func TestSQLiteChecksumSound(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name           string
		before, change []string
		schema         bool // the signature changes (else the checksum)
	}{
		{name: "two rows swap values", change: []string{"UPDATE t SET a = CASE id WHEN 1 THEN 'y' ELSE 'x' END"}},
		{name: "a character moves between adjacent columns", change: []string{"UPDATE t SET a = 'xa', b = 'b' WHERE id = 1"}},
		{name: "NULL against the empty string", before: []string{"UPDATE t SET a = '' WHERE id = 2"}, change: []string{"UPDATE t SET a = NULL WHERE id = 2"}},
		{name: "NULL moves between columns", before: []string{"UPDATE t SET a = NULL, b = 'q' WHERE id = 2"}, change: []string{"UPDATE t SET a = 'q', b = NULL WHERE id = 2"}},
		{name: "a float's last bit", change: []string{"UPDATE t SET f = 1.0000000000000002 WHERE id = 1"}},
		{name: "a float's sign", change: []string{"UPDATE t SET f = -1.0 WHERE id = 1"}},
		{name: "a generated column's expression", change: []string{"ALTER TABLE t RENAME TO old", "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT, f REAL, g INTEGER GENERATED ALWAYS AS (id + id) STORED)", "INSERT INTO t (id, a, b, f) SELECT id, a, b, f FROM old"}, schema: true},
		{name: "a column added", change: []string{"ALTER TABLE t ADD COLUMN z INTEGER"}, schema: true},
		{name: "a column retyped", change: []string{"ALTER TABLE t RENAME TO old", "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b VARCHAR(10), f REAL, g INTEGER GENERATED ALWAYS AS (id * 2) STORED)", "INSERT INTO t (id, a, b, f) SELECT id, a, b, f FROM old"}, schema: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cks.db")
			sqliteExec(t, path, "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT, f REAL, g INTEGER GENERATED ALWAYS AS (id * 2) STORED)",
				"INSERT INTO t (id, a, b, f) VALUES (1, 'x', 'ab', 1.0), (2, 'y', 'c', 0.0)")
			sqliteExec(t, path, c.before...)
			sum := func() (string, int64, uint64) {
				_, cs, close := openChecksummer(t, path, "t", 0)
				defer close()
				rows, crc, err := cs.ChunkChecksum(ctx, nil, nil)
				if err != nil || rows != 2 {
					t.Fatalf("checksum: %d rows, %v", rows, err)
				}
				return cs.ChecksumSignature(), rows, crc
			}
			sig1, _, crc1 := sum()
			sqliteExec(t, path, c.change...)
			sig2, _, crc2 := sum()
			if c.schema && sig1 == sig2 {
				t.Errorf("the signature did not change")
			}
			if !c.schema && (sig1 != sig2 || crc1 == crc2) {
				t.Errorf("signature %s -> %s, checksum %x -> %x; want the same signature and another checksum", sig1, sig2, crc1, crc2)
			}
		})
	}
}

// TestSQLiteChecksumRanges: a composite text and integer key cuts ranges
// whose checksums count their rows, and a range read gives exactly those
// rows, a chunk at a time; a NOCASE key is not chunkable.
func TestSQLiteChecksumRanges(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ckr.db")
	sqliteExec(t, path, "CREATE TABLE t (k TEXT NOT NULL, n INTEGER NOT NULL, v TEXT, PRIMARY KEY (k, n))",
		"INSERT INTO t VALUES ('a', 1, 'p'), ('a', 2, 'q'), ('b', 1, 'r'), ('b', 3, 's'), ('c', 0, 't')",
		"CREATE TABLE nocase (k TEXT PRIMARY KEY COLLATE NOCASE, v TEXT)")
	tr, cs, close := openChecksummer(t, path, "t", 1)
	defer close()
	key := func(k string, n int64) []snapshot.Value {
		return []snapshot.Value{{Kind: snapshot.KindString, Bytes: []byte(k)}, {Kind: snapshot.KindInt, Int: n}}
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
	src, err := sqliteConnector{}.Open(ctx, source.SourceConfig{Name: "test", Options: source.OptionValues{"path": path}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	nc, err := src.OpenTable(ctx, source.TableRequest{Resource: "nocase"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if ok, why := nc.(source.Checksummer).Chunkable(); ok {
		t.Error("a NOCASE text key is chunkable")
	} else if !strings.Contains(why, "BINARY collation") {
		t.Errorf("why a NOCASE key is not chunkable: %q, want it to say the collation", why)
	}
}
