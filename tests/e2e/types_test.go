package e2e

import (
	"fmt"
	"os"
	"testing"
)

// typesTable has a column of every MariaDB type family docs/types.md maps,
// keyed by a BIGINT UNSIGNED (one key above 2^63).
const typesTable = `CREATE TABLE types (
	id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
	ti TINYINT, b1 TINYINT(1), su SMALLINT UNSIGNED, mi MEDIUMINT, bi BIGINT, bu BIGINT UNSIGNED,
	de DECIMAL(65,30), fl FLOAT, db DOUBLE, bt BIT(10), yr YEAR,
	d DATE, dt DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(6),
	c CHAR(5), vc VARCHAR(100) CHARACTER SET latin1, tx TEXT, bin BINARY(4), vb VARBINARY(20), bl BLOB,
	en ENUM('a','b','c'), st SET('x','y','z'), js JSON, g GEOMETRY, u UUID, i6 INET6)`

var typesRows = []stmt{
	{"SET SESSION sql_mode = ''", -1}, // zero dates
	{"SET SESSION time_zone = '+02:00'", -1},
	{`INSERT INTO types VALUES (1, -128, 1, 65535, -8388608, -9223372036854775808, 18446744073709551615,
		'-12345678901234567890.123456789012345678901234567890', 3.14, 0.1 + 0.2, b'1010101010', 2006,
		'0000-00-00', '0000-00-00 00:00:00', '2026-06-01 09:00:00.250', '-838:59:59',
		'ab', 'café', '☃ 🎉 text', 'ab', UNHEX('00FF80'), UNHEX('DEADBEEF00'),
		'b', 'z,x', '{"a": [1, 2.50, "x"], "b": null}', ST_GeomFromText('POINT(1 2)'), '123e4567-e89b-12d3-a456-426614174000', '::1')`, 1},
	{"INSERT INTO types (id) VALUES (2)", 1},
	{`INSERT INTO types VALUES (3, 127, 0, 0, 8388607, 9007199254740993, 9007199254740993,
		'0.000000000000000000000000000001', -1.5e-7, 1.7976931348623157e308, b'0', 0,
		'2026-00-00', '2026-11-29 21:07:43.123456', '1970-01-01 02:00:01.000', '100:00:00.5',
		'', '', '', UNHEX('00000000'), '', '',
		'a', '', '[]', ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)'), '00000000-0000-0000-0000-000000000000', '2001:db8::ff00:42:8329')`, 1},
	{`INSERT INTO types (id, vc, bu) VALUES (18446744073709551615, 'max key', 0)`, 1},
}

// TestTypes snapshots a table with every type family and edge values
// (extreme integers, 65-digit decimals, zero dates, negative TIME, UTC
// TIMESTAMP, latin1 text, padded BINARY, JSON, spatial, UUID, INET6),
// changes some and checks the versions and the diff.
func TestTypes(t *testing.T) {
	e := getMySQLEnv(t)
	dbName := fmt.Sprintf("e2e_types_%d", os.Getpid())
	root := e.open(t, "")
	for _, q := range []string{"DROP DATABASE IF EXISTS `" + dbName + "`", "CREATE DATABASE `" + dbName + "`"} {
		if _, err := root.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { root.Exec("DROP DATABASE IF EXISTS `" + dbName + "`") })
	src := e.open(t, dbName)
	if _, err := src.Exec(typesTable); err != nil {
		t.Fatal(err)
	}
	execAll(t, src, typesRows)
	spec := loadSpec(t, src, dbName, "types")
	if spec.Cols["js"].DataType != "json" {
		t.Fatalf("fixture: column js not recognised as JSON: %+v", spec.Cols["js"])
	}
	before := spec.read(t, src)

	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "src", e.Host, e.Port, e.User, dbName)
	p.createAdapter(t, map[string]any{"name": "types", "connection": "src", "resource": "types"})
	r1 := p.mustRun(t, "types")
	checkTable(t, p, spec, "types", "", r1.Version, before)

	execAll(t, src, []stmt{
		{"SET SESSION sql_mode = ''", -1},
		{"UPDATE types SET bu = bu - 1, de = -de, tm = '838:59:59', d = '0000-00-00', js = '{\"a\":2}', bin = 'xyz', g = ST_GeomFromText('POINT(3 4)') WHERE id = 1", 1},
		{"UPDATE types SET ti = 0, vc = 'now set', bl = UNHEX('00') WHERE id = 2", 1},
		{"UPDATE types SET ts = NULL, js = NULL, u = NULL WHERE id = 3", 1},
		{"DELETE FROM types WHERE id = 18446744073709551615", 1},
		{"INSERT INTO types (id, bi) VALUES (9223372036854775808, -1)", 1},
	})
	after := spec.read(t, src)
	r2 := p.mustRun(t, "types")
	got, _, _ := p.scanPages(t, spec, "types", "", 2)
	sameRows(t, "types at version 2", after, got)
	p.checkDiff(t, spec, "types", r1.Version, r2.Version, before, after)
	got, _ = p.scanNDJSON(t, spec, "types", fmt.Sprintf("version=%d", r1.Version))
	sameRows(t, "types at version 1", before, got)

	// A column dropped and a NULL column added: every row changes (NULL is
	// a value), the old version keeps the old columns.
	execAll(t, src, []stmt{{"ALTER TABLE types DROP COLUMN i6, ADD COLUMN extra INT NULL", 0}})
	spec3 := loadSpec(t, src, dbName, "types")
	third := spec3.read(t, src)
	union := spec3
	union.Cols = map[string]srcColumn{}
	for _, sp := range []tableSpec{spec, spec3} {
		for n, c := range sp.Cols {
			union.Cols[n] = c
		}
	}
	r3 := p.mustRun(t, "types")
	got, _, _ = p.scanPages(t, spec3, "types", "", 3)
	sameRows(t, "types after the column changes", third, got)
	ops := p.checkDiff(t, union, "types", r2.Version, r3.Version, after, third)
	if _, upd, _ := countOps(ops); upd != len(third) {
		t.Errorf("fixture: %d rows changed by the column changes, want all %d", upd, len(third))
	}
	got, _ = p.scanNDJSON(t, union, "types", fmt.Sprintf("version=%d", r2.Version))
	sameRows(t, "types at version 2 after the column changes", after, got)
}
