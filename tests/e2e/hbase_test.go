package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store/hbase"
	"github.com/snapstore/snapstore/store/hbase/hbasetest"
)

// hbaseEnv returns the SNAPSTORE_* variables that put a server on the test
// HBase (scripts/hbase-standalone.sh), on a fresh table dropped when t
// ends. It skips t when there is no test HBase.
func hbaseEnv(t *testing.T) []string {
	t.Helper()
	opts := hbasetest.Options(t)
	opts.Table = "e2e_" + opts.Table
	t.Cleanup(func() {
		if err := hbase.DropTable(context.Background(), opts); err != nil {
			t.Logf("dropping %s:%s: %v", opts.Namespace, opts.Table, err)
		}
	})
	return []string{
		"SNAPSTORE_STORAGE_BACKEND=hbase",
		"SNAPSTORE_STORAGE_HBASE_THRIFT=" + opts.Addr,
		"SNAPSTORE_STORAGE_HBASE_NAMESPACE=" + opts.Namespace,
		"SNAPSTORE_STORAGE_HBASE_TABLE=" + opts.Table,
	}
}

// TestHBaseTwoProcesses starts two servers on one HBase table: A writes,
// B reads (SNAPSTORE_HBASE_READ_ONLY). A run committed by A is read by B
// at the same version with the same rows; a second run after a source
// change shows up on B too, and B still reads the first version. B
// refuses writes; a second writer C starts beside A, reads what A
// committed, and takes the dataset's writer slot for a GC and frees it
// (docs/hbase.md, "Several processes on one table").
func TestHBaseTwoProcesses(t *testing.T) {
	e := getMySQLEnv(t)
	env := hbaseEnv(t)
	dbName := fmt.Sprintf("e2e_hbase_two_%d", os.Getpid())
	src := e.cloneTable(t, dbName, "rental")
	spec := loadSpec(t, src, dbName, "rental")

	a := startServer(t, e.Password, env...)
	b := startServer(t, e.Password, append(env, "SNAPSTORE_HBASE_READ_ONLY=true")...)

	a.createMySQLConnection(t, "src", e.Host, e.Port, e.User, dbName)
	a.createAdapter(t, map[string]any{"name": "rental", "connection": "src", "resource": "rental", "dataset": "rental"})
	rows1 := spec.read(t, src)
	start := time.Now()
	r1 := a.mustRun(t, "rental")
	t.Logf("run 1 on A: version %d, %d rows in %s", r1.Version, len(rows1), time.Since(start).Round(time.Millisecond))

	seen := time.Now()
	waitCurrent(t, b, "rental", r1.Version)
	t.Logf("B saw version %d %s after the run ended", r1.Version, time.Since(seen).Round(time.Millisecond))
	checkTable(t, b, spec, "rental", "", r1.Version, rows1)

	// Writes on B are refused; nothing of them reaches HBase.
	r, err := b.call("POST", "/v1/connections", map[string]any{
		"name": "other", "type": "mysql",
		"options": map[string]any{"host": e.Host, "port": atoi(t, e.Port), "user": e.User, "password": "env:" + pwEnv, "database": dbName},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.status < 400 {
		t.Errorf("creating a connection on the read-only B: status %d: %s", r.status, r.body)
	}
	t.Logf("write on B: %d %s", r.status, strings.TrimSpace(string(r.body)))
	if r, err = b.call("POST", "/v1/datasets/rental/gc", nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("GC on B: %d %s", r.status, strings.TrimSpace(string(r.body)))
	if r.status < 400 {
		t.Errorf("GC on the read-only B: status %d: %s", r.status, r.body)
	}

	// A second writer on the same table starts beside A (writer slots are
	// per dataset), and its GC of rental takes the dataset and frees it.
	c := startServer(t, e.Password, env...)
	waitCurrent(t, c, "rental", r1.Version)
	if r, err = c.call("POST", "/v1/datasets/rental/gc", nil); err != nil {
		t.Fatal(err)
	}
	if r.status != http.StatusOK {
		t.Errorf("GC on the second writer: %d %s", r.status, r.body)
	}

	execAll(t, src, []stmt{
		{"UPDATE rental SET return_date = '2006-01-01 00:00:00' WHERE rental_id IN (1, 500, 16000)", 3},
		{"DELETE FROM rental WHERE rental_id IN (2, 9000)", 2},
	})
	rows2 := spec.read(t, src)
	r2 := a.mustRun(t, "rental")
	if r2.Stats.Updated != 3 || r2.Stats.Deleted != 2 {
		t.Errorf("run 2 stats %+v, want 3 updated and 2 deleted", r2.Stats)
	}
	waitCurrent(t, b, "rental", r2.Version)
	checkTable(t, b, spec, "rental", "", r2.Version, rows2)
	got, ver := b.scanNDJSON(t, spec, "rental", fmt.Sprintf("version=%d", r1.Version))
	if ver != r1.Version {
		t.Errorf("B read version %d, want %d", ver, r1.Version)
	}
	sameRows(t, "B at version 1", rows1, got)
	if vs := versionIDs(b.versions(t, "rental")); len(vs) != 2 || vs[0] != r2.Version || vs[1] != r1.Version {
		t.Errorf("versions on B %v, want [%d %d]", vs, r2.Version, r1.Version)
	}
}

// waitCurrent polls p until dataset's current version is v (B refreshes
// its view at most a second old before each read).
func waitCurrent(t *testing.T, p *proc, dataset string, v int64) {
	t.Helper()
	var last response
	poll(t, 15*time.Second, fmt.Sprintf("%s at version %d on %s", dataset, v, p.base), func() bool {
		var err error
		last, err = p.call("GET", "/v1/datasets/"+dataset, nil)
		if err != nil || last.status != http.StatusOK {
			return false
		}
		return strings.Contains(string(last.body), fmt.Sprintf(`"current_version":%d`, v))
	})
}

// TestHBaseStoppedMidRun stops the private Thrift2 gateway of the writer A
// while a run is writing: the run fails with the store unavailable and the
// current version unchanged; the reader B, on the shared gateway, serves
// the previous version throughout; once the gateway is back nothing of the
// run is visible, A's GC reclaims its cells, and A's next run commits.
func TestHBaseStoppedMidRun(t *testing.T) {
	e := getMySQLEnv(t)
	env := hbaseEnv(t)
	g := hbasetest.StartGateway(t)
	dbName := fmt.Sprintf("e2e_hbase_outage_%d", os.Getpid())
	src := e.cloneTable(t, dbName, "rental")
	// 8 times sakila's rental, so that a run lasts long enough to be
	// caught in the middle.
	for k := 1; k < 8; k++ {
		execAll(t, src, []stmt{{fmt.Sprintf("INSERT INTO rental (rental_date, inventory_id, customer_id, return_date, staff_id) "+
			"SELECT rental_date + INTERVAL %d YEAR, inventory_id, customer_id, return_date, staff_id FROM rental WHERE rental_id <= 16049", k), -1}})
	}
	spec := loadSpec(t, src, dbName, "rental")

	aEnv := append([]string{}, env...)
	for i, kv := range aEnv {
		if strings.HasPrefix(kv, "SNAPSTORE_STORAGE_HBASE_THRIFT=") {
			aEnv[i] = "SNAPSTORE_STORAGE_HBASE_THRIFT=" + g.Addr
		}
	}
	a := startServer(t, e.Password, aEnv...)
	b := startServer(t, e.Password, append(env, "SNAPSTORE_HBASE_READ_ONLY=true")...)
	a.createMySQLConnection(t, "src", e.Host, e.Port, e.User, dbName)
	a.createAdapter(t, map[string]any{"name": "rental", "connection": "src", "resource": "rental", "dataset": "rental",
		"guard": map[string]any{"max_shrink": 1}})
	rows1 := spec.read(t, src)
	start := time.Now()
	r1 := a.mustRun(t, "rental")
	t.Logf("run 1: version %d, %d rows in %s", r1.Version, len(rows1), time.Since(start).Round(time.Millisecond))

	execAll(t, src, []stmt{{"UPDATE rental SET staff_id = 3 - staff_id", -1}})
	var rec runRecord
	a.jsonCall(t, http.StatusAccepted, "POST", "/v1/adapters/rental/runs", nil, &rec)
	for {
		cur := a.getRun(t, rec.ID)
		if cur.Status != "running" {
			t.Fatalf("run %s ended (%s, %q) before the gateway could be stopped", cur.ID, cur.Status, cur.Error)
		}
		if cur.RowsRead >= int64(len(rows1)/5) {
			t.Logf("stopping A's gateway with run %s at %d of %d rows (txn %d)", cur.ID, cur.RowsRead, len(rows1), cur.TxnID)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopAt := time.Now()
	g.Stop(t)
	t.Logf("gateway stopped in %s", time.Since(stopAt).Round(time.Millisecond))
	// A's run records live in HBase too, unreadable while its gateway is
	// down: the run's end is found in A's log.
	endRE := regexp.MustCompile(`msg="run ended without a new version" run=` + regexp.QuoteMeta(rec.ID) + ` .*status=(\S+) err="((?:[^"\\]|\\.)*)"`)
	var end []string
	poll(t, 2*time.Minute, "the run to fail", func() bool {
		b, _ := os.ReadFile(a.logPath)
		end = endRE.FindStringSubmatch(string(b))
		return end != nil
	})
	if end[1] != "failed" || !strings.Contains(end[2], "unavailable") {
		t.Fatalf("run with the gateway stopped: status %q error %q, want failed, store unavailable", end[1], end[2])
	}
	t.Logf("run 2 failed %s after the gateway stopped: %s", time.Since(stopAt).Round(time.Millisecond), end[2])
	// B reads version 1 while A's gateway is down.
	checkTable(t, b, spec, "rental", "", r1.Version, rows1)
	// A answers the run's final record from memory while HBase cannot
	// take it (adapters.U1); the stored one, which B reads, still says
	// running.
	if r := a.getRun(t, rec.ID); r.Status != "failed" || r.Code != "store_unavailable" {
		t.Errorf("A's record of run %s during the outage: status %q code %q, want failed store_unavailable", rec.ID, r.Status, r.Code)
	}
	if r := b.getRun(t, rec.ID); r.Status != "running" {
		t.Logf("B's record of run %s during the outage: status %q", rec.ID, r.Status)
	}
	// An outage longer than a writer slot's lease, as a gateway restart
	// under load can be.
	if d := 32*time.Second - time.Since(stopAt); d > 0 {
		time.Sleep(d)
	}

	g.Start(t)
	back := time.Now()
	t.Logf("gateway down for %s", back.Sub(stopAt).Round(time.Millisecond))
	// The final record A could not save during the outage is stored soon
	// after HBase answers again, without a restart: B reads it.
	poll(t, 20*time.Second, "the failed record stored after the outage", func() bool {
		r := b.getRun(t, rec.ID)
		if r.Status == "failed" && r.Code == "store_unavailable" {
			return true
		}
		time.Sleep(100 * time.Millisecond)
		return false
	})
	t.Logf("run record stored %s after the gateway came back", time.Since(back).Round(time.Millisecond))
	if d := a.dataset(t, "rental"); d.CurrentVersion != r1.Version {
		t.Errorf("A after the outage: current %d, want %d", d.CurrentVersion, r1.Version)
	}
	got, ver := a.scanNDJSON(t, spec, "rental", "")
	if ver != r1.Version {
		t.Errorf("A reads version %d, want %d", ver, r1.Version)
	}
	sameRows(t, "A after the outage", rows1, got)
	// A writes the dataset again once it learned what its failed run's
	// abort did (the keeper tries it every second) and, after an outage
	// longer than a writer slot's lease, took the slot again.
	var rep gcReport
	var last response
	poll(t, 30*time.Second, "GC on A after the outage", func() bool {
		var err error
		last, err = a.call("POST", "/v1/datasets/rental/gc", nil)
		if err == nil && last.status == http.StatusOK {
			return true
		}
		time.Sleep(100 * time.Millisecond)
		return false
	})
	if err := json.Unmarshal(last.body, &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("GC on A: %+v", rep)
	// Its transaction is not pruned yet: a write of it could still land
	// until the grace passed (snapshot.G6, 21.5 minutes on HBase).
	if rep.CellsDeleted == 0 || rep.InvalidTxnsPruned != 0 {
		t.Errorf("GC after the failed run: %+v, want its cells deleted and its transaction kept invalid", rep)
	}
	rows3 := spec.read(t, src)
	r3 := a.mustRun(t, "rental")
	waitCurrent(t, b, "rental", r3.Version)
	got, ver = b.scanNDJSON(t, spec, "rental", "")
	if ver != r3.Version {
		t.Errorf("B reads version %d, want %d", ver, r3.Version)
	}
	sameRows(t, "B after the run that followed the outage", rows3, got)
}
