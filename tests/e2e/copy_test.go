package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the edge's source file, written by the test
)

// copyVersion is what a copy test reads of a version.
type copyVersion struct {
	Version int64 `json:"version"`
	Source  struct {
		Resource string `json:"resource"`
	} `json:"source"`
	Stats struct {
		Rows     int64  `json:"rows"`
		Checksum string `json:"checksum"`
	} `json:"stats"`
}

func (p *proc) copyVersion(t *testing.T, dataset string, v int64) copyVersion {
	t.Helper()
	var cv copyVersion
	p.jsonCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/%s/versions/%d", dataset, v), nil, &cv)
	return cv
}

// rowsOf is the NDJSON scan of one version, whole.
func (p *proc) rowsOf(t *testing.T, dataset string, v int64) []byte {
	t.Helper()
	return p.mustCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/%s/rows?version=%d", dataset, v), nil, "Accept", "application/x-ndjson").body
}

// TestCopyEdgeToCentral runs two snapstore processes, each on its own
// Pebble: the edge takes versions of a SQLite table, the central server
// copies the edge's dataset through a snapstore connection after every
// few edge runs, with inserts, updates, deletes and schema changes in
// between, 30 edge runs in all. Each copied version must be the edge
// version it names, row for row, with the same row count and checksum,
// read by diff while the edge keeps the version copied last and in full
// after a schema change or after GC on the edge collected it. The edge is
// killed with SIGKILL in the middle of a copy run: the run fails with
// source_unavailable, the central current version stays, and once the
// edge is back the next run succeeds.
func TestCopyEdgeToCentral(t *testing.T) { testCopyEdgeToCentral(t) }

// TestCopyEdgeToCentralHBase is TestCopyEdgeToCentral with the central
// server on the test HBase.
func TestCopyEdgeToCentralHBase(t *testing.T) { testCopyEdgeToCentral(t, hbaseEnv(t)...) }

// testCopyEdgeToCentral runs the test with centralEnv in the central
// server's environment (its storage).
func testCopyEdgeToCentral(t *testing.T, centralEnv ...string) {
	const rows = 60000
	const readerToken, adminToken = "e2e-edge-reader-Qz81v", "e2e-edge-admin-Wm27k"
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
	exec(`CREATE TABLE readings (site TEXT NOT NULL, seq INTEGER NOT NULL, value REAL, amount DECIMAL(12,3), label TEXT, raw BLOB, doc JSON, at DATETIME,
		PRIMARY KEY (site, seq))`)
	exec(fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		INSERT INTO readings SELECT CASE i %% 3 WHEN 0 THEN '' WHEN 1 THEN 'north/1' ELSE 'south 2' END, i, i / 7.0, (i %% 1000) || '.125',
			'reading ' || i || ' ' || hex(randomblob(40)), randomblob(i %% 17), CASE WHEN i %% 5 = 0 THEN NULL ELSE '{"i": ' || i || ', "f": 1.10}' END,
			datetime(1700000000 + i, 'unixepoch') FROM n`, rows))

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
	var test struct {
		OK      bool   `json:"ok"`
		Cause   string `json:"cause"`
		Message string `json:"message"`
	}
	central.jsonCall(t, http.StatusOK, "POST", "/v1/connections/edge/test", nil, &test)
	if !test.OK {
		t.Fatalf("test of the edge connection: %+v", test)
	}

	edge.mustRun(t, "readings")
	central.createAdapter(t, map[string]any{"name": "readings-copy", "connection": "edge", "resource": "readings", "dataset": "plant_readings",
		"retention": map[string]any{"min_versions": 50}, "guard": map[string]any{"max_shrink": 1}})

	// check compares a central version with the edge version it names.
	check := func(step string, centralV int64) {
		t.Helper()
		cv := central.copyVersion(t, "plant_readings", centralV)
		name, num, ok := strings.Cut(cv.Source.Resource, "@")
		ev, err := strconv.ParseInt(num, 10, 64)
		if !ok || name != "readings" || err != nil {
			t.Fatalf("%s: central version %d records resource %q, want readings@N", step, centralV, cv.Source.Resource)
		}
		sv := edge.copyVersion(t, "readings", ev)
		if cv.Stats.Rows != sv.Stats.Rows || cv.Stats.Checksum != sv.Stats.Checksum {
			t.Errorf("%s: central version %d: %d rows, checksum %s; edge version %d: %d rows, checksum %s",
				step, centralV, cv.Stats.Rows, cv.Stats.Checksum, ev, sv.Stats.Rows, sv.Stats.Checksum)
		}
		if got, want := central.rowsOf(t, "plant_readings", centralV), edge.rowsOf(t, "readings", ev); string(got) != string(want) {
			t.Errorf("%s: the rows of central version %d (%d bytes) differ from edge version %d (%d bytes)", step, centralV, len(got), ev, len(want))
		}
		t.Logf("%s: central version %d = edge version %d (%d rows, checksum %s)", step, centralV, ev, cv.Stats.Rows, cv.Stats.Checksum)
	}
	c := central.mustRun(t, "readings-copy")
	check("first copy", c.Version)
	modeOf := func(id string) string {
		var rec struct {
			Mode string `json:"mode"`
		}
		central.jsonCall(t, http.StatusOK, "GET", "/v1/runs/"+id, nil, &rec)
		return rec.Mode
	}
	if m := modeOf(c.ID); m != "full" {
		t.Errorf("first copy: mode %q, want full", m)
	}

	changes := []string{
		`INSERT INTO readings SELECT 'east', seq, value * 2, amount, label, raw, doc, at FROM readings WHERE seq <= 500`,
		`UPDATE readings SET value = -value, doc = '{"changed": true}' WHERE seq % 97 = 0`,
		`DELETE FROM readings WHERE seq % 89 = 0`,
		`UPDATE readings SET label = NULL, raw = x'' WHERE site = 'east' AND seq % 2 = 0`,
		`DELETE FROM readings WHERE site = 'north/1' AND seq > 50000`,
		`INSERT INTO readings VALUES ('', -1, 1e308, '-0.001', 'tab	and "quote" <&> é', x'00ff00', 'null', '2026-12-05 21:45:00.5')`,
	}
	for i, q := range changes {
		exec(q)
		edge.mustRun(t, "readings")
		if i%2 == 1 { // the copy after every two edge runs
			c = central.mustRun(t, "readings-copy")
			check(fmt.Sprintf("copy after change %d", i+1), c.Version)
			if m := modeOf(c.ID); m != "diff" {
				t.Errorf("copy after change %d: mode %q, want diff (the edge keeps the version copied last)", i+1, m)
			}
		}
	}

	// A schema change on the edge: the next copy reads in full. Kill the
	// edge in the middle of it. A run that ends before a poll sees it in
	// the middle is a normal copy: check it, try again.
	exec(`ALTER TABLE readings ADD COLUMN note TEXT DEFAULT 'n/a'`)
	exec(`UPDATE readings SET amount = '7.000' WHERE seq % 11 = 0`)
	edge.mustRun(t, "readings")
	before := central.dataset(t, "plant_readings").CurrentVersion
	var killed runRecord
	for attempt := 1; killed.ID == ""; attempt++ {
		if attempt > 5 {
			t.Fatal("5 copy runs ended before a poll saw one in the middle")
		}
		var rec runRecord
		central.jsonCall(t, http.StatusAccepted, "POST", "/v1/adapters/readings-copy/runs", nil, &rec)
		for {
			cur := central.getRun(t, rec.ID)
			if cur.Status == "running" && cur.RowsRead >= 5000 {
				edge.kill()
				killed = cur
				t.Logf("attempt %d: killed the edge with copy run %s at %d rows", attempt, cur.ID, cur.RowsRead)
				break
			}
			if cur.Status != "running" {
				if cur.Status != "succeeded" {
					t.Fatalf("copy run %s: %s %s", cur.ID, cur.Status, cur.Error)
				}
				check(fmt.Sprintf("copy attempt %d", attempt), cur.Version)
				before = cur.Version
				// The copy has the new schema now: the next one would
				// be a diff, too quick to kill; change the schema again.
				exec(fmt.Sprintf(`ALTER TABLE readings ADD COLUMN note%d TEXT`, attempt))
				edge.mustRun(t, "readings")
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	var ended runRecord
	poll(t, 30*time.Second, "the copy run to end after the edge was killed", func() bool {
		ended = central.getRun(t, killed.ID)
		return ended.Status != "running"
	})
	if ended.Status != "failed" || ended.Code != "source_unavailable" || !strings.Contains(ended.Error, "was cut") {
		t.Errorf("copy run with the edge killed: status %s code %s error %q, want failed with source_unavailable", ended.Status, ended.Code, ended.Error)
	}
	t.Logf("copy run with the edge killed: %s (%s)", ended.Code, ended.Error)
	if got := central.dataset(t, "plant_readings").CurrentVersion; got != before {
		t.Errorf("after the edge was killed: central current version %d, want %d", got, before)
	}
	// Down: the next run fails fast and changes nothing either.
	if r, err := central.runWait("readings-copy"); err != nil || r.Status != "failed" || r.Code != "source_unavailable" {
		t.Errorf("copy run with the edge down: %+v %v", r, err)
	}

	// The edge back on its data (on another port, which the connection is
	// told): the next copy succeeds, equal to the edge's current version.
	edge.start()
	central.jsonCall(t, http.StatusOK, "PUT", "/v1/connections/edge", map[string]any{"name": "edge", "type": "snapstore",
		"options": map[string]any{"url": edge.base, "token": "env:E2E_MYSQL_PW", "chunk_rows": 1000, "connect_timeout": "3s"}}, nil)
	c = central.mustRun(t, "readings-copy")
	check("copy after the edge came back", c.Version)
	if m := modeOf(c.ID); m != "full" {
		t.Errorf("copy after the schema changed: mode %q, want full", m)
	}
	// And the next, after a change, by diff again.
	exec(`DELETE FROM readings WHERE seq % 13 = 0`)
	edge.mustRun(t, "readings")
	c = central.mustRun(t, "readings-copy")
	check("copy after a delete", c.Version)
	if m := modeOf(c.ID); m != "diff" {
		t.Errorf("copy after a delete: mode %q, want diff", m)
	}
	if want := fmt.Sprintf("readings@%d", edge.dataset(t, "readings").CurrentVersion); central.copyVersion(t, "plant_readings", c.Version).Source.Resource != want {
		t.Errorf("copy after the edge came back: not of the edge's current version %s", want)
	}

	// More edge runs, up to 30 in all, inserts, updates and deletes in
	// turn, the copy after every third: by diff, since the edge keeps
	// every version (min_versions 50).
	var runs struct {
		Runs []runRecord `json:"runs"`
	}
	edge.jsonCall(t, http.StatusOK, "GET", "/v1/runs?adapter=readings&status=succeeded&limit=1000", nil, &runs)
	edgeRuns := len(runs.Runs)
	for i := 0; edgeRuns < 30; i++ {
		switch i % 3 {
		case 0:
			exec(fmt.Sprintf(`INSERT INTO readings (site, seq, value, amount, label, raw, doc, at) SELECT 'west', seq + %d, value, amount, label, raw, doc, at FROM readings WHERE site = 'south 2' AND seq <= 300`, 1000000*(i+1)))
		case 1:
			exec(fmt.Sprintf(`UPDATE readings SET value = value + 1, label = 'run %d' WHERE seq %% %d = 0`, i, 101+i))
		default:
			exec(fmt.Sprintf(`DELETE FROM readings WHERE site = 'west' AND seq %% %d = 0`, 3+i%5))
		}
		edge.mustRun(t, "readings")
		edgeRuns++
		if i%3 == 2 {
			c = central.mustRun(t, "readings-copy")
			check(fmt.Sprintf("copy after edge run %d", edgeRuns), c.Version)
			if m := modeOf(c.ID); m != "diff" {
				t.Errorf("copy after edge run %d: mode %q, want diff", edgeRuns, m)
			}
		}
	}
	// GC on the edge removes the version copied last: the next copy
	// reads in full, and is again the edge's version row for row.
	// (The retention reaches the dataset with the edge's next run.)
	copied := central.copyVersion(t, "plant_readings", c.Version).Source.Resource
	edge.jsonCall(t, http.StatusOK, "PUT", "/v1/adapters/readings", map[string]any{"connection": "plant", "resource": "readings",
		"retention": map[string]any{"ttl": "1ms", "min_versions": 1}}, nil)
	exec(`UPDATE readings SET label = 'after gc' WHERE seq % 7 = 0`)
	edge.mustRun(t, "readings")
	time.Sleep(10 * time.Millisecond)
	edge.jsonCall(t, http.StatusOK, "POST", "/v1/datasets/readings/gc", nil, nil)
	_, num, _ := strings.Cut(copied, "@")
	if resp, err := edge.call("GET", "/v1/datasets/readings/versions/"+num, nil); err != nil || resp.status != http.StatusNotFound && resp.status != http.StatusGone {
		t.Fatalf("edge version %s after GC: %d %v, want it collected", num, resp.status, err)
	}
	c = central.mustRun(t, "readings-copy")
	check("copy after the edge collected the version copied last", c.Version)
	if m := modeOf(c.ID); m != "full" {
		t.Errorf("copy after the edge collected %s: mode %q, want full", copied, m)
	}
	t.Logf("%d edge runs; the copy by diff while the edge kept the version, in full after its GC", edgeRuns+1)

	// The token the central server holds never shows in a response or a
	// log line of either server (cleanup checks the logs).
	var conn map[string]any
	central.jsonCall(t, http.StatusOK, "GET", "/v1/connections/edge", nil, &conn)
	if b, _ := json.Marshal(conn); strings.Contains(string(b), readerToken) {
		t.Errorf("the connection shows the token: %s", b)
	}
}

// createAdapterConn creates a data connection through the API.
func (p *proc) createAdapterConn(t *testing.T, spec map[string]any) {
	t.Helper()
	p.jsonCall(t, http.StatusCreated, "POST", "/v1/connections", spec, nil)
}
