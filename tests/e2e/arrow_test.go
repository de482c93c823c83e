package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pyclientsPython is the venv's python of scripts/pyclients.sh (pyarrow,
// pandas, polars, duckdb), or "" with the reason it is missing. Without
// it the test skips, except under CI=true, where it fails: CI runs make
// deps, which installs it.
func pyclientsPython(t *testing.T) string {
	t.Helper()
	py, err := filepath.Abs("../../.cache/pyclients/venv/bin/python")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		msg := "the Python data tools are not installed (" + py + "): run scripts/pyclients.sh install, or make deps"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return py
}

// TestArrowClients reads two versions of the MariaDB type table (every
// type family of docs/types.md) and their diff as Arrow and Parquet with
// pyarrow (the IPC stream over HTTP, read_table), pandas (read_parquet of
// the URL), polars (the files snapstore export wrote, and the URL by
// byte ranges) and DuckDB (the files, and a join of the two versions), and compares every value with the JSON read
// of the same version, NULLs included (testdata/arrow_clients.py).
func TestArrowClients(t *testing.T) {
	e := getMySQLEnv(t)
	py := pyclientsPython(t)
	dbName := fmt.Sprintf("e2e_arrow_%d", os.Getpid())
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
	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "src", e.Host, e.Port, e.User, dbName)
	p.createAdapter(t, map[string]any{"name": "types", "connection": "src", "resource": "types"})
	v1 := p.mustRun(t, "types").Version
	execAll(t, src, []stmt{
		{"SET SESSION sql_mode = ''", -1},
		{"UPDATE types SET bu = bu - 1, de = -de, tm = '838:59:59', js = '{\"a\":2}', bin = 'xyz', g = ST_GeomFromText('POINT(3 4)') WHERE id = 1", 1},
		{"UPDATE types SET ti = 0, vc = 'now set', bl = UNHEX('00'), d = '2026-11-29' WHERE id = 2", 1},
		{"UPDATE types SET ts = NULL, js = NULL, u = NULL WHERE id = 3", 1},
		{"DELETE FROM types WHERE id = 18446744073709551615", 1},
		{"INSERT INTO types (id, bi, de, dt) VALUES (9223372036854775808, -1, 1.5, '2026-01-02 03:04:05.000006')", 1},
	})
	v2 := p.mustRun(t, "types").Version
	// d and dt hold zero dates: text.
	readWithDataTools(t, p, py, "types", "id", v1, v2, map[string]string{
		"id": "uint64", "ti": "int64", "bu": "uint64", "de": "decimal256(65, 30)",
		"fl": "double", "bt": "uint64", "d": "string", "dt": "string",
		"ts": "timestamp[us, tz=UTC]", "tm": "duration[us]", "bin": "binary",
		"en": "dictionary<values=string, indices=int32, ordered=0>",
		"js": "extension<arrow.json>", "g": "binary",
	})
}

// readWithDataTools writes the JSON reads of versions v1 and v2 of
// dataset and their diff, exports both versions with snapstore export,
// and runs testdata/arrow_clients.py over them; types are the Arrow types
// some columns must have.
func readWithDataTools(t *testing.T, p *proc, py, dataset, key string, v1, v2 int64, types map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for _, v := range []int64{v1, v2} {
		r := p.mustCall(t, 200, "GET", fmt.Sprintf("/v1/datasets/%s/rows?version=%d", dataset, v), nil, "Accept", "application/x-ndjson")
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("ref-%d.ndjson", v)), r.body, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(binPath, "export", dataset, "--version", strconv.FormatInt(v, 10),
			"--out", filepath.Join(dir, fmt.Sprintf("%s-%d", dataset, v)), "--server", p.base).CombinedOutput()
		if err != nil {
			t.Fatalf("snapstore export: %v\n%s", err, out)
		}
	}
	r := p.mustCall(t, 200, "GET", fmt.Sprintf("/v1/datasets/%s/diff?from=%d&to=%d", dataset, v1, v2), nil)
	if err := os.WriteFile(filepath.Join(dir, "diff.ndjson"), r.body, 0o600); err != nil {
		t.Fatal(err)
	}
	tj, err := json.Marshal(types)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "testdata/arrow_clients.py", p.base, dataset, key, dir, strconv.FormatInt(v1, 10), strconv.FormatInt(v2, 10), string(tj))
	out, err := cmd.CombinedOutput()
	t.Logf("arrow_clients.py:\n%s", out)
	if err != nil {
		t.Fatalf("the data tools read other values than the JSON read: %v", err)
	}
}

// TestArrowClientsPostgres is TestArrowClients over PostgreSQL's types:
// numeric with and without a scale and NaN, timestamptz, infinity,
// 24:00:00, interval, arrays, enums.
func TestArrowClientsPostgres(t *testing.T) {
	e := getPostgresEnv(t)
	py := pyclientsPython(t)
	db := fmt.Sprintf("e2e_arrow_%d", os.Getpid())
	admin := e.connect(t, "postgres")
	e.exec(t, admin, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)", "CREATE DATABASE "+db)
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
	src := e.connect(t, db)
	e.exec(t, src, `CREATE TYPE mood AS ENUM ('sad', 'ok')`,
		`CREATE TABLE types (id bigint PRIMARY KEY, i integer, b boolean, n numeric(10,2), nn numeric, big numeric(50,10),
			r real, dp double precision, m money, t text, c char(5), by bytea, u uuid, d date, di date,
			ts timestamp(3), tz timestamptz, ti time, tt timetz, iv interval, j json, jb jsonb, a integer[], e mood, ip inet)`,
		`INSERT INTO types VALUES (1, -2147483648, true, -12.50, 1.2345678901234567890123, 1234567890123456789012345678901234567890.1234567890,
			3.14, 0.30000000000000004, -1234.56, 'text ☃', 'ab', '\x00ff', '123e4567-e89b-12d3-a456-426614174000', '2026-11-29', 'infinity',
			'2026-06-01 07:00:00.25', '2026-06-01 07:00:00.25+02', '21:07:43.5', '21:07:43.5-05:30', 'P1Y2M3DT4H5M6.5S',
			'{"a": 1.10}', '{"b": 1}', '{1,NULL,3}', 'ok', '10.0.0.1')`,
		`INSERT INTO types (id) VALUES (2)`,
		`INSERT INTO types VALUES (3, 0, false, 'NaN', 'NaN', 0, 'NaN', '-Infinity', 0, '', '', '', '00000000-0000-0000-0000-000000000000',
			'0044-03-15 BC', '-infinity', '1970-01-01 00:00:00', '1969-12-31 23:59:59.999999+00', '24:00:00', '00:00:00+00', 'P-1DT1H',
			'null', '[]', '{}', 'sad', '::1')`)
	p := startServer(t, e.Password)
	conn := map[string]any{"name": "pg", "type": "postgres", "options": map[string]any{
		"host": e.Host, "port": atoi(t, e.Port), "user": e.User, "password": "env:" + pwEnv, "database": db, "sslmode": "disable"}}
	p.mustCall(t, 201, "POST", "/v1/connections", conn)
	p.createAdapter(t, map[string]any{"name": "types", "connection": "pg", "resource": "public.types"})
	v1 := p.mustRun(t, "types").Version
	e.exec(t, src, `UPDATE types SET n = 1.5, tz = NULL, j = '{"a": 2}' WHERE id = 1`,
		`DELETE FROM types WHERE id = 3`,
		`INSERT INTO types (id, n, ts, ti) VALUES (4, 99999999.99, '2026-01-02 03:04:05.123', '12:00:00')`)
	v2 := p.mustRun(t, "types").Version
	// d holds a BC date and n NaN at v1: text there.
	readWithDataTools(t, p, py, "types", "id", v1, v2, map[string]string{
		"id": "int64", "b": "bool", "nn": "string", "big": "decimal256(50, 10)", "r": "double",
		"m": "string", "by": "binary", "di": "string", "ts": "timestamp[us]", "tz": "timestamp[us, tz=UTC]",
		"ti": "duration[us]", "iv": "string", "j": "extension<arrow.json>", "a": "extension<arrow.json>",
	})
}

// TestArrowClientsSQLite is TestArrowClients over a SQLite source.
func TestArrowClientsSQLite(t *testing.T) {
	if binPath == "" {
		t.Skip("no test service configured, so TestMain built no binary: run through `make test`")
	}
	arrowClientsSQLite(t)
}

// TestArrowClientsHBase is TestArrowClientsSQLite on the HBase backend.
func TestArrowClientsHBase(t *testing.T) {
	arrowClientsSQLite(t, hbaseEnv(t)...)
}

// arrowClientsSQLite reads a SQLite type table with the data tools from
// a server started with extraEnv.
func arrowClientsSQLite(t *testing.T, extraEnv ...string) {
	py := pyclientsPython(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "src.db")
	sqlite := func(sql string) {
		t.Helper()
		cmd := exec.Command(binPath, "sqlite", path)
		cmd.Stdin = strings.NewReader(sql)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("snapstore sqlite: %v\n%s", err, out)
		}
	}
	sqlite(`CREATE TABLE types (id INTEGER PRIMARY KEY, i BIGINT, r REAL, d DECIMAL(10,2), n NUMERIC, t TEXT, b BLOB, dt DATE, ts DATETIME, j JSON);
		INSERT INTO types VALUES (1, -9223372036854775808, 2.5, 12.5, 3.25, 'x', X'00FF', '2026-11-29', '2026-11-29 21:07:43.5', '{"a": [1, 2.50]}');
		INSERT INTO types (id) VALUES (2);
		INSERT INTO types VALUES (3, 9223372036854775807, -0.0, -0.01, 7, '', X'', '1970-01-01', '1970-01-01 00:00:00', '[]');`)
	p := startServer(t, "no-password-here", extraEnv...) // SQLite takes none
	p.mustCall(t, 201, "POST", "/v1/connections", map[string]any{"name": "lite", "type": "sqlite", "options": map[string]any{"path": path}})
	p.createAdapter(t, map[string]any{"name": "types", "connection": "lite", "resource": "types"})
	v1 := p.mustRun(t, "types").Version
	sqlite(`UPDATE types SET d = 99.99, j = NULL WHERE id = 1; DELETE FROM types WHERE id = 3; INSERT INTO types (id, d) VALUES (4, 0);`)
	v2 := p.mustRun(t, "types").Version
	readWithDataTools(t, p, py, "types", "id", v1, v2, map[string]string{
		"id": "int64", "i": "int64", "r": "double", "d": "decimal128(10, 2)", "n": "string",
		"b": "binary", "dt": "date32[day]", "ts": "timestamp[us]", "j": "extension<arrow.json>",
	})
}
