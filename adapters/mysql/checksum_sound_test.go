package mysql

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
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

// TestMySQLChecksumSound: the signature or the checksum of a table
// changes with every change a read would see, each on its own, on the
// real MariaDB, in both forms of the row checksum (checksum.go: with
// CRC32C, as MariaDB 10.11 has, and without, as MySQL). (A DOUBLE -0
// reads as 0 on MariaDB 10.11, its text and its HEX alike: the read sees
// no change there.)
func TestMySQLChecksumSound(t *testing.T) {
	e := mysqlEnv(t)
	db := e.tempDatabase(t, "cksd")
	src := e.openSource(t, db)
	for _, crc32c := range []bool{true, false} {
		t.Run(fmt.Sprintf("crc32c=%v", crc32c), func(t *testing.T) {
			testChecksumSound(t, e, db, src, crc32c)
		})
	}
}

func testChecksumSound(t *testing.T, e testEnv, db string, src source.Source, crc32c bool) {
	ctx := context.Background()
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
		{name: "a float just under a power of two", before: []string{"UPDATE %s SET f = 8 WHERE id = 1"}, change: []string{"UPDATE %s SET f = 7.999999999999999 WHERE id = 1"}},
		{name: "a float doubled", before: []string{"UPDATE %s SET f = 3 WHERE id = 1"}, change: []string{"UPDATE %s SET f = 6 WHERE id = 1"}},
		{name: "a subnormal float's last bit", before: []string{"UPDATE %s SET f = 5e-324 WHERE id = 1"}, change: []string{"UPDATE %s SET f = 1e-323 WHERE id = 1"}},
		{name: "the largest float's last bit", before: []string{"UPDATE %s SET f = 1.7976931348623157e308 WHERE id = 1"}, change: []string{"UPDATE %s SET f = 1.7976931348623155e308 WHERE id = 1"}},
		{name: "a float against zero", before: []string{"UPDATE %s SET f = 0 WHERE id = 1"}, change: []string{"UPDATE %s SET f = 1e-301 WHERE id = 1"}},
		{name: "a float against NULL", before: []string{"UPDATE %s SET f = 0 WHERE id = 1"}, change: []string{"UPDATE %s SET f = NULL WHERE id = 1"}},
		{name: "a '#' moves between the last two text columns", before: []string{"UPDATE %s SET a = 'x#', b = 'y' WHERE id = 1"}, change: []string{"UPDATE %s SET a = 'x', b = '#y' WHERE id = 1"}},
		{name: "the text columns' character set relabelled, bytes kept", change: []string{"ALTER TABLE %s MODIFY a VARBINARY(10) NULL, MODIFY b VARBINARY(10) NULL",
			"ALTER TABLE %s MODIFY a VARCHAR(10) CHARACTER SET latin1 NULL, MODIFY b VARCHAR(10) CHARACTER SET latin1 NULL"}, schema: true},
		{name: "an enum's value", change: []string{"UPDATE %s SET en = 'b' WHERE id = 1"}},
		{name: "an enum's labels", change: []string{"ALTER TABLE %s MODIFY en ENUM('a', 'c', 'b')"}, schema: true},
		{name: "a decimal's value", change: []string{"UPDATE %s SET n = 1.001 WHERE id = 1"}},
		{name: "a generated column's expression", change: []string{"ALTER TABLE %s MODIFY g INT AS (id + id) VIRTUAL"}, schema: true},
		{name: "a column added", change: []string{"ALTER TABLE %s ADD COLUMN z INT"}, schema: true},
		{name: "a column retyped", change: []string{"ALTER TABLE %s MODIFY b VARCHAR(20)"}, schema: true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl := fmt.Sprintf("t%d_%v", i, crc32c)
			stmts := func(s []string) []string {
				var out []string
				for _, q := range s {
					out = append(out, strings.ReplaceAll(q, "%s", tbl))
				}
				return out
			}
			e.exec(t, db, fmt.Sprintf("CREATE TABLE %s (id INT PRIMARY KEY, a VARCHAR(10) NULL, b VARCHAR(10) NULL, f DOUBLE, s FLOAT, n DECIMAL(8,3), g INT AS (id * 2) VIRTUAL, en ENUM('a', 'b') NOT NULL DEFAULT 'a')", tbl),
				fmt.Sprintf("INSERT INTO %s (id, a, b, f, n) VALUES (1, 'x', 'ab', 1.0, 1.0), (2, 'y', 'c', 0, 2)", tbl))
			e.exec(t, db, stmts(c.before)...)
			tr1, cs1 := openChecksummer(t, src, tbl, 0)
			tr1.(*mysqlTable).crc32c = crc32c
			sig1 := cs1.ChecksumSignature()
			rows1, crc1, err := cs1.ChunkChecksum(ctx, nil, nil)
			if err != nil || rows1 != 2 {
				t.Fatalf("checksum: %d rows, %v", rows1, err)
			}
			tr1.Close() // its snapshot holds a lock that ALTER TABLE waits for
			e.exec(t, db, stmts(c.change)...)
			tr2, cs2 := openChecksummer(t, src, tbl, 0)
			tr2.(*mysqlTable).crc32c = crc32c
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

// TestMySQLChecksumMixedCharsets: a table whose text columns have
// character sets CONCAT_WS cannot mix has a checksum in both forms, and
// it changes with a value of each column.
func TestMySQLChecksumMixedCharsets(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "ckcs")
	src := e.openSource(t, db)
	e.exec(t, db, "CREATE TABLE m (id INT PRIMARY KEY, a VARCHAR(10) CHARACTER SET utf8mb4, b VARCHAR(10) CHARACTER SET utf16, "+
		"c VARCHAR(10) CHARACTER SET latin1, d VARCHAR(10) CHARACTER SET cp1251, en ENUM('x', 'y') CHARACTER SET latin1 NOT NULL DEFAULT 'x')",
		"INSERT INTO m (id, a, b, c, d) VALUES (1, 'a1', 'b1', 'c1', 'd1'), (2, 'a2', 'b2', 'c2', 'd2')")
	checksum := func(crc32c bool) uint64 {
		tr, cs := openChecksummer(t, src, "m", 0)
		defer tr.Close()
		tr.(*mysqlTable).crc32c = crc32c
		rows, crc, err := cs.ChunkChecksum(ctx, nil, nil)
		if err != nil || rows != 2 {
			t.Fatalf("checksum (crc32c %v): %d rows, %v", crc32c, rows, err)
		}
		return crc
	}
	for _, crc32c := range []bool{true, false} {
		prev := checksum(crc32c)
		for _, q := range []string{"UPDATE m SET a = 'é' WHERE id = 1", "UPDATE m SET b = 'é' WHERE id = 1", "UPDATE m SET c = 'é' WHERE id = 1",
			"UPDATE m SET d = 'ж' WHERE id = 1", "UPDATE m SET en = 'y' WHERE id = 2"} {
			e.exec(t, db, q)
			if got := checksum(crc32c); got == prev {
				t.Errorf("crc32c %v: %s left the checksum %x", crc32c, q, got)
			} else {
				prev = got
			}
		}
		e.exec(t, db, "UPDATE m SET a = 'a1', b = 'b1', c = 'c1', d = 'd1' WHERE id = 1", "UPDATE m SET en = 'x' WHERE id = 2")
	}
}

// TestMySQLExplicitNullableKeyNotChunked: key_columns naming a UNIQUE
// but nullable column are read in full (where a NULL key fails the
// run), never in key ranges, which hold no NULL key; over a NOT NULL
// unique index they are chunked, its columns in any order, and so are
// NOT NULL columns no unique index declares, part of one here (a range
// holds every row of its keys, so a duplicate shows in the range it
// lands in: source.RangesSound).
func TestMySQLExplicitNullableKeyNotChunked(t *testing.T) {
	e := mysqlEnv(t)
	db := e.tempDatabase(t, "cknk")
	src := e.openSource(t, db)
	e.exec(t, db, "CREATE TABLE nk (id INT PRIMARY KEY, u INT NULL, w INT NOT NULL, a INT NOT NULL, b INT NOT NULL, UNIQUE KEY (u), UNIQUE KEY (w), UNIQUE KEY (a, b))")
	for _, c := range []struct {
		key     []string
		chunked bool
	}{{[]string{"u"}, false}, {[]string{"w"}, true}, {[]string{"b", "a"}, true}, {[]string{"a"}, true}} {
		tr, err := src.OpenTable(context.Background(), source.TableRequest{Resource: "nk", KeyColumns: c.key})
		if err != nil {
			t.Fatal(err)
		}
		got, why := tr.(source.Checksummer).Chunkable()
		if got != c.chunked {
			t.Errorf("key_columns %v: chunkable %v, want %v", c.key, got, c.chunked)
		}
		if want := "key column u may be NULL"; !got && !strings.Contains(why, want) {
			t.Errorf("key_columns %v: why not chunkable: %q, want it to say %q", c.key, why, want)
		}
		tr.Close()
	}
}

// TestMySQLChecksumDoubleExact: the fast form's field of a DOUBLE is its
// exponent and an integer mantissa whose product is the value exactly
// (so that two values never share a field), or the value's own text
// below 1e-300, for values across the whole range: random bit patterns,
// powers of two and their neighbours, subnormals. MariaDB 10.11 takes
// the fast form.
func TestMySQLChecksumDoubleExact(t *testing.T) {
	e := mysqlEnv(t)
	db := e.tempDatabase(t, "ckdbl")
	src := e.openSource(t, db)
	e.exec(t, db, "CREATE TABLE d (id INT PRIMARY KEY, f DOUBLE NULL)")
	var vals []float64
	rng := rand.New(rand.NewPCG(1, 2))
	for len(vals) < 3000 {
		f := math.Float64frombits(rng.Uint64())
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			vals = append(vals, f)
		}
	}
	for exp := -1074; exp <= 1023; exp += 7 {
		p := math.Ldexp(1, exp)
		vals = append(vals, p, -p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)))
	}
	vals = append(vals, 0, 1e-300, math.Nextafter(1e-300, 0), math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1, -3.5)
	var ins strings.Builder
	for i, f := range vals {
		if i%500 == 0 {
			if i > 0 {
				e.exec(t, db, ins.String())
			}
			ins.Reset()
			ins.WriteString("INSERT INTO d VALUES ")
		} else {
			ins.WriteString(", ")
		}
		fmt.Fprintf(&ins, "(%d, %s)", i, strconv.FormatFloat(f, 'g', -1, 64))
	}
	e.exec(t, db, ins.String())

	tr, _ := openChecksummer(t, src, "d", 0)
	mt := tr.(*mysqlTable)
	if !mt.crc32c {
		t.Fatal("MariaDB 10.11 should take the fast form (CRC32C)")
	}
	field := mt.checksumValue(mt.cols[1], false)
	rows, err := mt.conn.QueryContext(context.Background(), "SELECT id, f, "+field+" FROM d ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]float64{}
	n := 0
	for rows.Next() {
		var id int
		var f float64
		var text string
		if err := rows.Scan(&id, &f, &text); err != nil {
			t.Fatal(err)
		}
		n++
		if f != vals[id] {
			t.Fatalf("row %d reads %v, inserted %v", id, f, vals[id])
		}
		if prev, ok := seen[text]; ok && prev != f {
			t.Errorf("%v and %v share the field %q", prev, f, text)
		}
		seen[text] = f
		if rest, ok := strings.CutPrefix(text, "="); ok {
			if math.Abs(f) >= 1e-300 {
				t.Errorf("%v: text %q, want the exponent and mantissa", f, text)
			}
			if g, err := strconv.ParseFloat(rest, 64); err != nil || g != f {
				t.Errorf("%v: text %q", f, text)
			}
			continue
		}
		es, ms, ok := strings.Cut(text, ":")
		ex, err1 := strconv.Atoi(es)
		m, err2 := strconv.ParseInt(ms, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("%v: field %q", f, text)
		}
		if got := math.Ldexp(float64(m), ex-53); got != f || abs64(m) >= 1<<55 {
			t.Errorf("%v: field %q gives %v", f, text, got)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(vals) {
		t.Fatalf("%d rows, want %d", n, len(vals))
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
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
	if ok, why := ci.(source.Checksummer).Chunkable(); ok {
		t.Error("a VARCHAR key under a collation is chunkable")
	} else if !strings.Contains(why, "key column k (varchar") {
		t.Errorf("why a VARCHAR key is not chunkable: %q, want it to name the column and its type", why)
	}
}
