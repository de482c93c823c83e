package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// typeCase is one row of docs/types.md: a column type, a value written as
// SQL, and the snapshot value it must read as.
type typeCase struct {
	doc  string // the docs/types.md row's first cell
	def  string // column definition
	lit  string // SQL literal inserted
	want snapshot.Value
}

func str(k snapshot.Kind, s string) snapshot.Value { return snapshot.Value{Kind: k, Bytes: []byte(s)} }

func valueEqual(a, b snapshot.Value) bool {
	if a.Kind != b.Kind || a.Int != b.Int || a.Uint != b.Uint {
		return false
	}
	if a.Float != b.Float && !(math.IsNaN(a.Float) && math.IsNaN(b.Float)) {
		return false
	}
	if (a.Bytes == nil) != (b.Bytes == nil) && a.Kind != snapshot.KindNull {
		// An empty string is not NULL: both must be non-nil for text kinds.
		return false
	}
	return bytes.Equal(a.Bytes, b.Bytes)
}

func fmtValue(v snapshot.Value) string {
	switch v.Kind {
	case snapshot.KindNull:
		return "NULL"
	case snapshot.KindInt:
		return fmt.Sprintf("int %d", v.Int)
	case snapshot.KindUint:
		return fmt.Sprintf("uint %d", v.Uint)
	case snapshot.KindFloat:
		return fmt.Sprintf("float %v", v.Float)
	case snapshot.KindBytes, snapshot.KindGeometry:
		return fmt.Sprintf("kind %d hex %x", v.Kind, v.Bytes)
	}
	return fmt.Sprintf("kind %d %q (nil=%v)", v.Kind, v.Bytes, v.Bytes == nil)
}

// postgresTypeSetup creates the types the cases use, in the test database.
var postgresTypeSetup = []string{
	"CREATE EXTENSION hstore",
	"CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
	"CREATE DOMAIN year AS integer CHECK (VALUE >= 1901 AND VALUE <= 2155)",
	"CREATE DOMAIN short_text AS varchar(10)",
	"CREATE DOMAIN tiny_year AS year",
	"CREATE TYPE pair AS (a integer, b text)",
	"CREATE TYPE floatrange AS RANGE (subtype = float8)",
	"CREATE DOMAIN tags AS text[]",
}

// postgresTypeCases are the rows of docs/types.md's PostgreSQL table: a
// column type, a value written as SQL (inserted in a session whose time
// zone is not UTC), and the snapshot value it must read as.
var postgresTypeCases = []typeCase{
	{doc: "smallint / integer / bigint", def: "smallint", lit: "-32768", want: snapshot.Value{Kind: snapshot.KindInt, Int: -32768}},
	{doc: "smallint / integer / bigint", def: "integer", lit: "2147483647", want: snapshot.Value{Kind: snapshot.KindInt, Int: math.MaxInt32}},
	{doc: "smallint / integer / bigint", def: "bigint", lit: "-9223372036854775808", want: snapshot.Value{Kind: snapshot.KindInt, Int: math.MinInt64}},
	{doc: "smallint / integer / bigint", def: "bigint", lit: "9007199254740993", want: snapshot.Value{Kind: snapshot.KindInt, Int: 1<<53 + 1}},
	{doc: "serial / identity / generated", def: "bigint GENERATED ALWAYS AS (id * 10) STORED", lit: "DEFAULT", want: snapshot.Value{Kind: snapshot.KindInt, Int: 10}},
	{doc: "serial / identity / generated", def: "integer GENERATED ALWAYS AS IDENTITY", lit: "DEFAULT", want: snapshot.Value{Kind: snapshot.KindInt, Int: 1}},
	{doc: "oid", def: "oid", lit: "4294967295", want: snapshot.Value{Kind: snapshot.KindUint, Uint: math.MaxUint32}},
	{doc: "numeric(p,s) / numeric", def: "numeric(5,2)", lit: "-12.5", want: str(snapshot.KindDecimal, "-12.50")},
	{doc: "numeric(p,s) / numeric", def: "numeric", lit: "123456789012345678901234567890123456789012345678901234567890.000000000000000000000000000000000000000001",
		want: str(snapshot.KindDecimal, "123456789012345678901234567890123456789012345678901234567890.000000000000000000000000000000000000000001")},
	{doc: "numeric(p,s) / numeric", def: "numeric", lit: "1.50", want: str(snapshot.KindDecimal, "1.50")},
	{doc: "numeric NaN / ±Infinity", def: "numeric", lit: "'NaN'", want: str(snapshot.KindDecimal, "NaN")},
	{doc: "numeric NaN / ±Infinity", def: "numeric", lit: "'Infinity'", want: str(snapshot.KindDecimal, "Infinity")},
	{doc: "numeric NaN / ±Infinity", def: "numeric", lit: "'-Infinity'", want: str(snapshot.KindDecimal, "-Infinity")},
	{doc: "real / double precision", def: "real", lit: "3.14", want: snapshot.Value{Kind: snapshot.KindFloat, Float: 3.14}},
	{doc: "real / double precision", def: "double precision", lit: "0.1::float8 + 0.2::float8", want: snapshot.Value{Kind: snapshot.KindFloat, Float: 0.30000000000000004}},
	{doc: "real / double precision", def: "double precision", lit: "-1.7976931348623157e308", want: snapshot.Value{Kind: snapshot.KindFloat, Float: -math.MaxFloat64}},
	{doc: "real / double precision", def: "double precision", lit: "5e-324", want: snapshot.Value{Kind: snapshot.KindFloat, Float: 5e-324}},
	{doc: "real / double precision NaN / ±Infinity", def: "double precision", lit: "'NaN'", want: snapshot.Value{Kind: snapshot.KindFloat, Float: math.NaN()}},
	{doc: "real / double precision NaN / ±Infinity", def: "real", lit: "'-Infinity'", want: snapshot.Value{Kind: snapshot.KindFloat, Float: math.Inf(-1)}},
	{doc: "real / double precision NaN / ±Infinity", def: "double precision", lit: "'Infinity'", want: snapshot.Value{Kind: snapshot.KindFloat, Float: math.Inf(1)}},
	{doc: "money", def: "money", lit: "'-1234.56'", want: str(snapshot.KindDecimal, "-1234.56")},
	{doc: "boolean", def: "boolean", lit: "true", want: snapshot.BoolValue(true)},
	{doc: "boolean", def: "boolean", lit: "false", want: snapshot.BoolValue(false)},
	{doc: "text / varchar(n)", def: "text", lit: "'😀 ü ж 中'", want: str(snapshot.KindString, "😀 ü ж 中")},
	{doc: "text / varchar(n)", def: "varchar(10)", lit: "''", want: snapshot.Value{Kind: snapshot.KindString, Bytes: []byte{}}},
	{doc: "char(n)", def: "char(5)", lit: "'ab'", want: str(snapshot.KindString, "ab   ")},
	{doc: "NULL", def: "text", lit: "NULL", want: snapshot.Value{}},
	{doc: "bytea", def: "bytea", lit: `'\x00ff80c328'`, want: snapshot.Value{Kind: snapshot.KindBytes, Bytes: []byte{0x00, 0xff, 0x80, 0xc3, 0x28}}},
	{doc: "bytea", def: "bytea", lit: `''`, want: snapshot.Value{Kind: snapshot.KindBytes, Bytes: []byte{}}},
	{doc: "uuid", def: "uuid", lit: "'123E4567-E89B-12D3-A456-426655440000'", want: str(snapshot.KindString, "123e4567-e89b-12d3-a456-426655440000")},
	{doc: "date", def: "date", lit: "'2026-11-29'", want: str(snapshot.KindDate, "2026-11-29")},
	{doc: "date / timestamp ±infinity", def: "date", lit: "'infinity'", want: str(snapshot.KindDate, "infinity")},
	{doc: "date / timestamp ±infinity", def: "timestamp", lit: "'-infinity'", want: str(snapshot.KindDateTime, "-infinity")},
	{doc: "date / timestamp ±infinity", def: "timestamptz", lit: "'infinity'", want: str(snapshot.KindDateTime, "infinity")},
	{doc: "date BC", def: "date", lit: "'0044-03-15 BC'", want: str(snapshot.KindDate, "0044-03-15 BC")},
	{doc: "timestamp(p)", def: "timestamp(6)", lit: "'2026-11-29 21:07:43.123456'", want: str(snapshot.KindDateTime, "2026-11-29 21:07:43.123456")},
	{doc: "timestamp(p)", def: "timestamp", lit: "'2026-11-29 21:07:43.250'", want: str(snapshot.KindDateTime, "2026-11-29 21:07:43.25")},
	{doc: "timestamptz", def: "timestamptz", lit: "'2026-06-01 12:00:00.25+05'", want: str(snapshot.KindDateTime, "2026-06-01 07:00:00.25+00")},
	{doc: "timestamptz", def: "timestamptz", lit: "'2026-01-15 12:00:00'", want: str(snapshot.KindDateTime, "2026-01-15 11:00:00+00")},
	{doc: "timestamptz", def: "timestamptz", lit: "'0044-03-15 12:00:00+00 BC'", want: str(snapshot.KindDateTime, "0044-03-15 12:00:00+00 BC")},
	{doc: "time(p)", def: "time(3)", lit: "'23:59:59.1239'", want: str(snapshot.KindTime, "23:59:59.124")},
	{doc: "time(p)", def: "time", lit: "'24:00:00'", want: str(snapshot.KindTime, "24:00:00")},
	{doc: "timetz", def: "timetz", lit: "'21:07:43.5-05:30'", want: str(snapshot.KindString, "21:07:43.5-05:30")},
	{doc: "interval", def: "interval", lit: "'1 year 2 months 3 days 04:05:06.5'", want: str(snapshot.KindString, "P1Y2M3DT4H5M6.5S")},
	{doc: "interval", def: "interval", lit: "'-1 day 01:00:00'", want: str(snapshot.KindString, "P-1DT1H")},
	{doc: "json", def: "json", lit: `'{"b": 1, "a": [1.50, 1e400, "x"], "a": null}'`, want: str(snapshot.KindJSON, `{"b": 1, "a": [1.50, 1e400, "x"], "a": null}`)},
	{doc: "json", def: "json", lit: `'null'`, want: str(snapshot.KindJSON, `null`)},
	{doc: "jsonb", def: "jsonb", lit: `'{"b": 1, "a": [1.50, "x"], "a": null}'`, want: str(snapshot.KindJSON, `{"a": null, "b": 1}`)},
	{doc: "arrays", def: "text[]", lit: `ARRAY['Deleted Scenes', NULL, 'a"b']`, want: str(snapshot.KindArray, `["Deleted Scenes",null,"a\"b"]`)},
	{doc: "arrays", def: "text[]", lit: `ARRAY['', 'NULL', 'a\b', 'x,y', ' {sp}', 'é']`, want: str(snapshot.KindArray, `["","NULL","a\\b","x,y"," {sp}","é"]`)},
	{doc: "arrays", def: "integer[][]", lit: `'{{1,2},{3,NULL}}'`, want: str(snapshot.KindArray, `[[1,2],[3,null]]`)},
	{doc: "arrays", def: "integer[]", lit: `'{}'`, want: str(snapshot.KindArray, `[]`)},
	{doc: "arrays with lower bounds", def: "int2vector", lit: `'1 -2'`, want: str(snapshot.KindArray, `{"lower":[0],"elements":[1,-2]}`)},
	{doc: "arrays", def: "bigint[]", lit: `'{9007199254740993,-1}'`, want: str(snapshot.KindArray, `["9007199254740993",-1]`)},
	{doc: "arrays with lower bounds", def: "integer[]", lit: `'[0:2]={1,2,3}'`, want: str(snapshot.KindArray, `{"lower":[0],"elements":[1,2,3]}`)},
	{doc: "arrays with lower bounds", def: "integer[][]", lit: `'[1:2][-1:0]={{1,2},{3,4}}'`, want: str(snapshot.KindArray, `{"lower":[1,-1],"elements":[[1,2],[3,4]]}`)},
	{doc: "array elements", def: "numeric[]", lit: `'{1.50,NaN,-Infinity}'`, want: str(snapshot.KindArray, `["1.50","NaN","-Infinity"]`)},
	{doc: "array elements", def: "double precision[]", lit: `'{Infinity,-Infinity,NaN,1.5}'`, want: str(snapshot.KindArray, `["Infinity","-Infinity","NaN",1.5]`)},
	{doc: "array elements", def: "bytea[]", lit: `ARRAY['\x00ff'::bytea, ''::bytea, NULL]`, want: str(snapshot.KindArray, `["AP8=","",null]`)},
	{doc: "array elements", def: "boolean[]", lit: `'{t,f,NULL}'`, want: str(snapshot.KindArray, `[true,false,null]`)},
	{doc: "array elements", def: "timestamptz[]", lit: `ARRAY['2026-06-01 12:00:00.25+05'::timestamptz, 'infinity']`, want: str(snapshot.KindArray, `["2026-06-01 07:00:00.25+00","infinity"]`)},
	{doc: "array elements", def: "money[]", lit: `'{-1234.56}'`, want: str(snapshot.KindArray, `["-1234.56"]`)},
	{doc: "array elements", def: "jsonb[]", lit: `ARRAY['{"a": [1, "x"]}'::jsonb]`, want: str(snapshot.KindArray, `["{\"a\": [1, \"x\"]}"]`)},
	{doc: "array elements", def: "mood[]", lit: `'{sad,happy}'`, want: str(snapshot.KindArray, `["sad","happy"]`)},
	{doc: "array elements", def: "year[]", lit: `'{2006}'`, want: str(snapshot.KindArray, `[2006]`)},
	{doc: "array elements", def: "box[]", lit: `ARRAY['(1,1),(0,0)'::box, '(3,3),(2,2)'::box]`, want: str(snapshot.KindArray, `["(1,1),(0,0)","(3,3),(2,2)"]`)},
	{doc: "array elements", def: "int4range[]", lit: `ARRAY['[1,3)'::int4range]`, want: str(snapshot.KindArray, `["[1,3)"]`)},
	{doc: "enum", def: "mood", lit: "'happy'", want: str(snapshot.KindString, "happy")},
	{doc: "domain", def: "year", lit: "2006", want: snapshot.Value{Kind: snapshot.KindInt, Int: 2006}},
	{doc: "domain", def: "short_text", lit: "'abc'", want: str(snapshot.KindString, "abc")},
	{doc: "domain", def: "tiny_year", lit: "1999", want: snapshot.Value{Kind: snapshot.KindInt, Int: 1999}},
	{doc: "domain", def: "tags", lit: "'{a,b}'", want: str(snapshot.KindArray, `["a","b"]`)},
	{doc: "inet / cidr / macaddr", def: "inet", lit: "'192.168.0.1/24'", want: str(snapshot.KindString, "192.168.0.1/24")},
	{doc: "inet / cidr / macaddr", def: "cidr", lit: "'2001:db8::/32'", want: str(snapshot.KindString, "2001:db8::/32")},
	{doc: "inet / cidr / macaddr", def: "macaddr", lit: "'08:00:2B:01:02:03'", want: str(snapshot.KindString, "08:00:2b:01:02:03")},
	{doc: "bit(n) / varbit", def: "bit(4)", lit: "B'1010'", want: str(snapshot.KindString, "1010")},
	{doc: "bit(n) / varbit", def: "varbit", lit: "B'1000000000000000000000000000000000000000000000000000000000000000001'", want: str(snapshot.KindString, "1000000000000000000000000000000000000000000000000000000000000000001")},
	{doc: "ranges / multiranges", def: "int4range", lit: "'[1,10]'", want: str(snapshot.KindString, "[1,11)")},
	{doc: "ranges / multiranges", def: "tstzrange", lit: "'[2026-01-01 00:00+01, infinity)'", want: str(snapshot.KindString, `["2025-12-31 23:00:00+00",infinity)`)},
	{doc: "ranges / multiranges", def: "floatrange", lit: "'(1.5,2.5]'", want: str(snapshot.KindString, "(1.5,2.5]")},
	{doc: "ranges / multiranges", def: "int4multirange", lit: "'{[1,3),[5,7)}'", want: str(snapshot.KindString, "{[1,3),[5,7)}")},
	{doc: "composite", def: "pair", lit: "ROW(1, 'a b')", want: str(snapshot.KindString, `(1,"a b")`)},
	{doc: "hstore", def: "hstore", lit: `'a=>1, b=>NULL'`, want: str(snapshot.KindString, `"a"=>"1", "b"=>NULL`)},
	{doc: "xml / tsvector / geometric / pg_lsn", def: "tsvector", lit: "'fat:2 rat:3'", want: str(snapshot.KindString, "'fat':2 'rat':3")},
	{doc: "xml / tsvector / geometric / pg_lsn", def: "point", lit: "'(1.5,-2)'", want: str(snapshot.KindString, "(1.5,-2)")},
	{doc: "xml / tsvector / geometric / pg_lsn", def: "xml", lit: "'<a>x</a>'", want: str(snapshot.KindString, "<a>x</a>")},
}

// TestPostgresTypes reads every row of docs/types.md's PostgreSQL table
// from a real server: one table per case, one row, the value compared
// exactly.
func TestPostgresTypes(t *testing.T) {
	e := postgresEnv(t)
	db := e.tempDatabase(t, "types")
	e.exec(t, db, postgresTypeSetup...)
	var stmts []string
	for i, tc := range postgresTypeCases {
		table := fmt.Sprintf("t%02d", i)
		stmts = append(stmts, "CREATE TABLE "+table+" (id integer PRIMARY KEY, v "+tc.def+")",
			"INSERT INTO "+table+" (id, v) OVERRIDING SYSTEM VALUE VALUES (1, "+tc.lit+")")
		if strings.Contains(tc.def, "GENERATED") {
			stmts[len(stmts)-1] = "INSERT INTO " + table + " (id) VALUES (1)"
		}
	}
	a := e.connect(t, db)
	ctx := context.Background()
	// The writer's session is not in UTC, nor is the server's default.
	if _, err := a.Exec(ctx, "SET TIME ZONE 'Europe/Paris'"); err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := a.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	src := e.openSource(t, db)
	for i, tc := range postgresTypeCases {
		t.Run(fmt.Sprintf("%02d_%s", i, tc.def), func(t *testing.T) {
			tr, err := src.OpenTable(ctx, source.TableRequest{Resource: fmt.Sprintf("t%02d", i)})
			if err != nil {
				t.Fatal((err))
			}
			defer tr.Close()
			want := tc.want
			if got := tr.Schema().Columns[1].Kind; got != want.Kind && want.Kind != snapshot.KindNull {
				t.Errorf("schema kind %s, want %s", got, want.Kind)
			}
			if !tr.Next(ctx) {
				t.Fatalf("no row: %v", (tr.Err()))
			}
			if got := tr.Values()[1]; !valueEqual(got, want) {
				t.Errorf("%s %s: got %s, want %s", tc.def, tc.lit, fmtValue(got), fmtValue(want))
			}
			if tr.Next(ctx) {
				t.Errorf("more than one row")
			}
			if err := tr.Err(); err != nil {
				t.Error((err))
			}
		})
	}
}

// TestPostgresUnknownType: a type the connector does not know fails the
// read before any row, naming the column and the type.
func TestPostgresUnknownType(t *testing.T) {
	e := postgresEnv(t)
	db := e.tempDatabase(t, "unknown")
	e.exec(t, db, "CREATE TABLE t (id integer PRIMARY KEY, r regclass, ra regclass[], ok text)", "INSERT INTO t VALUES (1, 'pg_class', '{pg_class}', 'x')")
	src := e.openSource(t, db)
	_, err := src.OpenTable(context.Background(), source.TableRequest{Resource: "t"})
	if !errors.Is(err, source.ErrUnsupportedType) || !strings.Contains(err.Error(), `column "r" has type regclass`) ||
		!strings.Contains(err.Error(), `column "ra" has type regclass[]`) {
		t.Fatalf("unknown type: %v", (err))
	}
}

// TestPostgresTypesDocCoversCases checks docs/types.md has a row for every
// case.
func TestPostgresTypesDocCoversCases(t *testing.T) {
	b, err := os.ReadFile("../../docs/types.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range postgresTypeCases {
		if !bytes.Contains(b, []byte("| "+tc.doc+" |")) {
			t.Errorf("docs/types.md has no row starting %q", "| "+tc.doc+" |")
		}
	}
}

// TestPostgresTableErrorsNameDatabase: errors about a table (no key, not
// found) name its database, as the MySQL connector's do.
func TestPostgresTableErrorsNameDatabase(t *testing.T) {
	e := postgresEnv(t)
	db := e.tempDatabase(t, "names")
	e.exec(t, db, "CREATE TABLE nokey (a integer)")
	src := e.openSource(t, db)
	ctx := context.Background()
	_, err := src.OpenTable(ctx, source.TableRequest{Resource: "nokey"})
	if want := `"` + db + `"."public"."nokey" has no primary key`; !errors.Is(err, source.ErrNoKey) || !strings.Contains(err.Error(), want) {
		t.Errorf("no key: %v, want %s", err, want)
	}
	_, err = src.OpenTable(ctx, source.TableRequest{Resource: "missing"})
	if want := `in database "` + db + `"`; !errors.Is(err, source.ErrResourceNotFound) || !strings.Contains(err.Error(), want) {
		t.Errorf("not found: %v, want %s", err, want)
	}
}
