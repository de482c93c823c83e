package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestKillMidRun kills the server with SIGKILL in the middle of a run of
// rental (the largest Sakila table, with a third of its rows changed so the
// run has cells to write), restarts it on the same data directory, and
// checks that the current version is the previous one exactly, that the
// killed run is recorded as not running, and that a new run succeeds.
func TestKillMidRun(t *testing.T) {
	e := getMySQLEnv(t)
	start := time.Now()
	dbName := fmt.Sprintf("e2e_crash_%d", os.Getpid())
	src := e.cloneTable(t, dbName, "rental")
	spec := loadSpec(t, src, dbName, "rental")

	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "src", e.Host, e.Port, e.User, dbName)
	p.createAdapter(t, map[string]any{"name": "rental", "connection": "src", "resource": "rental"})
	r1 := p.mustRun(t, "rental")
	prev, prevVersion := spec.read(t, src), r1.Version
	committed := []int64{r1.Version}

	// Reads during a run see one committed version whole: the previous one
	// while the run is in progress, or the new one once it committed.
	execAll(t, src, []stmt{{"UPDATE rental SET return_date = NULL WHERE rental_id % 5 = 0", -1}})
	next0 := spec.read(t, src)
	var rec0 runRecord
	p.jsonCall(t, http.StatusAccepted, "POST", "/v1/adapters/rental/runs", nil, &rec0)
	reads := 0
	for {
		cur := p.getRun(t, rec0.ID)
		if cur.Status != "running" {
			if cur.Status != "succeeded" {
				t.Fatalf("run %s: status %q error %q", cur.ID, cur.Status, cur.Error)
			}
			// One more read after the commit: the new version.
			got, ver := p.scanNDJSON(t, spec, "rental", "")
			if ver != cur.Version {
				t.Errorf("read after run %s: version %d, want %d", cur.ID, ver, cur.Version)
			}
			sameRows(t, "rental after the run", next0, got)
			prev, prevVersion = next0, cur.Version
			committed = append(committed, cur.Version)
			break
		}
		if cur.RowsRead == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		got, ver := p.scanNDJSON(t, spec, "rental", "")
		reads++
		switch ver {
		case prevVersion:
			sameRows(t, fmt.Sprintf("rental read %d during run %s", reads, cur.ID), prev, got)
		default:
			// Committed meanwhile: the read must be the whole new version.
			if ver < prevVersion {
				t.Errorf("read during run %s: version %d, older than the current %d", cur.ID, ver, prevVersion)
			}
			sameRows(t, fmt.Sprintf("rental read %d during run %s (at version %d)", reads, cur.ID, ver), next0, got)
		}
	}
	t.Logf("%d full reads while a run was in progress", reads)

	// Change the source, start a run, and kill the server once the run has
	// read a third of the rows but not all. A run that ends before the poll sees it
	// in the middle is a normal run: take it as the previous version and
	// try again.
	var next map[string]canonRow
	var killed runRecord
	for attempt := 1; killed.ID == ""; attempt++ {
		if attempt > 5 {
			t.Fatalf("5 runs of %d rows ended before a poll saw one in the middle", len(next))
		}
		execAll(t, src, []stmt{
			{fmt.Sprintf("UPDATE rental SET staff_id = 3 - staff_id WHERE rental_id %% 3 = %d", attempt%3), -1},
			{fmt.Sprintf("DELETE FROM rental WHERE rental_id = %d", 100+attempt), 1},
			{fmt.Sprintf("INSERT INTO rental (rental_date, inventory_id, customer_id, staff_id) VALUES ('2030-01-%02d 10:00:00', 1, 1, 1)", attempt), 1},
		})
		next = spec.read(t, src)
		var rec runRecord
		p.jsonCall(t, http.StatusAccepted, "POST", "/v1/adapters/rental/runs", nil, &rec)
		for {
			cur := p.getRun(t, rec.ID)
			// Past a third, so the run has written a good part of its cells.
			if cur.Status == "running" && cur.RowsRead >= int64(len(next)/3) && cur.RowsRead < int64(len(next)) {
				p.kill()
				killed = cur
				t.Logf("attempt %d: killed the server with run %s at %d of %d rows (txn %d)", attempt, cur.ID, cur.RowsRead, len(next), cur.TxnID)
				break
			}
			if cur.Status != "running" {
				if cur.Status != "succeeded" {
					t.Fatalf("run %s: status %q error %q", cur.ID, cur.Status, cur.Error)
				}
				t.Logf("attempt %d: run %s ended before a poll saw it in the middle", attempt, cur.ID)
				prev, prevVersion = next, cur.Version
				committed = append(committed, cur.Version)
				break
			}
			time.Sleep(time.Millisecond)
		}
	}

	p.start()
	d := p.dataset(t, "rental")
	if d.CurrentVersion != prevVersion {
		t.Errorf("after the crash: current version %d, want the previous one %d", d.CurrentVersion, prevVersion)
	}
	if got := versionIDs(p.versions(t, "rental")); fmt.Sprint(got) != fmt.Sprint(reversed(committed)) {
		t.Errorf("after the crash: versions %v, want the committed ones %v", got, reversed(committed))
	}
	got, ver, _ := p.scanPages(t, spec, "rental", "", 5000)
	if ver != prevVersion {
		t.Errorf("after the crash: read at version %d, want %d", ver, prevVersion)
	}
	if sameRows(t, "rental after the crash", prev, got) {
		t.Logf("after the crash: %d rows at version %d, checksum %016x = the previous version's", len(got), ver, checksum(got))
	}
	rec := p.getRun(t, killed.ID)
	if rec.Status != "aborted" && rec.Status != "failed" {
		t.Errorf("killed run %s: status %q after restart, want aborted or failed", rec.ID, rec.Status)
	}
	if rec.Error == "" || rec.EndedAt == "" || rec.Version != 0 {
		t.Errorf("killed run %s: error %q ended_at %q version %d: want an error, an end and no version", rec.ID, rec.Error, rec.EndedAt, rec.Version)
	}
	// The record says how far the run got (saved when it got its
	// transaction and at each phase change) and which transaction the
	// restart invalidated.
	if rec.TxnID == 0 || rec.TxnID != killed.TxnID || rec.RowsEstimated == 0 || len(rec.Phases) < 2 || rec.Phases[1].Name != "read" ||
		!strings.Contains(rec.Error, fmt.Sprintf("transaction %d", killed.TxnID)) {
		t.Errorf("killed run %s after restart: txn %d (killed in %d), rows_estimated %d, phases %+v, error %q: want the txn, the estimate, the read phase",
			rec.ID, rec.TxnID, killed.TxnID, rec.RowsEstimated, rec.Phases, rec.Error)
	}
	t.Logf("killed run after restart: status %s, error %q", rec.Status, rec.Error)
	var runs struct {
		Runs []runRecord `json:"runs"`
	}
	p.jsonCall(t, http.StatusOK, "GET", "/v1/adapters/rental/runs", nil, &runs)
	for _, r := range runs.Runs {
		if r.Status == "running" {
			t.Errorf("run %s is still listed as running after the restart", r.ID)
		}
	}

	// A new run succeeds, with a transaction id never used before, and
	// reads the changed source; the diff from the previous version shows
	// nothing of the killed run.
	r2 := p.mustRun(t, "rental")
	if r2.TxnID <= killed.TxnID || r2.Version <= prevVersion {
		t.Errorf("run after the crash: txn %d version %d, want after the killed txn %d and version %d", r2.TxnID, r2.Version, killed.TxnID, prevVersion)
	}
	got, ver = p.scanNDJSON(t, spec, "rental", "")
	if ver != r2.Version {
		t.Errorf("after the new run: read at version %d, want %d", ver, r2.Version)
	}
	sameRows(t, "rental after the new run", next, got)
	p.checkDiff(t, spec, "rental", prevVersion, r2.Version, prev, next)

	// GC removes the killed run's transaction.
	var rep gcReport
	p.jsonCall(t, http.StatusOK, "POST", "/v1/datasets/rental/gc", nil, &rep)
	if rep.InvalidTxnsPruned < 1 || len(rep.VersionsExpired) != 0 {
		t.Errorf("GC after the crash: %+v, want the killed transaction pruned and no version expired", rep)
	}
	t.Logf("GC after the crash: %+v", rep)
	sameRows(t, "rental after GC", next, func() map[string]canonRow { g, _ := p.scanNDJSON(t, spec, "rental", ""); return g }())

	// A graceful stop (SIGTERM) in the middle of a run aborts the run and
	// keeps the current version.
	execAll(t, src, []stmt{{"UPDATE rental SET staff_id = 3 - staff_id WHERE rental_id % 2 = 0", -1}})
	var rec3 runRecord
	p.jsonCall(t, http.StatusAccepted, "POST", "/v1/adapters/rental/runs", nil, &rec3)
	stopped := false
	for !stopped {
		cur := p.getRun(t, rec3.ID)
		switch {
		case cur.Status != "running":
			t.Logf("run %s ended (%s) before a poll saw it in the middle; graceful stop not checked", cur.ID, cur.Status)
			stopped = true
			continue
		case cur.RowsRead > 0 && cur.RowsRead < int64(len(next)):
			t0 := time.Now()
			p.stop()
			t.Logf("SIGTERM at %d of %d rows: the server exited in %s", cur.RowsRead, len(next), time.Since(t0).Round(time.Millisecond))
			p.start()
			rec := p.getRun(t, rec3.ID)
			if rec.Status != "aborted" || rec.Error == "" || rec.Version != 0 {
				t.Errorf("run %s stopped by SIGTERM: status %q error %q version %d, want aborted with an error", rec.ID, rec.Status, rec.Error, rec.Version)
			}
			t.Logf("run stopped by SIGTERM: status %s, error %q", rec.Status, rec.Error)
			if d := p.dataset(t, "rental"); d.CurrentVersion != r2.Version {
				t.Errorf("after the graceful stop: current version %d, want %d", d.CurrentVersion, r2.Version)
			}
			got, _ := p.scanNDJSON(t, spec, "rental", "")
			sameRows(t, "rental after the graceful stop", next, got)
			stopped = true
			continue
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("whole test: %s", time.Since(start).Round(time.Millisecond))
}

func reversed(s []int64) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
