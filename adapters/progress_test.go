package adapters

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
)

// TestWithProgress pins how a record's progress is computed: percent of
// the estimate capped below 100 until the commit, the read rate over the
// read phase, the time left only while reading below the estimate.
func TestWithProgress(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	end := func(s float64) *time.Time { e := at(s); return &e }
	phases := func(names ...string) []RunPhase {
		var ps []RunPhase
		for i, n := range names {
			ps = append(ps, RunPhase{Name: n, Start: at(float64(i))})
			if i > 0 {
				ps[i-1].End = end(float64(i))
			}
		}
		return ps
	}
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name string
		rec  RunRecord
		now  time.Time
		want RunProgress
	}{
		{"connecting", RunRecord{Status: RunRunning, Start: t0, Phases: phases(PhaseConnect)}, at(0.5),
			RunProgress{Phase: PhaseConnect}},
		// Read phase from 1s; at 5s 1000 of 4000 rows: 250 rows/s, 12s left.
		{"reading", RunRecord{Status: RunRunning, Start: t0, RowsRead: 1000, RowsEstimated: 4000, Phases: phases(PhaseConnect, PhaseRead)}, at(5),
			RunProgress{Phase: PhaseRead, Percent: f(25), RowsPerSecond: 250, SecondsLeft: f(12)}},
		{"past the estimate", RunRecord{Status: RunRunning, Start: t0, RowsRead: 5000, RowsEstimated: 4000, Phases: phases(PhaseConnect, PhaseRead)}, at(5),
			RunProgress{Phase: PhaseRead, Percent: f(progressCap), RowsPerSecond: 1250}},
		{"no estimate", RunRecord{Status: RunRunning, Start: t0, RowsRead: 1000, Phases: phases(PhaseConnect, PhaseRead)}, at(5),
			RunProgress{Phase: PhaseRead, RowsPerSecond: 250}},
		// The read phase ended at 2s: the rate stops there.
		{"committing", RunRecord{Status: RunRunning, Start: t0, RowsRead: 4000, RowsEstimated: 4000, Phases: phases(PhaseConnect, PhaseRead, PhaseCommit)}, at(9),
			RunProgress{Phase: PhaseCommit, Percent: f(progressCap), RowsPerSecond: 4000}},
		{"succeeded", RunRecord{Status: RunSucceeded, Start: t0, End: end(3), RowsRead: 4000, Phases: withEnd(phases(PhaseConnect, PhaseRead, PhaseCommit), end(3))}, at(60),
			RunProgress{Percent: f(100), RowsPerSecond: 4000}},
		{"failed while reading", RunRecord{Status: RunFailed, Start: t0, End: end(3), RowsRead: 1000, RowsEstimated: 3000, Phases: withEnd(phases(PhaseConnect, PhaseRead), end(3))}, at(60),
			RunProgress{Percent: f(33.3), RowsPerSecond: 500}},
		{"failed connecting", RunRecord{Status: RunFailed, Start: t0, End: end(1), Phases: withEnd(phases(PhaseConnect), end(1))}, at(60),
			RunProgress{}},
		// A record stored without phases: the rate spans the whole run.
		{"without phases", RunRecord{Status: RunSucceeded, Start: t0, End: end(4), RowsRead: 1000}, at(60),
			RunProgress{Percent: f(100), RowsPerSecond: 250}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.rec.Phases)
			got := withProgress(tc.rec, tc.now).Progress
			if got == nil {
				t.Fatal("no progress")
			}
			if !sameProgress(*got, tc.want) {
				t.Errorf("progress %s, want %s", fmtProgress(*got), fmtProgress(tc.want))
			}
			if len(tc.rec.Phases) != before {
				t.Error("withProgress changed the record's phases")
			}
		})
	}
}

func withEnd(ps []RunPhase, end *time.Time) []RunPhase {
	ps[len(ps)-1].End = end
	return ps
}

func sameProgress(a, b RunProgress) bool {
	eq := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Phase == b.Phase && a.RowsPerSecond == b.RowsPerSecond && eq(a.Percent, b.Percent) && eq(a.SecondsLeft, b.SecondsLeft)
}

func fmtProgress(p RunProgress) string {
	opt := func(x *float64) any {
		if x == nil {
			return "absent"
		}
		return *x
	}
	return fmt.Sprintf("{phase %q percent %v rate %v left %v}", p.Phase, opt(p.Percent), p.RowsPerSecond, opt(p.SecondsLeft))
}

// TestRunProgress_Live follows a real SQLite pull held in its read phase:
// the live record has the connect and read phases, the exact COUNT(*)
// estimate, a percent of it and the time left; the ended record has the
// three phases closed, 100 percent, and stores no progress.
func TestRunProgress_Live(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "src.db")
	sqliteExec(t, path, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 4096) INSERT INTO t SELECT i, 'row ' || i FROM n`)
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "lite", Type: "sqlite", Options: map[string]any{"path": path, "chunk_rows": 256}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "t", Connection: "lite", Resource: "t"}); err != nil {
		t.Fatal(err)
	}
	// Held at row 2049: the record was last updated at row 2048.
	b := newBlock(ts, "t", 2*progressEvery+1)
	rec, err := ts.svc.StartRun(ctx, "t", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Progress == nil || len(rec.Phases) != 1 || rec.Phases[0].Name != PhaseConnect {
		t.Fatalf("started record: phases %+v progress %+v", rec.Phases, rec.Progress)
	}
	<-b.reached
	live, err := ts.svc.GetRun(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	p := live.Progress
	if live.RowsEstimated != 4096 || live.RowsRead != 2*progressEvery || len(live.Phases) != 2 || live.Phases[1].Name != PhaseRead ||
		live.Phases[0].End == nil || live.Phases[1].End != nil {
		t.Fatalf("live record: rows %d of %d, phases %+v", live.RowsRead, live.RowsEstimated, live.Phases)
	}
	if p == nil || p.Phase != PhaseRead || p.Percent == nil || *p.Percent != 50 || p.RowsPerSecond <= 0 ||
		p.SecondsLeft == nil || *p.SecondsLeft != round1(2048/p.RowsPerSecond) {
		t.Fatalf("live progress %+v", p)
	}
	if runs, err := ts.svc.ListRuns(ctx, "t", 0); err != nil || len(runs) != 1 || runs[0].Progress == nil || runs[0].Progress.Phase != PhaseRead {
		t.Fatalf("listed live run %+v %v", runs, err)
	}
	close(b.release)
	end, err := ts.svc.WaitRun(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, end)
	if len(end.Phases) != 3 || end.Phases[2].Name != PhaseCommit || end.Phases[2].End == nil || !end.Phases[2].End.Equal(*end.End) {
		t.Fatalf("ended phases %+v (end %v)", end.Phases, end.End)
	}
	if end.Progress == nil || end.Progress.Phase != "" || end.Progress.Percent == nil || *end.Progress.Percent != 100 || end.Progress.SecondsLeft != nil {
		t.Fatalf("ended progress %+v", end.Progress)
	}
	raw, err := ts.db.GetRecord(ctx, recordRun, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) == "" || bytes.Contains(raw, []byte(`"progress"`)) {
		t.Errorf("stored record holds progress: %s", raw)
	}
	stored, err := ts.svc.GetRun(ctx, rec.ID)
	if err != nil || stored.Progress == nil || *stored.Progress.Percent != 100 || len(stored.Phases) != 3 {
		t.Fatalf("stored record read back: %+v %v", stored, err)
	}
}
