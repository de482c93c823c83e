package adapters

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/snapshot"
)

// TestValidateConfig_EveryProblemAtOnce: one call names every bad key of a
// config file (newuser.md #7), with no follow-on error for an adapter whose
// connection the file defines but rejected.
func TestValidateConfig_EveryProblemAtOnce(t *testing.T) {
	path := newSQLiteFixture(t)
	errs := ValidateConfig(
		[]ConnectionSpec{
			{Name: "shop", Type: "sqlite", Options: map[string]any{"pth": path}},
			{Name: "ok", Type: "sqlite", Options: map[string]any{"path": path}},
			{Name: "ok", Type: "sqlite", Options: map[string]any{"path": path}},
		},
		[]AdapterSpec{
			{Name: "a", Connection: "shop", Resource: "items", Schedule: "every 15s", Guard: snapshot.Guard{MaxShrink: 2}},
			{Name: "b", Connection: "nope", Resource: "items"},
			{Name: "c", Connection: "ok", Resource: "items", Dataset: "shared"},
			{Name: "d", Connection: "ok", Resource: "items", Dataset: "shared"},
			{Name: "e", Connection: "ok", Resource: "items", Retention: snapshot.Retention{MinVersions: -1}},
		})
	keys := map[string]error{}
	for _, err := range errs {
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Errorf("problem %v is not an *OptionError", err)
			continue
		}
		if _, dup := keys[oe.Key]; dup {
			t.Errorf("key %s reported twice", oe.Key)
		}
		keys[oe.Key] = err
	}
	want := []string{
		"connections[0].options.pth", "connections[0].options.path", "connections[2].name",
		"adapters[0].schedule", "adapters[0].guard.max_shrink", "adapters[1].connection",
		"adapters[3].dataset", "adapters[4].retention.min_versions",
	}
	for _, k := range want {
		if keys[k] == nil {
			t.Errorf("no problem for %s; got %v", k, errs)
		}
	}
	if len(keys) != len(want) {
		t.Errorf("got %d problems, want %d: %v", len(keys), len(want), errs)
	}
	if _, ok := keys["adapters[0].connection"]; ok {
		t.Errorf("follow-on error for a rejected connection: %v", keys["adapters[0].connection"])
	}
	if err := keys["adapters[0].schedule"]; err != nil && !errors.Is(err, ErrBadSchedule) {
		t.Errorf("schedule problem %v is not ErrBadSchedule", err)
	}
	if err := keys["adapters[1].connection"]; err != nil && !errors.Is(err, ErrConnectionNotFound) {
		t.Errorf("connection problem %v is not ErrConnectionNotFound", err)
	}
	if err := keys["adapters[3].dataset"]; err != nil && (!errors.Is(err, ErrDatasetTaken) || !strings.Contains(err.Error(), `"c"`)) {
		t.Errorf("dataset problem %v is not ErrDatasetTaken naming adapter c", err)
	}
	if errs := ValidateConfig([]ConnectionSpec{{Name: "ok", Type: "sqlite", Options: map[string]any{"path": path}}},
		[]AdapterSpec{{Name: "a", Connection: "ok", Resource: "items"}}); len(errs) != 0 {
		t.Errorf("a good config: %v", errs)
	}
}

// TestAdapter_OneWriterPerDataset: a second adapter on a dataset is
// refused through the API, naming the writer (newuser.md #4).
func TestAdapter_OneWriterPerDataset(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{
		Connections: []ConnectionSpec{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}},
		Adapters:    []AdapterSpec{{Name: "items", Connection: "src", Resource: "items"}},
	})
	_, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "second", Connection: "src", Resource: "items", Dataset: "items"})
	if !errors.Is(err, ErrDatasetTaken) || !strings.Contains(err.Error(), `adapter "items"`) {
		t.Fatalf("second adapter on dataset items: %v", err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "other", Connection: "src", Resource: "items"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ts.svc.PutAdapter(ctx, AdapterSpec{Name: "other", Connection: "src", Resource: "items", Dataset: "items"}); !errors.Is(err, ErrDatasetTaken) {
		t.Fatalf("replace onto dataset items: %v", err)
	}
	// Replacing an adapter keeps its own dataset.
	if _, _, err := ts.svc.PutAdapter(ctx, AdapterSpec{Name: "other", Connection: "src", Resource: "cheap", KeyColumns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
}

// TestAdapter_EffectiveDefaults: zero min_versions and max_shrink read as
// the values in force (newuser.md #5).
func TestAdapter_EffectiveDefaults(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{
		Connections: []ConnectionSpec{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}},
		Adapters:    []AdapterSpec{{Name: "cfg", Connection: "src", Resource: "items"}},
	})
	api, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "api", Connection: "src", Resource: "cheap", KeyColumns: []string{"id"}, Guard: snapshot.Guard{MaxShrink: 0.25}})
	if err != nil {
		t.Fatal(err)
	}
	if api.Retention.MinVersions != 1 || api.Guard.MaxShrink != 0.25 {
		t.Errorf("api adapter: %+v %+v", api.Retention, api.Guard)
	}
	cfg, err := ts.svc.GetAdapter(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Retention.MinVersions != defaultMinVersions || cfg.Guard.MaxShrink != defaultMaxShrink {
		t.Errorf("config adapter: %+v %+v", cfg.Retention, cfg.Guard)
	}
	ts.close()
	ts = openStack(t, ts.dir, Options{Connections: []ConnectionSpec{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}}})
	api, err = ts.svc.GetAdapter(ctx, "api")
	if err != nil || api.Retention.MinVersions != 1 {
		t.Errorf("reloaded: %+v %v", api, err)
	}
}

// TestRun_ForceAndGuardCode: a guard-refused run has code guard_refused
// and the deleted count it would have committed; Force commits it
// (newuser.md #9, #6).
func TestRun_ForceAndGuardCode(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{
		Connections: []ConnectionSpec{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}},
		Adapters:    []AdapterSpec{{Name: "items", Connection: "src", Resource: "items"}},
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
	start, err := ts.svc.StartRunWith(ctx, "items", RunOptions{Trigger: "cli", Force: true})
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

// TestAdapter_ResourceChecked: create and replace refuse a missing table
// or one without a key when the source answers, and accept when it does
// not (newuser.md #6).
func TestAdapter_ResourceChecked(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	ts := newStack(t, Options{
		Connections: []ConnectionSpec{
			{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}},
			{Name: "down", Type: "mysql", Options: map[string]any{"host": "127.0.0.1", "port": port, "user": "u", "database": "d"}},
		},
	})
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "typo", Connection: "src", Resource: "itemz"}); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("missing table: %v", err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "nokey", Connection: "src", Resource: "nokey"}); !errors.Is(err, ErrNoKey) {
		t.Errorf("table without a key: %v", err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "nokey", Connection: "src", Resource: "nokey", KeyColumns: []string{"a"}}); err != nil {
		t.Errorf("table with key_columns: %v", err)
	}
	if _, _, err := ts.svc.PutAdapter(ctx, AdapterSpec{Name: "nokey", Connection: "src", Resource: "nokey2"}); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("replace onto a missing table: %v", err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "later", Connection: "down", Resource: "t"}); err != nil {
		t.Errorf("unreachable source refused the adapter: %v", err)
	}
	rec := ts.runWait(t, "later")
	if rec.Code != "source_unavailable" {
		t.Errorf("run against a stopped source: code %q: %s", rec.Code, rec.Error)
	}
}

// TestRunErrorText: an aborted run says "context canceled" at most once
// and a lost source names the data connection (e2e.md #1, #2).
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
}

// TestDurationOptions_NumbersRefused: one rule for durations, as for
// adapter bodies (newuser.md #12); a stored number of seconds still loads.
func TestDurationOptions_NumbersRefused(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{})
	_, err := ts.svc.CreateConnection(ctx, ConnectionSpec{Name: "s", Type: "sqlite", Options: map[string]any{"path": path, "busy_timeout": float64(30)}})
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Key != "options.busy_timeout" || !strings.Contains(oe.Msg, `"30s"`) {
		t.Fatalf("numeric duration: %v", err)
	}
	if _, err := ts.svc.CreateConnection(ctx, ConnectionSpec{Name: "s", Type: "sqlite", Options: map[string]any{"path": path, "busy_timeout": "30s"}}); err != nil {
		t.Fatal(err)
	}
	spec := ConnectionSpec{Name: "old", Type: "sqlite", Sharing: SharingPooled, Options: map[string]any{"path": path, "busy_timeout": float64(3), "conn_max_lifetime": float64(60)}}
	upgradeDurations(spec)
	if spec.Options["busy_timeout"] != "3s" || spec.Options["conn_max_lifetime"] != "60s" {
		t.Fatalf("upgraded: %v", spec.Options)
	}
}

// TestRunOnStart: an adapter with run_on_start runs once when the
// scheduler starts, before its first tick (newuser.md #13); one without
// does not.
func TestRunOnStart(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{
		Schedule:    true,
		Connections: []ConnectionSpec{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}},
		Adapters: []AdapterSpec{
			{Name: "eager", Connection: "src", Resource: "items", Schedule: "@every 1h", RunOnStart: true},
			{Name: "lazy", Connection: "src", Resource: "cheap", KeyColumns: []string{"id"}, Schedule: "@every 1h"},
		},
	})
	runs, err := ts.svc.ListRuns(ctx, "eager", 0)
	if err != nil || len(runs) != 1 || runs[0].Trigger != "start" {
		t.Fatalf("eager runs: %+v %v", runs, err)
	}
	end, err := ts.svc.WaitRun(ctx, runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, end)
	if runs, _ := ts.svc.ListRuns(ctx, "lazy", 0); len(runs) != 0 {
		t.Fatalf("lazy ran at start: %+v", runs)
	}
}
