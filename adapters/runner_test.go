package adapters

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
)

// TestRun_ForceAndGuardCode: a run the guards refuse (snapshot.D7) has
// code guard_refused and the deleted count it would have committed (P5);
// Force commits it.
func TestRun_ForceAndGuardCode(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{
		Connections: []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}},
		Adapters:    []api.Adapter{{Name: "items", Connection: "src", Resource: "items"}},
	})
	mustSucceed(t, ts.runWait(t, "items"))
	sqliteExec(t, path, `DELETE FROM items WHERE id > 1`)
	rec := ts.runWait(t, "items")
	if rec.Status != RunFailed || rec.Code != "guard_refused" || rec.Stats.Deleted != 2 || !strings.Contains(rec.Error, "force") {
		t.Fatalf("refused run: %+v", rec)
	}
	got, err := ts.svc.GetRun(ctx, rec.ID)
	if err != nil || got.Code != "guard_refused" {
		t.Fatalf("stored refused run: %+v %v", got, err)
	}
	start, err := ts.svc.StartRun(ctx, "items", RunOptions{Trigger: "cli", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	end, err := ts.svc.WaitRun(ctx, start.ID)
	if err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, end)
	if !end.Forced || end.Stats.Deleted != 2 || end.Code != "" {
		t.Fatalf("forced run: %+v", end)
	}
}

// TestRun_EmptyGuardText: the error of a run of 0 rows that the empty
// guard refuses names the setting and the way to force it, each once.
func TestRun_EmptyGuardText(t *testing.T) {
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{
		Connections: []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}},
		Adapters:    []api.Adapter{{Name: "items", Connection: "src", Resource: "items"}},
	})
	sqliteExec(t, path, `DELETE FROM items`)
	rec := ts.runWait(t, "items")
	if rec.Status != RunFailed || rec.Code != "guard_refused" {
		t.Fatalf("run of 0 rows: %+v", rec)
	}
	const want = `committing dataset "items": commit guard refused the run: the run has 0 rows and allow_empty is not set (start the run with force=true to commit anyway)`
	if rec.Error != want || strings.Count(rec.Error, "force") != 1 {
		t.Errorf("refused run's error\n%s\nwant\n%s", rec.Error, want)
	}
}

// TestRunErrorText: an aborted run says "context canceled" at most once
// and a lost source names the data connection.
func TestRunErrorText(t *testing.T) {
	inner := fmt.Errorf("reading `db`.`rental`: %w", context.Canceled)
	if got := abortedText(inner); strings.Count(got, "context canceled") > 1 || !strings.Contains(got, "`rental`") || !strings.HasPrefix(got, ErrShuttingDown.Error()) {
		t.Errorf("aborted text %q", got)
	}
	if got := abortedText(fmt.Errorf("%w (%w)", inner, context.Canceled)); strings.Count(got, "context canceled") > 1 {
		t.Errorf("aborted text %q", got)
	}
	lost := fmt.Errorf("reading `e2e`.`big`: %w: %w", ErrSourceUnavailable, errors.New("invalid connection"))
	got := readError(context.Background(), "priv", lost)
	if !strings.Contains(got.Error(), `data connection "priv"`) || !strings.Contains(got.Error(), "went away") || !errors.Is(got, ErrSourceUnavailable) {
		t.Errorf("lost source text %q", got)
	}
	if runCode(got) != "source_unavailable" {
		t.Errorf("code %q", runCode(got))
	}
	// A commit that gave up while its last write may still land is
	// unknown, not "nothing committed", though the store's error shows.
	unknown := fmt.Errorf("committing: %w: %v", snapshot.ErrOutcomeUnknown, fmt.Errorf("gave up: %w", store.ErrUnavailable))
	if c := runCode(unknown); c != "outcome_unknown" {
		t.Errorf("code of an unknown commit %q", c)
	}
	// A run failed by the store whose abort's outcome is then unknown
	// committed nothing.
	failed := errors.Join(fmt.Errorf("recording: %w", store.ErrUnavailable), fmt.Errorf("aborting: %w", snapshot.ErrOutcomeUnknown))
	if c := runCode(failed); c != "store_unavailable" {
		t.Errorf("code of a run failed by the store, its abort unknown: %q", c)
	}
}

// TestSourceLostMidRead: the source server drops the reading connection
// mid-run (KILL, as a MariaDB stop does); the run fails with
// source_unavailable and an error naming the data connection and saying
// the server went away. The table is longer than what the run reads ahead
// (prefetch.go) while it waits at row 50, so the read is cut.
func TestSourceLostMidRead(t *testing.T) {
	forEachSource(t, func(t *testing.T, e sourceEnv) {
		ctx := context.Background()
		db := e.longTable(t, prefetchDepth*prefetchRows+2000)
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "priv", db, map[string]any{"chunk_rows": 100})); err != nil {
			t.Fatal(err)
		}
		if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "big", Connection: "priv", Resource: "big"}); err != nil {
			t.Fatal(err)
		}
		b := newBlock(ts, "big", 50)
		rec, err := ts.svc.StartRun(ctx, "big", RunOptions{Trigger: "api"})
		if err != nil {
			t.Fatal(err)
		}
		<-b.reached
		e.terminate(t, db)
		close(b.release)
		end, err := ts.svc.WaitRun(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("lost source: code %s, error %s", end.Code, end.Error)
		if end.Status != RunFailed || end.Code != "source_unavailable" || !strings.Contains(end.Error, `data connection "priv"`) || !strings.Contains(end.Error, "went away") {
			t.Fatalf("run after the source dropped it: %+v", end)
		}
	})
}

// TestRunner_BusyRefusedWithoutRecord checks that a run of an adapter
// whose dataset another writer holds is refused (ErrRunInProgress, a 409
// to the caller) before it starts: refusals leave no run record, however
// many; once the writer is done, a run starts and succeeds.
func TestRunner_BusyRefusedWithoutRecord(t *testing.T) {
	ts := newStack(t, Options{})
	ctx := context.Background()
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "lite", Type: "sqlite", Options: map[string]any{"path": newSQLiteFixture(t)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items"}); err != nil {
		t.Fatal(err)
	}
	first := runAndWait(t, ts.svc, "a")
	vi, err := ts.db.VersionInfo(ctx, first.Dataset, first.Version)
	if err != nil {
		t.Fatal(err)
	}
	// Another writer of the dataset (a run begun directly on the DB).
	held, err := ts.db.BeginRun(ctx, snapshot.DatasetConfig{Name: first.Dataset}, snapshot.RunOptions{Schema: vi.Schema})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		rec, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "api"})
		if !errors.Is(err, ErrRunInProgress) || rec.ID != "" {
			t.Fatalf("a run while the dataset is held: %+v %v", rec, err)
		}
	}
	runs, err := ts.svc.ListRuns(ctx, "a", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != first.ID {
		t.Errorf("runs after 5 refusals: %+v, want the first run only", runs)
	}
	if err := held.Abort(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	if rec := runAndWait(t, ts.svc, "a"); rec.Status != RunSucceeded {
		t.Errorf("the run once the dataset is free: %+v", rec)
	}
}

// runAndWait starts a run of adapter name on svc and waits for its end.
func runAndWait(t *testing.T, svc *Service, name string) RunRecord {
	t.Helper()
	ctx := context.Background()
	rec, err := svc.StartRun(ctx, name, RunOptions{Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	end, err := svc.WaitRun(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	return end
}
