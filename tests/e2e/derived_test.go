package e2e

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestDerivedCopyEdgeToCentral runs two snapstore processes, each on its
// own Pebble: the central server keeps a derived copy of the edge's
// dataset (source_options: some columns, one site's keys below a bound)
// through a snapstore connection. Each copied version must be the edge
// version it names read with the same columns and key range, row for
// row, with a checksum of its own, equal to that of a full copy of the
// same version; after changes inside and outside the range the copy runs
// by diff, and a changed range reads in full.
func TestDerivedCopyEdgeToCentral(t *testing.T) { testDerivedCopyEdgeToCentral(t) }

// TestDerivedCopyEdgeToCentralHBase is TestDerivedCopyEdgeToCentral with
// the central server on the test HBase.
func TestDerivedCopyEdgeToCentralHBase(t *testing.T) {
	testDerivedCopyEdgeToCentral(t, hbaseEnv(t)...)
}

func testDerivedCopyEdgeToCentral(t *testing.T, centralEnv ...string) {
	const rows = 20000
	const readerToken, adminToken = "e2e-edge-reader-Dv93k", "e2e-edge-admin-Hq51x"
	srcDir := t.TempDir()
	srcPath := filepath.Join(srcDir, "plant.db")
	src, err := sql.Open("sqlite", srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.SetMaxOpenConns(1)
	exec := func(q string) {
		t.Helper()
		if _, err := src.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE readings (site TEXT NOT NULL, seq INTEGER NOT NULL, value REAL, amount DECIMAL(12,3), label TEXT, raw BLOB, at DATETIME,
		PRIMARY KEY (site, seq))`)
	exec(fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		INSERT INTO readings SELECT CASE i %% 3 WHEN 0 THEN '' WHEN 1 THEN 'north/1' ELSE 'south 2' END, i, i / 7.0, (i %% 1000) || '.125',
			'reading ' || i, randomblob(i %% 17), datetime(1700000000 + i, 'unixepoch') FROM n`, rows))

	// A server with tokens takes an API SQLite connection only to a file
	// under connection_file_dirs.
	edge := startServerWith(t, readerToken, fmt.Sprintf(`auth:
  tokens:
    - {name: ops, token: env:E2E_ADMIN_TOKEN, role: admin}
    - {name: central, token: env:E2E_MYSQL_PW, role: reader}
connection_file_dirs: [%q]
`, srcDir), "E2E_ADMIN_TOKEN="+adminToken)
	edge.addSecret(adminToken)
	edge.token = adminToken
	central := startServer(t, readerToken, centralEnv...) // the reader token as env:E2E_MYSQL_PW

	edge.createAdapterConn(t, map[string]any{"name": "plant", "type": "sqlite", "options": map[string]any{"path": srcPath}})
	edge.createAdapter(t, map[string]any{"name": "readings", "connection": "plant", "resource": "readings", "retention": map[string]any{"min_versions": 50}})
	central.createAdapterConn(t, map[string]any{"name": "edge", "type": "snapstore",
		"options": map[string]any{"url": edge.base, "token": "env:E2E_MYSQL_PW", "chunk_rows": 1000, "connect_timeout": "3s"}})
	edge.mustRun(t, "readings")

	columns := []string{"site", "seq", "value", "label", "at"}
	opts := map[string]any{"columns": columns, "start": []string{"north/1"}, "end": []string{"north/1", "15000"}}
	adapter := func(name string) map[string]any {
		return map[string]any{"name": name, "connection": "edge", "resource": "readings", "dataset": name, "source_options": opts,
			"retention": map[string]any{"min_versions": 50}, "guard": map[string]any{"max_shrink": 1}}
	}
	// A key column left out is refused, saying so.
	if r := central.mustCall(t, http.StatusBadRequest, "POST", "/v1/adapters", map[string]any{"name": "bad", "connection": "edge", "resource": "readings",
		"source_options": map[string]any{"columns": []string{"site", "value"}}}); !strings.Contains(string(r.body), `the key column \"seq\"`) {
		t.Errorf("a derived copy without a key column: %s", r.body)
	}
	central.createAdapter(t, adapter("north"))

	// scan is the edge's scan of version ev with the derivation.
	scan := func(ev string) []byte {
		q := url.Values{"version": {ev}, "columns": {strings.Join(columns, ",")}, "start": {"north/1"}, "end": {"north/1", "15000"}}
		return edge.mustCall(t, http.StatusOK, "GET", "/v1/datasets/readings/rows?"+q.Encode(), nil, "Accept", "application/x-ndjson").body
	}
	wantSuffix := ` columns=["site","seq","value","label","at"] start=["north/1"] end=["north/1","15000"]`
	full := 0
	// check compares a central version of dataset with the edge version it
	// names, and with a full copy of that version made now; it returns the
	// run's mode.
	check := func(step, dataset string, run runRecord) string {
		t.Helper()
		cv := central.copyVersion(t, dataset, run.Version)
		name, rest, ok := strings.Cut(cv.Source.Resource, "@")
		ev, suffix, _ := strings.Cut(rest, " ")
		if !ok || name != "readings" || " "+suffix != wantSuffix {
			t.Fatalf("%s: central version %d records resource %q, want readings@N%s", step, run.Version, cv.Source.Resource, wantSuffix)
		}
		got, want := central.rowsOf(t, dataset, run.Version), scan(ev)
		if string(got) != string(want) || int64(strings.Count(string(want), "\n")) != cv.Stats.Rows {
			t.Errorf("%s: central version %d: %d rows (%d bytes); the edge's derived scan of version %s: %d rows (%d bytes)",
				step, run.Version, cv.Stats.Rows, len(got), ev, strings.Count(string(want), "\n"), len(want))
		}
		if sv := edge.copyVersion(t, "readings", mustInt(t, ev)); sv.Stats.Checksum == cv.Stats.Checksum {
			t.Errorf("%s: the derived copy has the edge version's checksum %s", step, sv.Stats.Checksum)
		}
		// A full copy of the same edge version, derived alike.
		full++
		fname := fmt.Sprintf("north-full%d", full)
		central.createAdapter(t, adapter(fname))
		fr := central.mustRun(t, fname)
		fv := central.copyVersion(t, fname, fr.Version)
		if fv.Source.Resource != cv.Source.Resource || fv.Stats.Checksum != cv.Stats.Checksum || fv.Stats.Rows != cv.Stats.Rows {
			t.Errorf("%s: the full copy %s: %d rows checksum %s; the copy %s: %d rows checksum %s (the edge moved meanwhile?)",
				step, fv.Source.Resource, fv.Stats.Rows, fv.Stats.Checksum, cv.Source.Resource, cv.Stats.Rows, cv.Stats.Checksum)
		}
		mode := central.runMode(t, run.ID)
		t.Logf("%s: central version %d = edge version %s derived (%d rows, checksum %s, mode %s)", step, run.Version, ev, cv.Stats.Rows, cv.Stats.Checksum, mode)
		return mode
	}

	if m := check("first copy", "north", central.mustRun(t, "north")); m != "full" {
		t.Errorf("first copy: mode %q, want full", m)
	}
	changes := []string{
		// in the range: kept columns, a column left out, deletes; out of it too
		`UPDATE readings SET value = -value, label = 'changed' WHERE seq % 97 = 1`,
		`UPDATE readings SET amount = '9.999', raw = x'00' WHERE seq % 5 = 0`,
		`DELETE FROM readings WHERE seq % 89 = 0`,
		`INSERT INTO readings SELECT site, seq + 100000, value, amount, label, raw, at FROM readings WHERE seq % 50 = 1`,
		`INSERT INTO readings VALUES ('north/1', 0, 1e308, '-0.001', 'tab	and "quote" <&> é', x'00ff00', '2026-12-05 21:45:00.5'), ('north/0', 1, 1, 1, 'before', NULL, NULL)`,
		`DELETE FROM readings WHERE site = 'north/1' AND seq BETWEEN 14000 AND 14500`,
	}
	for i, q := range changes {
		exec(q)
		edge.mustRun(t, "readings")
		if i%2 == 1 {
			if m := check(fmt.Sprintf("copy after change %d", i+1), "north", central.mustRun(t, "north")); m != "diff" {
				t.Errorf("copy after change %d: mode %q, want diff", i+1, m)
			}
		}
	}
	// An unchanged edge: verified, no new version.
	before := central.dataset(t, "north").CurrentVersion
	if r := central.mustRun(t, "north"); r.Version != before || central.runMode(t, r.ID) != "diff" {
		t.Errorf("copy of an unchanged edge: version %d (current %d), mode %s", r.Version, before, central.runMode(t, r.ID))
	}
	// Another range: read in full once, then by diff again.
	opts["end"] = []string{"north/1", "5000"}
	wantSuffix = ` columns=["site","seq","value","label","at"] start=["north/1"] end=["north/1","5000"]`
	central.jsonCall(t, http.StatusOK, "PUT", "/v1/adapters/north", adapter("north"), nil)
	scan = func(ev string) []byte {
		q := url.Values{"version": {ev}, "columns": {strings.Join(columns, ",")}, "start": {"north/1"}, "end": {"north/1", "5000"}}
		return edge.mustCall(t, http.StatusOK, "GET", "/v1/datasets/readings/rows?"+q.Encode(), nil, "Accept", "application/x-ndjson").body
	}
	if m := check("copy with another range", "north", central.mustRun(t, "north")); m != "full" {
		t.Errorf("copy with another range: mode %q, want full", m)
	}
	exec(`UPDATE readings SET label = 'again' WHERE seq % 7 = 0`)
	edge.mustRun(t, "readings")
	if m := check("copy after another change", "north", central.mustRun(t, "north")); m != "diff" {
		t.Errorf("copy after another change: mode %q, want diff", m)
	}
}

// runMode is the mode of run id: full, diff, chunks, verify.
func (p *proc) runMode(t *testing.T, id string) string {
	t.Helper()
	var rec struct {
		Mode string `json:"mode"`
	}
	p.jsonCall(t, http.StatusOK, "GET", "/v1/runs/"+id, nil, &rec)
	return rec.Mode
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("not a version: %q", s)
	}
	return n
}
