package mysql

import (
	"bytes"
	"context"
	"encoding/hex"
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
	// hexOf, when set, means want.Bytes is the server's HEX(v).
	hexOf bool
	// setup runs in the inserting session first (sql_mode, time_zone).
	setup string
}

func str(k snapshot.Kind, s string) snapshot.Value { return snapshot.Value{Kind: k, Bytes: []byte(s)} }

var mysqlTypeCases = []typeCase{
	{doc: "TINYINT", def: "TINYINT", lit: "-128", want: snapshot.Value{Kind: snapshot.KindInt, Int: -128}},
	{doc: "TINYINT(1) / BOOL", def: "TINYINT(1)", lit: "1", want: snapshot.Value{Kind: snapshot.KindInt, Int: 1}},
	{doc: "SMALLINT", def: "SMALLINT", lit: "-32768", want: snapshot.Value{Kind: snapshot.KindInt, Int: -32768}},
	{doc: "MEDIUMINT", def: "MEDIUMINT", lit: "-8388608", want: snapshot.Value{Kind: snapshot.KindInt, Int: -8388608}},
	{doc: "INT", def: "INT", lit: "2147483647", want: snapshot.Value{Kind: snapshot.KindInt, Int: math.MaxInt32}},
	{doc: "BIGINT", def: "BIGINT", lit: "-9223372036854775808", want: snapshot.Value{Kind: snapshot.KindInt, Int: math.MinInt64}},
	{doc: "TINYINT/SMALLINT/MEDIUMINT/INT UNSIGNED", def: "SMALLINT UNSIGNED", lit: "65535", want: snapshot.Value{Kind: snapshot.KindUint, Uint: 65535}},
	{doc: "BIGINT UNSIGNED", def: "BIGINT UNSIGNED", lit: "18446744073709551615", want: snapshot.Value{Kind: snapshot.KindUint, Uint: math.MaxUint64}},
	{doc: "DECIMAL(M,D)", def: "DECIMAL(65,30)", lit: "'12345678901234567890123456789012345.123456789012345678901234567891'", want: str(snapshot.KindDecimal, "12345678901234567890123456789012345.123456789012345678901234567891")},
	{doc: "DECIMAL(M,D)", def: "DECIMAL(5,2)", lit: "-12.5", want: str(snapshot.KindDecimal, "-12.50")},
	{doc: "FLOAT", def: "FLOAT", lit: "3.14", want: snapshot.Value{Kind: snapshot.KindFloat, Float: 3.14}},
	{doc: "FLOAT", def: "FLOAT", lit: "1.0000001", want: snapshot.Value{Kind: snapshot.KindFloat, Float: 1.0000001}},
	{doc: "FLOAT", def: "FLOAT", lit: "16777216", want: snapshot.Value{Kind: snapshot.KindFloat, Float: 16777216}},
	{doc: "FLOAT", def: "FLOAT", lit: "-3.4e38", want: snapshot.Value{Kind: snapshot.KindFloat, Float: -3.4e38}},
	{doc: "DOUBLE", def: "DOUBLE", lit: "0.1e0 + 0.2e0", want: snapshot.Value{Kind: snapshot.KindFloat, Float: 0.30000000000000004}},
	{doc: "DOUBLE", def: "DOUBLE", lit: "-1.7976931348623157e308", want: snapshot.Value{Kind: snapshot.KindFloat, Float: -math.MaxFloat64}},
	{doc: "BIT(n)", def: "BIT(1)", lit: "b'1'", want: snapshot.Value{Kind: snapshot.KindUint, Uint: 1}},
	{doc: "BIT(n)", def: "BIT(64)", lit: "b'1000000000000000000000000000000000000000000000000000000000000001'", want: snapshot.Value{Kind: snapshot.KindUint, Uint: 1<<63 | 1}},
	{doc: "YEAR", def: "YEAR", lit: "2006", want: snapshot.Value{Kind: snapshot.KindInt, Int: 2006}},
	{doc: "DATE", def: "DATE", lit: "'2026-11-29'", want: str(snapshot.KindDate, "2026-11-29")},
	{doc: "zero DATE", def: "DATE", lit: "'0000-00-00'", want: str(snapshot.KindDate, "0000-00-00"), setup: "SET SESSION sql_mode = ''"},
	{doc: "zero DATE", def: "DATE", lit: "'2026-00-00'", want: str(snapshot.KindDate, "2026-00-00"), setup: "SET SESSION sql_mode = ''"},
	{doc: "DATETIME(fsp)", def: "DATETIME(6)", lit: "'2026-11-29 21:07:43.123456'", want: str(snapshot.KindDateTime, "2026-11-29 21:07:43.123456")},
	{doc: "DATETIME(fsp)", def: "DATETIME", lit: "'1000-01-01 00:00:00'", want: str(snapshot.KindDateTime, "1000-01-01 00:00:00")},
	{doc: "zero DATETIME", def: "DATETIME", lit: "'0000-00-00 00:00:00'", want: str(snapshot.KindDateTime, "0000-00-00 00:00:00"), setup: "SET SESSION sql_mode = ''"},
	{doc: "TIMESTAMP(fsp)", def: "TIMESTAMP(3) NULL", lit: "'2026-06-01 12:00:00.250'", want: str(snapshot.KindDateTime, "2026-06-01 07:00:00.250"), setup: "SET SESSION time_zone = '+05:00'"},
	{doc: "TIME", def: "TIME", lit: "'-838:59:59'", want: str(snapshot.KindTime, "-838:59:59")},
	{doc: "TIME", def: "TIME(6)", lit: "'100:00:00.5'", want: str(snapshot.KindTime, "100:00:00.500000")},
	{doc: "CHAR / VARCHAR / TEXT", def: "CHAR(3)", lit: "'abc'", want: str(snapshot.KindString, "abc")},
	{doc: "CHAR / VARCHAR / TEXT", def: "VARCHAR(20) CHARACTER SET utf8mb4", lit: "'😀 ü ж 中'", want: str(snapshot.KindString, "😀 ü ж 中")},
	{doc: "CHAR / VARCHAR / TEXT", def: "TEXT CHARACTER SET latin1", lit: "_utf8mb4'café'", want: str(snapshot.KindString, "café")},
	{doc: "CHAR / VARCHAR / TEXT", def: "VARCHAR(10) CHARACTER SET cp1251", lit: "_utf8mb4'Привет'", want: str(snapshot.KindString, "Привет")},
	{doc: "empty string", def: "VARCHAR(10)", lit: "''", want: snapshot.Value{Kind: snapshot.KindString, Bytes: []byte{}}},
	{doc: "NULL", def: "VARCHAR(10)", lit: "NULL", want: snapshot.Value{}},
	{doc: "BINARY(n)", def: "BINARY(4)", lit: "x'00ff80'", want: snapshot.Value{Kind: snapshot.KindBytes, Bytes: []byte{0x00, 0xff, 0x80, 0x00}}},
	{doc: "VARBINARY / BLOB", def: "VARBINARY(8)", lit: "x'fffe00c3'", want: snapshot.Value{Kind: snapshot.KindBytes, Bytes: []byte{0xff, 0xfe, 0x00, 0xc3}}},
	{doc: "VARBINARY / BLOB", def: "LONGBLOB", lit: "x'89504e470d0a1a0a'", want: snapshot.Value{Kind: snapshot.KindBytes, Bytes: []byte("\x89PNG\r\n\x1a\n")}},
	{doc: "ENUM", def: "ENUM('G','PG','NC-17')", lit: "'NC-17'", want: str(snapshot.KindString, "NC-17")},
	{doc: "SET", def: "SET('Trailers','Commentaries','Deleted Scenes')", lit: "'Deleted Scenes,Trailers'", want: str(snapshot.KindString, "Trailers,Deleted Scenes")},
	{doc: "JSON", def: "JSON", lit: `'{"a": [1, 2.5, "x"], "b": null}'`, want: str(snapshot.KindJSON, `{"a": [1, 2.5, "x"], "b": null}`)},
	{doc: "GEOMETRY (all spatial types)", def: "GEOMETRY", lit: "ST_GeomFromText('POINT(1.5 -2)', 4326)", hexOf: true, want: snapshot.Value{Kind: snapshot.KindGeometry}},
	{doc: "GEOMETRY (all spatial types)", def: "POLYGON", lit: "ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))')", hexOf: true, want: snapshot.Value{Kind: snapshot.KindGeometry}},
	{doc: "UUID / INET4 / INET6 (MariaDB)", def: "UUID", lit: "'123e4567-e89b-12d3-a456-426655440000'", want: str(snapshot.KindString, "123e4567-e89b-12d3-a456-426655440000")},
	{doc: "UUID / INET4 / INET6 (MariaDB)", def: "INET6", lit: "'::ffff:192.0.2.1'", want: str(snapshot.KindString, "::ffff:192.0.2.1")},
}

// TestMySQLTypes reads every row of docs/types.md from a real MariaDB: one
// table per case, one row, the value compared exactly.
func TestMySQLTypes(t *testing.T) {
	e := mysqlEnv(t)
	db := e.tempDatabase(t, "types")
	src := e.openSource(t, db)
	a := e.admin(t, db)
	ctx := context.Background()
	for i, tc := range mysqlTypeCases {
		t.Run(fmt.Sprintf("%02d_%s", i, tc.def), func(t *testing.T) {
			table := fmt.Sprintf("t%02d", i)
			conn, err := a.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			stmts := []string{"CREATE TABLE " + table + " (id INT PRIMARY KEY, v " + tc.def + ")"}
			if tc.setup != "" {
				stmts = append(stmts, tc.setup)
			}
			stmts = append(stmts, "INSERT INTO "+table+" VALUES (1, "+tc.lit+")", "SET SESSION sql_mode = DEFAULT", "SET SESSION time_zone = DEFAULT")
			for _, s := range stmts {
				if _, err := conn.ExecContext(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			want := tc.want
			if tc.hexOf {
				var h string
				if err := a.QueryRow("SELECT HEX(v) FROM " + table).Scan(&h); err != nil {
					t.Fatal(err)
				}
				want.Bytes, _ = hex.DecodeString(h)
			}
			tr, err := src.OpenTable(ctx, source.TableRequest{Resource: table})
			if err != nil {
				t.Fatal((err))
			}
			defer tr.Close()
			if got := tr.Schema().Columns[1].Kind; got != want.Kind && want.Kind != snapshot.KindNull {
				t.Errorf("schema kind %d, want %d", got, want.Kind)
			}
			if !tr.Next(ctx) {
				t.Fatalf("no row: %v", (tr.Err()))
			}
			got := tr.Values()[1]
			if !valueEqual(got, want) {
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

// TestTypesDocCoversCases checks docs/types.md has a row for every case.
func TestTypesDocCoversCases(t *testing.T) {
	b, err := os.ReadFile("../../docs/types.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range mysqlTypeCases {
		if !bytes.Contains(b, []byte("| "+tc.doc+" |")) {
			t.Errorf("docs/types.md has no row starting %q", "| "+tc.doc+" |")
		}
	}
}

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

// TestMySQLUnsupportedType: MariaDB 10.11 has no type outside the type
// table; a future one is refused, naming the column.
func TestMySQLUnsupportedType(t *testing.T) {
	if _, err := mysqlKind(&mysqlColumn{name: "v", dataType: "vector", columnType: "vector(2)"}, false); !errors.Is(err, source.ErrUnsupportedType) || !strings.Contains(err.Error(), `"v"`) {
		t.Errorf("unsupported: %v", err)
	}
}
