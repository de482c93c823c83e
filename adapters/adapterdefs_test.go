package adapters

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/api"
)

// TestAdapterCRUDAndDropInUse: adapter create, replace, runs and delete;
// a connection adapters name is dropped only with force (N3), and a run
// after the drop fails naming it (N2).
func TestAdapterCRUDAndDropInUse(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	reg := prometheus.NewRegistry()
	ts := newStack(t, Options{Registerer: reg})
	svc := ts.svc
	if _, err := svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "missing", Resource: "items"}); !errors.Is(err, ErrConnectionNotFound) {
		t.Fatalf("adapter on missing connection: %v", err)
	}
	if _, err := svc.CreateConnection(ctx, api.Connection{Name: "lite", Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items", Schedule: "every day"}); !errors.Is(err, ErrBadSchedule) {
		t.Fatalf("bad schedule: %v", err)
	}
	a, err := svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items", Guard: api.Guard{MaxShrink: 1}})
	if err != nil || a.Dataset != "a" || a.Revision != 1 || a.Source != OriginAPI {
		t.Fatalf("create adapter: %+v %v", a, err)
	}
	if _, err := svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items"}); !errors.Is(err, ErrAdapterExists) {
		t.Fatalf("dup adapter: %v", err)
	}
	a, created, err := svc.PutAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items", Dataset: "items", Guard: api.Guard{MaxShrink: 1}})
	if err != nil || created || a.Revision != 2 || a.Dataset != "items" {
		t.Fatalf("replace adapter: %+v %v", a, err)
	}
	rec := ts.runWait(t, "a")
	mustSucceed(t, rec)
	if rec.Stats.Inserted != 3 || rec.RowsRead != 3 || rec.Version == 0 || rec.TxnID != rec.Version {
		t.Fatalf("run %+v", rec)
	}
	vi, rows := readAll(t, ts.db, "items")
	if vi.Source.Connection != "lite" || vi.Source.Revision != 1 || vi.Source.Adapter != "a" || vi.Source.RunID != rec.ID || len(rows) != 3 {
		t.Fatalf("version %+v rows %d", vi, len(rows))
	}
	err = svc.DropConnection(ctx, "lite", false)
	if !errors.Is(err, ErrConnectionInUse) || !strings.Contains(err.Error(), "adapters a") {
		t.Fatalf("drop in use: %v", err)
	}
	c, _ := svc.GetConnection(ctx, "lite")
	if len(c.Adapters) != 1 || c.Adapters[0] != "a" {
		t.Fatalf("connection adapters %v", c.Adapters)
	}
	if err := svc.DropConnection(ctx, "lite", true); err != nil {
		t.Fatal(err)
	}
	rec = ts.runWait(t, "a")
	if rec.Status != RunFailed || !strings.Contains(rec.Error, `data connection does not exist: "lite"`) {
		t.Fatalf("run after drop: %+v", rec)
	}
	runs, err := svc.ListRuns(ctx, "a", 0)
	if err != nil || len(runs) != 2 || runs[0].Status != RunFailed || runs[1].Status != RunSucceeded {
		t.Fatalf("runs %+v %v", runs, err)
	}
	if got, err := svc.GetRun(ctx, runs[1].ID); err != nil || got.Version != vi.Version {
		t.Fatalf("get run %+v %v", got, err)
	}
	if _, err := svc.GetRun(ctx, "r-nope"); !errors.Is(err, ErrRunNotFound) {
		t.Fatalf("missing run: %v", err)
	}
	if err := svc.DeleteAdapter(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.StartRun(ctx, "a", RunOptions{Trigger: "api"}); !errors.Is(err, ErrAdapterNotFound) {
		t.Fatalf("run of deleted adapter: %v", err)
	}
	// Metrics: one succeeded and one failed run counted.
	mfs, _ := reg.Gather()
	found := 0
	for _, mf := range mfs {
		if mf.GetName() == "snapstore_adapters_runs_total" {
			for _, m := range mf.GetMetric() {
				found += int(m.GetCounter().GetValue())
			}
		}
	}
	if found != 2 {
		t.Fatalf("runs_total %d, want 2", found)
	}
}

// TestAdapter_OneWriterPerDataset: a second adapter on a dataset is
// refused through the API, naming the writer (A1).
func TestAdapter_OneWriterPerDataset(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{
		Connections: []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}},
		Adapters:    []api.Adapter{{Name: "items", Connection: "src", Resource: "items"}},
	})
	_, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "second", Connection: "src", Resource: "items", Dataset: "items"})
	if !errors.Is(err, ErrDatasetTaken) || !strings.Contains(err.Error(), `adapter "items"`) {
		t.Fatalf("second adapter on dataset items: %v", err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "other", Connection: "src", Resource: "items"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ts.svc.PutAdapter(ctx, api.Adapter{Name: "other", Connection: "src", Resource: "items", Dataset: "items"}); !errors.Is(err, ErrDatasetTaken) {
		t.Fatalf("replace onto dataset items: %v", err)
	}
	// Replacing an adapter keeps its own dataset.
	if _, _, err := ts.svc.PutAdapter(ctx, api.Adapter{Name: "other", Connection: "src", Resource: "cheap", KeyColumns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
}

// TestAdapter_EffectiveDefaults: zero min_versions and max_shrink read as
// the values in force, also after a restart (A3).
func TestAdapter_EffectiveDefaults(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{
		Connections: []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}},
		Adapters:    []api.Adapter{{Name: "cfg", Connection: "src", Resource: "items"}},
	})
	fromAPI, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "api", Connection: "src", Resource: "cheap", KeyColumns: []string{"id"}, Guard: api.Guard{MaxShrink: 0.25}})
	if err != nil {
		t.Fatal(err)
	}
	if fromAPI.Retention.MinVersions != 1 || fromAPI.Guard.MaxShrink != 0.25 {
		t.Errorf("api adapter: %+v %+v", fromAPI.Retention, fromAPI.Guard)
	}
	cfg, err := ts.svc.GetAdapter(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Retention.MinVersions != defaultMinVersions || cfg.Guard.MaxShrink != defaultMaxShrink {
		t.Errorf("config adapter: %+v %+v", cfg.Retention, cfg.Guard)
	}
	ts.close()
	ts = openStack(t, ts.dir, Options{Connections: []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}}})
	fromAPI, err = ts.svc.GetAdapter(ctx, "api")
	if err != nil || fromAPI.Retention.MinVersions != 1 {
		t.Errorf("reloaded: %+v %v", fromAPI, err)
	}
}

// TestAdapter_ResourceChecked: create and replace refuse a missing table
// or one without a key when the source answers, and accept when it does
// not (A2).
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
		Connections: []api.Connection{
			{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}},
			{Name: "down", Type: "mysql", Options: map[string]any{"host": "127.0.0.1", "port": port, "user": "u", "database": "d"}},
		},
	})
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "typo", Connection: "src", Resource: "itemz"}); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("missing table: %v", err)
	}
	// An adapter of one table may name its key: the error says so.
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "nokey", Connection: "src", Resource: "nokey"}); !errors.Is(err, ErrNoKey) ||
		!strings.HasSuffix(err.Error(), "has no primary key and no unique index over NOT NULL columns; set key_columns") {
		t.Errorf("table without a key: %v", err)
	}
	if a, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "nokey", Connection: "src", Resource: "nokey", KeyColumns: []string{"a"}}); err != nil || a.Warnings != nil {
		t.Errorf("table with key_columns: %v, warnings %q", err, a.Warnings)
	}
	if _, _, err := ts.svc.PutAdapter(ctx, api.Adapter{Name: "nokey", Connection: "src", Resource: "nokey2"}); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("replace onto a missing table: %v", err)
	}
	// Accepted, with a warning for whoever saved it.
	a, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "later", Connection: "down", Resource: "t"})
	if err != nil {
		t.Errorf("unreachable source refused the adapter: %v", err)
	}
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], `resource "t" not checked: data connection "down"`) ||
		!strings.HasSuffix(a.Warnings[0], `; its runs fail alike until the connection's test passes (snapstore connections test down)`) {
		t.Errorf("unreachable source: warnings %q", a.Warnings)
	}
	// An adapter of several tables: the warning names its selection.
	a2, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "later_tables", Connection: "down", Include: []string{"t*"}, Exclude: []string{"tmp"}})
	if err != nil {
		t.Errorf("unreachable source refused the adapter of several tables: %v", err)
	}
	if len(a2.Warnings) != 1 || !strings.HasPrefix(a2.Warnings[0], `the tables (include ["t*"], exclude ["tmp"]) not checked: `) || !strings.Contains(a2.Warnings[0], `data connection "down"`) {
		t.Errorf("unreachable source, several tables: warnings %q", a2.Warnings)
	}
	if strings.Contains(a2.Warnings[0], "went away") || !strings.Contains(a2.Warnings[0], "cannot connect") {
		t.Errorf("a source that never answered is said to have gone away: %q", a2.Warnings)
	}
	if rec := ts.runWait(t, "later_tables"); rec.Code != "source_unavailable" || strings.Contains(rec.Error, "went away") || !strings.Contains(rec.Error, "cannot connect") {
		t.Errorf("run of several tables against a stopped source: code %q: %s", rec.Code, rec.Error)
	}
	if a, _ := ts.svc.GetAdapter(ctx, "later"); a.Warnings != nil {
		t.Errorf("the adapter's report keeps the create's warnings: %q", a.Warnings)
	}
	rec := ts.runWait(t, "later")
	if rec.Code != "source_unavailable" {
		t.Errorf("run against a stopped source: code %q: %s", rec.Code, rec.Error)
	}
}
