package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/internal/testenv"
)

// privateMariaDB is a MariaDB server of one test, started and stopped with
// scripts/mariadb.sh on its own data directory and port; the script loads
// sakila and creates the same test user as the shared server's.
type privateMariaDB struct {
	t      *testing.T
	script string
	dir    string
	port   string
}

func startPrivateMariaDB(t *testing.T) *privateMariaDB {
	t.Helper()
	script, err := filepath.Abs("../../scripts/mariadb.sh")
	if err != nil {
		t.Fatal(err)
	}
	// A short directory: the server's Unix socket lives in it.
	dir, err := os.MkdirTemp("", "e2e-mdb-")
	if err != nil {
		t.Fatal(err)
	}
	m := &privateMariaDB{t: t, script: script, dir: dir, port: strconv.Itoa(freePort(t))}
	t.Cleanup(func() {
		m.script1("stop")
		os.RemoveAll(dir)
	})
	m.start()
	return m
}

// script1 runs the script with one command. Its output goes to a file, not
// a pipe: the server it starts inherits stdout and stderr, and a pipe would
// keep Wait waiting for the server's end.
func (m *privateMariaDB) script1(cmd string) error {
	out, err := os.OpenFile(filepath.Join(m.dir, "script.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	c := exec.Command(m.script, cmd)
	c.Env = append(os.Environ(), "SNAPSTORE_MARIADB_DIR="+m.dir, "SNAPSTORE_MARIADB_PORT="+m.port)
	c.Stdout, c.Stderr = out, out
	if err := c.Run(); err != nil {
		b, _ := os.ReadFile(filepath.Join(m.dir, "script.log"))
		return fmt.Errorf("scripts/mariadb.sh %s: %v\n%s", cmd, err, b)
	}
	return nil
}

func (m *privateMariaDB) start() {
	m.t.Helper()
	if err := m.script1("start"); err != nil {
		m.t.Fatal(err)
	}
}

func (m *privateMariaDB) stop() {
	m.t.Helper()
	if err := m.script1("stop"); err != nil {
		m.t.Fatal(err)
	}
	if m.script1("status") == nil {
		m.t.Fatal("the private MariaDB still answers after stop")
	}
}

// bigRows is the size of the synthetic table of TestMariaDBStopMidRun: a
// run of it lasts long enough (seconds) for a stop to land in its middle.
const bigRows = 60000

// TestMariaDBStopMidRun stops a private MariaDB in the middle of a
// scheduled run: the run fails with a clear error (no password), the
// current version stays, the scheduler keeps going, and once MariaDB is
// back the next scheduled run succeeds.
func TestMariaDBStopMidRun(t *testing.T) {
	t.Parallel() // mostly waiting (MariaDB, HTTP); runs beside the other long test
	e := getMySQLEnv(t)
	start := time.Now()
	m := startPrivateMariaDB(t)
	at := func() string { return "[" + time.Since(start).Round(100*time.Millisecond).String() + "] " }
	t.Logf("private MariaDB on port %s: started in %s", m.port, time.Since(start).Round(time.Millisecond))
	pe := mysqlEnv{testenv.MySQLServer{Host: "127.0.0.1", Port: m.port, User: e.User, Password: e.Password}}
	root := pe.open(t, "")
	for _, q := range []string{
		"CREATE DATABASE e2e",
		`CREATE TABLE e2e.big (
			id INT UNSIGNED NOT NULL PRIMARY KEY,
			code CHAR(12) NOT NULL,
			name VARCHAR(64) NOT NULL,
			qty INT NOT NULL,
			price DECIMAL(12,2) NOT NULL,
			created DATETIME NOT NULL,
			note VARCHAR(96) NULL)`,
		fmt.Sprintf(`INSERT INTO e2e.big SELECT seq, UPPER(LEFT(MD5(seq), 12)), CONCAT('row-', seq, '-', SHA1(seq)),
			(seq * 7919) %% 100000, ((seq * 104729) %% 10000000) / 100, '2020-01-01 00:00:00' + INTERVAL seq MINUTE,
			IF(seq %% 3 = 0, NULL, CONCAT('note ', MD5(seq * 17))) FROM e2e.seq_1_to_%d`, bigRows),
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	src := pe.open(t, "e2e")
	spec := loadSpec(t, src, "e2e", "big")

	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "priv", pe.Host, pe.Port, pe.User, "e2e")
	adapter := map[string]any{"name": "big", "connection": "priv", "resource": "big", "dataset": "big"}
	p.createAdapter(t, adapter)
	t0 := time.Now()
	r1 := p.mustRun(t, "big")
	t.Logf(at()+"first run (manual) of %d rows: %s", bigRows, time.Since(t0).Round(time.Millisecond))
	v1 := r1.Version
	c1 := spec.read(t, src)

	// Change the source, so that the stopped run had something to write,
	// then schedule the adapter.
	execAll(t, src, []stmt{
		{"UPDATE big SET qty = qty + 1 WHERE id % 10 = 0", bigRows / 10},
		{"UPDATE big SET note = NULL WHERE id % 3 = 1 AND id % 7 = 0", -1},
		{"DELETE FROM big WHERE id % 1000 = 1", bigRows / 1000},
		{fmt.Sprintf("INSERT INTO big VALUES (%d, 'NEWROW', 'new', 1, 0.01, '2030-01-01 00:00:00', NULL)", bigRows+1), 1},
	})
	c2 := spec.read(t, src)
	adapter["schedule"] = "@every 2s"
	p.jsonCall(t, http.StatusOK, "PUT", "/v1/adapters/big", adapter, nil)

	// Stop MariaDB once a scheduled run has read some rows but not all.
	var mid runRecord
	poll(t, 60*time.Second, "a scheduled run in its middle", func() bool {
		for _, r := range p.runs(t, "big", 50) {
			if r.Trigger == "schedule" && r.Status == "running" && r.RowsRead > 0 && r.RowsRead < int64(len(c2)) {
				mid = r
				return true
			}
		}
		return false
	})
	t0 = time.Now()
	m.stop()
	t.Logf(at()+"stopped MariaDB in %s during run %s at %d of %d rows", time.Since(t0).Round(time.Millisecond), mid.ID, mid.RowsRead, len(c2))

	var failed runRecord
	poll(t, 60*time.Second, "the end of run "+mid.ID, func() bool {
		failed = p.getRun(t, mid.ID)
		return failed.Status != "running"
	})
	// The password check of every response is in proc.call.
	if failed.Status != "failed" || failed.Version != 0 || failed.EndedAt == "" {
		t.Errorf("run %s after MariaDB stopped: status %q version %d ended_at %q, want failed with no version", failed.ID, failed.Status, failed.Version, failed.EndedAt)
	}
	if !clearSourceError(failed.Error) {
		t.Errorf("run %s: error %q does not say that reading the source failed", failed.ID, failed.Error)
	}
	t.Logf(at()+"failed run: rows_read %d, error %q", failed.RowsRead, failed.Error)

	// The current version is untouched, and the scheduler keeps trying.
	if d := p.dataset(t, "big"); d.CurrentVersion != v1 {
		t.Errorf("after the failed run: current version %d, want %d", d.CurrentVersion, v1)
	}
	got, ver := p.scanNDJSON(t, spec, "big", "")
	if ver != v1 {
		t.Errorf("after the failed run: read at version %d, want %d", ver, v1)
	}
	sameRows(t, "big after the failed run", c1, got)
	var down runRecord
	poll(t, 30*time.Second, "a scheduled run while MariaDB is down", func() bool {
		for _, r := range p.runs(t, "big", 50) {
			if r.ID > failed.ID && r.Trigger == "schedule" && r.Status == "failed" {
				down = r
				return true
			}
		}
		return false
	})
	if !clearSourceError(down.Error) {
		t.Errorf("run %s while MariaDB is down: error %q does not say that the source is unreachable", down.ID, down.Error)
	}
	t.Logf(at()+"run while MariaDB is down: error %q", down.Error)

	// MariaDB back: the next scheduled run succeeds with the changed source.
	m.start()
	back := time.Now().UTC()
	var ok runRecord
	poll(t, 120*time.Second, "a successful scheduled run after MariaDB is back", func() bool {
		for _, r := range p.runs(t, "big", 50) {
			st, err := time.Parse(time.RFC3339Nano, r.StartedAt)
			if err == nil && st.After(back) && r.Trigger == "schedule" && r.Status == "succeeded" {
				ok = r
				return true
			}
		}
		return false
	})
	t.Logf(at()+"MariaDB back: run %s succeeded %s later", ok.ID, time.Since(back).Round(time.Millisecond))
	// No more runs: the checks below read a fixed current version.
	delete(adapter, "schedule")
	p.jsonCall(t, http.StatusOK, "PUT", "/v1/adapters/big", adapter, nil)
	poll(t, 120*time.Second, "the end of scheduled runs", func() bool {
		for _, r := range p.runs(t, "big", 50) {
			if r.Status == "running" {
				return false
			}
		}
		return true
	})
	t.Logf("%sscheduled runs ended", at())
	d := p.dataset(t, "big")
	if ok.Version <= v1 || d.CurrentVersion != ok.Version {
		t.Errorf("after MariaDB is back: run %s committed version %d, current %d, first version %d", ok.ID, ok.Version, d.CurrentVersion, v1)
	}
	got, ver = p.scanNDJSON(t, spec, "big", "")
	if ver != ok.Version {
		t.Errorf("after MariaDB is back: read at version %d, want %d", ver, ok.Version)
	}
	sameRows(t, "big after MariaDB is back", c2, got)
	p.checkDiff(t, spec, "big", v1, ok.Version, c1, c2)
	t.Logf("whole test: %s", time.Since(start).Round(time.Millisecond))
}

// clearSourceError reports whether a run's error says what failed: it
// names the table or the data connection, and says the source went away,
// cannot be connected to, or is unavailable.
func clearSourceError(msg string) bool {
	m := strings.ToLower(msg)
	return (strings.Contains(m, "big") || strings.Contains(m, `"priv"`)) &&
		(strings.Contains(m, "unavailable") || strings.Contains(m, "went away") || strings.Contains(m, "cannot connect: connection refused"))
}

// runs lists the newest runs of adapter.
func (p *proc) runs(t testing.TB, adapter string, limit int) []runRecord {
	t.Helper()
	var out struct {
		Runs []runRecord `json:"runs"`
	}
	p.jsonCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/adapters/%s/runs?limit=%d", adapter, limit), nil, &out)
	return out.Runs
}
