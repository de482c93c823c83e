package e2e

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"
)

// TestSakilaTables keeps a clone of Sakila as one dataset of all its
// tables, through the built binary: every table at the first version
// equals the source, the source changes (sakilaChanges: rows of eleven
// tables, a column added), and every table at the second version equals
// the changed source while the first version still reads as before.
func TestSakilaTables(t *testing.T) {
	e := getMySQLEnv(t)
	start := time.Now()
	dbName := fmt.Sprintf("e2e_sakila_tables_%d", os.Getpid())
	e.cloneSakila(t, dbName)
	src := e.open(t, dbName)
	tables := baseTables(t, src, dbName)
	if len(tables) != 16 {
		t.Fatalf("sakila has %d base tables, want 16: %v", len(tables), tables)
	}
	read := func() (map[string]tableSpec, map[string]map[string]canonRow) {
		return readSakilaTables(t, src, dbName, tables)
	}
	specs1, before := read()

	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "sakila", e.Host, e.Port, e.User, dbName)
	p.createAdapter(t, map[string]any{"name": "sakila", "connection": "sakila", "include": []string{"*"}, "parallelism": 3})
	r1 := p.mustRun(t, "sakila")
	checkSakilaTables(t, p, dbName, tables, "first run", r1.Version, specs1, before)

	execAll(t, src, sakilaChanges)
	specs2, after := read()
	r2 := p.mustRun(t, "sakila")
	if r2.Version <= r1.Version {
		t.Fatalf("second run: version %d after %d", r2.Version, r1.Version)
	}
	checkSakilaTables(t, p, dbName, tables, "second run", r2.Version, specs2, after)
	checkSakilaTables(t, p, dbName, tables, "first version after the second run", r1.Version, specs1, before)
	t.Logf("whole test: %s", time.Since(start).Round(time.Millisecond))
}

// readSakilaTables reads every table of the Sakila clone dbName.
func readSakilaTables(t *testing.T, src *sql.DB, dbName string, tables []string) (map[string]tableSpec, map[string]map[string]canonRow) {
	t.Helper()
	specs, rows := map[string]tableSpec{}, map[string]map[string]canonRow{}
	for _, tb := range tables {
		specs[tb] = loadSpec(t, src, dbName, tb)
		rows[tb] = specs[tb].read(t, src)
	}
	return specs, rows
}

// checkSakilaTables checks that version v of dataset sakila holds the
// tables of the clone dbName, each equal to want, read over HTTP.
func checkSakilaTables(t *testing.T, p *proc, dbName string, tables []string, what string, v int64, specs map[string]tableSpec, want map[string]map[string]canonRow) {
	t.Helper()
	var list struct {
		Tables []struct {
			Name string `json:"name"`
		} `json:"tables"`
	}
	p.jsonCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/sakila/tables?version=%d", v), nil, &list)
	var names []string
	for _, tb := range list.Tables {
		names = append(names, tb.Name)
	}
	var wantNames []string
	for _, tb := range tables {
		wantNames = append(wantNames, dbName+"."+tb)
	}
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Fatalf("%s: version %d holds tables %v, want %v", what, v, names, wantNames)
	}
	n := 0
	for _, tb := range tables {
		got, ver := p.scanNDJSONPath(t, specs[tb], "/v1/datasets/sakila/tables/"+url.PathEscape(dbName+"."+tb)+"/rows", fmt.Sprintf("version=%d", v))
		if ver != v {
			t.Errorf("%s: %s read at version %d, want %d", what, tb, ver, v)
		}
		sameRows(t, fmt.Sprintf("%s: %s at version %d", what, tb, v), want[tb], got)
		n += len(got)
	}
	t.Logf("%s: version %d, %d tables, %d rows equal to the source", what, v, len(tables), n)
}

// TestKillMidTablesRun kills the server with SIGKILL while a run of the
// Sakila dataset of sixteen tables has written some tables and not yet
// committed (one connection: the tables are read one after another),
// restarts it on the same data directory, and checks that every table at
// the current version is the previous version's exactly, and that the
// next run succeeds with the changed source.
func TestKillMidTablesRun(t *testing.T) {
	e := getMySQLEnv(t)
	dbName := fmt.Sprintf("e2e_kill_tables_%d", os.Getpid())
	e.cloneSakila(t, dbName)
	src := e.open(t, dbName)
	tables := baseTables(t, src, dbName)
	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "sakila", e.Host, e.Port, e.User, dbName)
	p.createAdapter(t, map[string]any{"name": "sakila", "connection": "sakila", "include": []string{"*"}, "parallelism": 1})
	prevSpecs, prev := readSakilaTables(t, src, dbName, tables)
	prevVersion := p.mustRun(t, "sakila").Version
	total := 0
	for _, rows := range prev {
		total += len(rows)
	}

	var killed runRecord
	var nextSpecs map[string]tableSpec
	var next map[string]map[string]canonRow
	for attempt := 1; killed.ID == ""; attempt++ {
		if attempt > 5 {
			t.Fatalf("5 runs of %d rows ended before a poll saw one in the middle", total)
		}
		execAll(t, src, []stmt{
			{fmt.Sprintf("UPDATE rental SET staff_id = 3 - staff_id WHERE rental_id %% 3 = %d", attempt%3), -1},
			{fmt.Sprintf("UPDATE actor SET last_name = 'KILLED %d' WHERE actor_id = 1", attempt), 1},
		})
		nextSpecs, next = readSakilaTables(t, src, dbName, tables)
		var rec runRecord
		p.jsonCall(t, http.StatusAccepted, "POST", "/v1/adapters/sakila/runs", nil, &rec)
		for {
			cur := p.getRun(t, rec.ID)
			// A third of the rows read: several tables written, not all.
			if cur.Status == "running" && cur.RowsRead >= int64(total/3) && cur.RowsRead < int64(total) {
				p.kill()
				killed = cur
				t.Logf("attempt %d: killed the server with run %s at %d of %d rows (txn %d)", attempt, cur.ID, cur.RowsRead, total, cur.TxnID)
				break
			}
			if cur.Status != "running" {
				if cur.Status != "succeeded" {
					t.Fatalf("run %s: status %q error %q", cur.ID, cur.Status, cur.Error)
				}
				t.Logf("attempt %d: run %s ended before a poll saw it in the middle", attempt, cur.ID)
				prevSpecs, prev, prevVersion = nextSpecs, next, cur.Version
				break
			}
			time.Sleep(time.Millisecond)
		}
	}

	p.start()
	if d := p.dataset(t, "sakila"); d.CurrentVersion != prevVersion {
		t.Errorf("after the kill: current version %d, want the previous one %d", d.CurrentVersion, prevVersion)
	}
	checkSakilaTables(t, p, dbName, tables, "after the kill", prevVersion, prevSpecs, prev)
	if rec := p.getRun(t, killed.ID); rec.Status != "aborted" && rec.Status != "failed" || rec.Version != 0 {
		t.Errorf("killed run %s after restart: status %q version %d, want aborted or failed, no version", rec.ID, rec.Status, rec.Version)
	}
	r := p.mustRun(t, "sakila")
	if r.TxnID <= killed.TxnID || r.Version <= prevVersion {
		t.Errorf("run after the kill: txn %d version %d, want after the killed txn %d and version %d", r.TxnID, r.Version, killed.TxnID, prevVersion)
	}
	checkSakilaTables(t, p, dbName, tables, "the run after the kill", r.Version, nextSpecs, next)
}
