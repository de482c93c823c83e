package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
// the URL), polars and DuckDB (the files snapstore export wrote, and a
// join of the two versions), and compares every value with the JSON read
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

	dir := t.TempDir()
	for _, v := range []int64{v1, v2} {
		r := p.mustCall(t, 200, "GET", fmt.Sprintf("/v1/datasets/types/rows?version=%d", v), nil, "Accept", "application/x-ndjson")
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("ref-%d.ndjson", v)), r.body, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(binPath, "export", "types", "--version", strconv.FormatInt(v, 10),
			"--out", filepath.Join(dir, fmt.Sprintf("types-%d", v)), "--server", p.base).CombinedOutput()
		if err != nil {
			t.Fatalf("snapstore export: %v\n%s", err, out)
		}
	}
	r := p.mustCall(t, 200, "GET", fmt.Sprintf("/v1/datasets/types/diff?from=%d&to=%d", v1, v2), nil)
	if err := os.WriteFile(filepath.Join(dir, "diff.ndjson"), r.body, 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(py, "testdata/arrow_clients.py", p.base, "types", "id", dir, strconv.FormatInt(v1, 10), strconv.FormatInt(v2, 10))
	out, err := cmd.CombinedOutput()
	t.Logf("arrow_clients.py:\n%s", out)
	if err != nil {
		t.Fatalf("the data tools read other values than the JSON read: %v", err)
	}
}
