package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/pebble"
)

// testStack is a real Pebble store, a snapshot.DB and a Service over them.
type testStack struct {
	dir string
	st  store.Store
	db  *snapshot.DB
	svc *Service
}

// newStack opens a stack in a fresh temp dir.
func newStack(t testing.TB, opts Options) *testStack {
	t.Helper()
	return openStack(t, t.TempDir(), opts)
}

// openStack opens (or reopens) a stack in dir; everything closes at
// cleanup (or earlier through ts.close).
func openStack(t testing.TB, dir string, opts Options) *testStack {
	t.Helper()
	return openStackWith(t, dir, pebble.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20}, opts)
}

// openStackWith opens a stack with the given Pebble options.
func openStackWith(t testing.TB, dir string, po pebble.Options, opts Options) *testStack {
	t.Helper()
	ts := &testStack{dir: dir}
	var err error
	ts.st, err = pebble.Open(dir, po)
	if err != nil {
		t.Fatal(err)
	}
	ts.db, err = snapshot.Open(context.Background(), ts.st, snapshot.Options{Logger: testLogger()})
	if err != nil {
		ts.st.Close()
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	ts.svc, err = New(context.Background(), ts.db, opts)
	if err != nil {
		ts.db.Close()
		ts.st.Close()
		t.Fatal(noteErr(err))
	}
	t.Cleanup(ts.close)
	return ts
}

func (ts *testStack) close() {
	if ts.svc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	noteErr(ts.svc.Close(ctx))
	ts.db.Close()
	ts.st.Close()
	ts.svc = nil
}

// runWait starts a run of adapter and waits for its end.
func (ts *testStack) runWait(t *testing.T, adapter string) RunRecord {
	t.Helper()
	ctx := context.Background()
	rec, err := ts.svc.StartRunWith(ctx, adapter, RunOptions{Trigger: "api"})
	if err != nil {
		t.Fatal(noteErr(err))
	}
	end, err := ts.svc.WaitRun(ctx, rec.ID)
	if err != nil {
		t.Fatal(noteErr(err))
	}
	noteErr(errors.New(end.Error))
	b, _ := json.Marshal(end)
	noteText(string(b))
	return end
}

// mustSucceed fails the test unless rec succeeded.
func mustSucceed(t *testing.T, rec RunRecord) {
	t.Helper()
	if rec.Status != RunSucceeded {
		t.Fatalf("run %s of %s: status %s: %s", rec.ID, rec.Adapter, rec.Status, rec.Error)
	}
}

// readAll reads the current version of dataset as rows keyed by the
// fmtValue of their key.
func readAll(t *testing.T, db *snapshot.DB, dataset string) (snapshot.VersionInfo, map[string]snapshot.Row) {
	t.Helper()
	ctx := context.Background()
	r, err := db.Reader(ctx, dataset, snapshot.At{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it, err := r.Scan(ctx, snapshot.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string]snapshot.Row{}
	for it.Next() {
		row := it.Row()
		out[stringsOf(row.Key)] = row
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return r.Version(), out
}

func col(row snapshot.Row, name string) snapshot.Value {
	for i, c := range row.Columns {
		if c == name {
			return row.Values[i]
		}
	}
	return snapshot.Value{Kind: 255}
}

func mysqlConnSpec(t testing.TB, e mysqlTestEnv, name, db string, extra map[string]any) ConnectionSpec {
	o := e.options(t, db)
	for k, v := range extra {
		o[k] = v
	}
	return ConnectionSpec{Name: name, Type: "mysql", Options: o}
}

func TestConnectionCRUD(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	ts := newStack(t, Options{})
	svc := ts.svc
	c, err := svc.CreateConnection(ctx, ConnectionSpec{Name: "src", Type: "mysql", Options: e.literalOptions("sakila")})
	if err != nil {
		t.Fatal(noteErr(err))
	}
	if c.Revision != 1 || c.Source != OriginAPI || c.Status != "active" || c.Sharing != SharingShared {
		t.Fatalf("created %+v", c)
	}
	if c.Options["password"] != redacted {
		t.Fatalf("password shown as %v", c.Options["password"])
	}
	body, _ := json.Marshal(c)
	noteText(string(body))
	if strings.Contains(string(body), e.Password) {
		t.Fatalf("secret in response %s", body)
	}
	if _, err := svc.CreateConnection(ctx, ConnectionSpec{Name: "src", Type: "mysql", Options: e.literalOptions("")}); !errors.Is(noteErr(err), ErrConnectionExists) {
		t.Fatalf("second create: %v", err)
	}
	c2, created, err := svc.PutConnection(ctx, ConnectionSpec{Name: "src", Type: "mysql", Sharing: SharingPooled, Options: map[string]any{
		"host": e.Host, "port": e.Port, "user": e.User, "password": "env:SNAPSTORE_TEST_MYSQL_PASSWORD", "database": "sakila", "max_open": 4,
	}})
	if err != nil || created || c2.Revision != 2 || c2.Sharing != SharingPooled {
		t.Fatalf("replace: %+v created=%v err=%v", c2, created, noteErr(err))
	}
	if c2.Options["password"] != "env:SNAPSTORE_TEST_MYSQL_PASSWORD" {
		t.Fatalf("reference not shown: %v", c2.Options["password"])
	}
	res, err := svc.Resources(ctx, "src")
	if err != nil {
		t.Fatal(noteErr(err))
	}
	tables, views := 0, 0
	for _, r := range res {
		if r.Schema != "sakila" {
			t.Errorf("resource of schema %q", r.Schema)
		}
		switch r.Type {
		case "table":
			tables++
			if r.Name == "rental" && r.EstimatedRows < 1000 {
				t.Errorf("rental estimated rows %d", r.EstimatedRows)
			}
		case "view":
			views++
		}
	}
	if tables != 16 || views != 7 {
		t.Errorf("sakila resources: %d tables, %d views, want 16 and 7", tables, views)
	}
	tr, err := svc.TestConnection(ctx, "src")
	if err != nil || !tr.OK || !strings.Contains(tr.ServerVersion, "MariaDB") && tr.ServerVersion == "" {
		t.Fatalf("test: %+v %v", tr, err)
	}
	// Persisted: a restart sees revision 2.
	ts.close()
	ts = openStack(t, ts.dir, Options{})
	got, err := ts.svc.GetConnection(ctx, "src")
	if err != nil || got.Revision != 2 || got.Sharing != SharingPooled {
		t.Fatalf("after restart: %+v %v", got, noteErr(err))
	}
	if err := ts.svc.DropConnection(ctx, "src", false); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.GetConnection(ctx, "src"); !errors.Is(noteErr(err), ErrConnectionNotFound) || !strings.Contains(err.Error(), `data connection "src" does not exist`) {
		t.Fatalf("after drop: %v", err)
	}
	if err := ts.svc.DropConnection(ctx, "src", false); !errors.Is(noteErr(err), ErrConnectionNotFound) {
		t.Fatalf("second drop: %v", err)
	}
}

func TestConnectionOptionErrors(t *testing.T) {
	ctx := context.Background()
	ts := newStack(t, Options{})
	cases := []struct {
		spec ConnectionSpec
		keys []string
		is   error
	}{
		{ConnectionSpec{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "prot": 1}}, []string{"options.prot"}, nil},
		{ConnectionSpec{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "port": 70000}}, []string{"options.port"}, nil},
		{ConnectionSpec{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "port": "x1"}}, []string{"options.port"}, nil},
		{ConnectionSpec{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "max_open": 3}}, []string{"options.max_open"}, nil},
		{ConnectionSpec{Name: "a", Type: "mysql", Options: map[string]any{"host": "h"}}, []string{"options.user"}, nil},
		{ConnectionSpec{Name: "a", Type: "mysql", Options: map[string]any{"dsn": "u:p@tcp(h)/d", "host": "h"}}, []string{"options.host"}, nil},
		{ConnectionSpec{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "tls": "maybe"}}, []string{"options.tls"}, nil},
		{ConnectionSpec{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "password": "env:"}}, []string{"options.password"}, nil},
		{ConnectionSpec{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "password": "file:relative"}}, []string{"options.password"}, nil},
		{ConnectionSpec{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "params": map[string]any{"time_zone": "'+01:00'"}}}, []string{"options.params.time_zone"}, nil},
		{ConnectionSpec{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "params": map[string]any{"x; DROP": "1"}}}, []string{"options.params.x; DROP"}, nil},
		{ConnectionSpec{Name: "a", Type: "mysql", Sharing: "sometimes", Options: map[string]any{"user": "u"}}, []string{"sharing"}, nil},
		{ConnectionSpec{Name: "a b", Type: "mysql", Options: map[string]any{"user": "u"}}, []string{"name"}, nil},
		{ConnectionSpec{Name: "a", Type: "oracle"}, []string{"type"}, ErrUnknownType},
		{ConnectionSpec{Name: "a", Type: "sqlite"}, []string{"options.path"}, nil},
		{ConnectionSpec{Name: "a", Type: "sqlite", Options: map[string]any{"path": 3, "chunk_rows": 0}}, []string{"options.chunk_rows", "options.path"}, nil},
	}
	for _, tc := range cases {
		_, err := ts.svc.CreateConnection(ctx, tc.spec)
		noteErr(err)
		if !errors.Is(err, ErrBadOption) {
			t.Errorf("%+v: err %v, want ErrBadOption", tc.spec, err)
			continue
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%+v: err %v, want %v", tc.spec, err, tc.is)
		}
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Errorf("no *OptionError in %v", err)
		}
		for _, k := range tc.keys {
			if !strings.Contains(err.Error(), `option "`+k+`"`) {
				t.Errorf("%+v: error %q does not name %q", tc.spec, err, k)
			}
		}
	}
	if l := ts.svc.ListConnections(); len(l) != 0 {
		t.Fatalf("bad specs created connections: %+v", l)
	}
}

func TestConfigConnectionsReadOnlyAndShadowing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sqlitePath := newSQLiteFixture(t)
	ts := openStack(t, dir, Options{})
	if _, err := ts.svc.CreateConnection(ctx, ConnectionSpec{Name: "c", Type: "sqlite", Options: map[string]any{"path": sqlitePath}}); err != nil {
		t.Fatal(err)
	}
	ts.close()
	cfg := Options{Connections: []ConnectionSpec{{Name: "c", Type: "sqlite", Sharing: SharingSingleUse, Options: map[string]any{"path": sqlitePath}}}}
	ts = openStack(t, dir, cfg)
	list := ts.svc.ListConnections()
	if len(list) != 2 || list[0].Source != OriginAPI || list[0].Status != "shadowed" || list[1].Source != OriginConfig || list[1].Status != "active" {
		t.Fatalf("list %+v", list)
	}
	got, _ := ts.svc.GetConnection(ctx, "c")
	if got.Source != OriginConfig || got.Sharing != SharingSingleUse {
		t.Fatalf("get %+v", got)
	}
	if _, _, err := ts.svc.PutConnection(ctx, ConnectionSpec{Name: "c", Type: "sqlite", Options: map[string]any{"path": sqlitePath}}); !errors.Is(err, ErrConnectionReadOnly) {
		t.Fatalf("put over config: %v", err)
	}
	if err := ts.svc.DropConnection(ctx, "c", true); !errors.Is(err, ErrConnectionReadOnly) {
		t.Fatalf("drop config: %v", err)
	}
	// A single-use connection opens for the run and keeps nothing open.
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "a", Connection: "c", Resource: "items"}); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, ts.runWait(t, "a"))
	ts.svc.mu.Lock()
	if ts.svc.conns.config["c"].h != nil {
		t.Errorf("single-use connection kept a handle")
	}
	ts.svc.mu.Unlock()
	if err := ts.svc.DeleteAdapter(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	ts.close()
	// Without the config definition the API one is active again: it was
	// never deleted.
	ts = openStack(t, dir, Options{})
	got, err := ts.svc.GetConnection(ctx, "c")
	if err != nil || got.Source != OriginAPI || got.Status != "active" {
		t.Fatalf("after config removal: %+v %v", got, err)
	}
	// A bad config names the key.
	st, _ := pebble.Open(t.TempDir(), pebble.Options{})
	defer st.Close()
	db, _ := snapshot.Open(ctx, st, snapshot.Options{})
	defer db.Close()
	_, err = New(ctx, db, Options{
		Connections: []ConnectionSpec{{Name: "ok", Type: "sqlite", Options: map[string]any{"path": sqlitePath, "pth": 1}}},
		Adapters:    []AdapterSpec{{Name: "a", Connection: "nope", Resource: "t"}, {Name: "b", Connection: "ok", Resource: "t", Schedule: "61 * * * *"}},
	})
	for _, want := range []string{`"connections[0].options.pth"`, `"adapters[0].connection"`, `"adapters[1].schedule"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad config error %v does not name %s", err, want)
		}
	}
	if !errors.Is(err, ErrBadSchedule) || !errors.Is(err, ErrConnectionNotFound) {
		t.Errorf("bad config error %v lacks sentinels", err)
	}
}

func TestAdapterCRUDAndDropInUse(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	reg := prometheus.NewRegistry()
	ts := newStack(t, Options{Registerer: reg})
	svc := ts.svc
	if _, err := svc.CreateAdapter(ctx, AdapterSpec{Name: "a", Connection: "missing", Resource: "items"}); !errors.Is(err, ErrConnectionNotFound) {
		t.Fatalf("adapter on missing connection: %v", err)
	}
	if _, err := svc.CreateConnection(ctx, ConnectionSpec{Name: "lite", Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateAdapter(ctx, AdapterSpec{Name: "a", Connection: "lite", Resource: "items", Schedule: "every day"}); !errors.Is(err, ErrBadSchedule) {
		t.Fatalf("bad schedule: %v", err)
	}
	a, err := svc.CreateAdapter(ctx, AdapterSpec{Name: "a", Connection: "lite", Resource: "items", Guard: snapshot.Guard{MaxShrink: 1}})
	if err != nil || a.Dataset != "a" || a.Revision != 1 || a.Source != OriginAPI {
		t.Fatalf("create adapter: %+v %v", a, err)
	}
	if _, err := svc.CreateAdapter(ctx, AdapterSpec{Name: "a", Connection: "lite", Resource: "items"}); !errors.Is(err, ErrAdapterExists) {
		t.Fatalf("dup adapter: %v", err)
	}
	a, created, err := svc.PutAdapter(ctx, AdapterSpec{Name: "a", Connection: "lite", Resource: "items", Dataset: "items", Guard: snapshot.Guard{MaxShrink: 1}})
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
	if rec.Status != RunFailed || !strings.Contains(rec.Error, `data connection "lite" does not exist`) {
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
	if _, err := svc.StartRunWith(ctx, "a", RunOptions{Trigger: "api"}); !errors.Is(err, ErrAdapterNotFound) {
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

// TestRunRecordsPrunedAndAbandoned: old run records are pruned to the
// newest keepRunsPerAdapter; a record left "running" by a dead process is
// marked aborted at the next New.
func TestRunRecordsPrunedAndAbandoned(t *testing.T) {
	ctx := context.Background()
	old := keepRunsPerAdapter
	keepRunsPerAdapter = 3
	defer func() { keepRunsPerAdapter = old }()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, ConnectionSpec{Name: "lite", Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "a", Connection: "lite", Resource: "items"}); err != nil {
		t.Fatal(err)
	}
	var last RunRecord
	for range 5 {
		last = ts.runWait(t, "a")
		mustSucceed(t, last)
	}
	runs, err := ts.svc.ListRuns(ctx, "a", 0)
	if err != nil || len(runs) != 3 || runs[0].ID != last.ID {
		t.Fatalf("runs after pruning: %d %v", len(runs), err)
	}
	dead := RunRecord{ID: "r0000000000000000001-0001", Adapter: "a", Dataset: "a", Trigger: "schedule", Status: RunRunning, Start: time.Unix(0, 1)}
	b, _ := json.Marshal(dead)
	if err := ts.db.PutRecord(ctx, recordRun, dead.ID, b); err != nil {
		t.Fatal(err)
	}
	ts.close()
	ts = openStack(t, ts.dir, Options{})
	got, err := ts.svc.GetRun(ctx, dead.ID)
	if err != nil || got.Status != RunAborted || got.End == nil || !strings.Contains(got.Error, "process stopped") {
		t.Fatalf("dead run after restart: %+v %v", got, err)
	}
}
