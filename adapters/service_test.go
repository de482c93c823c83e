package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
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
	if opts.SecretRefs.FileDirs == nil && opts.SecretRefs.EnvPrefix == "" {
		// The tests' API connections name SNAPSTORE_TEST_* variables and
		// files of t.TempDir; a test of the limits sets its own (a non-nil
		// empty FileDirs for none).
		opts.SecretRefs = SecretRefLimits{FileDirs: []string{os.TempDir()}, EnvPrefix: "SNAPSTORE_TEST_"}
	}
	if opts.FileOptions.Dirs == nil && !opts.FileOptions.AnyFile {
		// The tests' API connections name files anywhere, as a server
		// without tokens lets them; a test of the limits sets its own.
		opts.FileOptions.AnyFile = true
	}
	if opts.SecretKeys.KeyFiles == nil && opts.SecretKeys.GenerateDir == "" {
		// As serve on Pebble: a key generated in the data directory.
		opts.SecretKeys.GenerateDir = dir
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
	rec, err := ts.svc.StartRun(ctx, adapter, RunOptions{Trigger: "api"})
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

func mysqlConnSpec(t testing.TB, e mysqlTestEnv, name, db string, extra map[string]any) api.Connection {
	o := e.options(t, db)
	for k, v := range extra {
		o[k] = v
	}
	return api.Connection{Name: name, Type: "mysql", Options: o}
}

// blockAt makes runs of adapter pause after row n until release is closed
// (or the run's context ends); reached is closed when the pause begins.
type blockAt struct {
	adapter string
	n       int64
	reached chan struct{}
	release chan struct{}
}

func newBlock(ts *testStack, adapter string, n int64) *blockAt {
	b := &blockAt{adapter: adapter, n: n, reached: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	ts.svc.testHookRow = func(ctx context.Context, a string, i int64) {
		if a != b.adapter || i != b.n {
			return
		}
		fired := false
		once.Do(func() { fired = true })
		if !fired {
			return
		}
		close(b.reached)
		select {
		case <-b.release:
		case <-ctx.Done():
		}
	}
	return b
}

func longTable(t *testing.T, e mysqlTestEnv, rows int) string {
	db := e.tempDatabase(t, "long")
	e.exec(t, db, "CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(40))",
		fmt.Sprintf("INSERT INTO big SELECT seq, CONCAT('row ', seq) FROM seq_1_to_%d", rows))
	return db
}

// TestCloseAbortsRunningRun: Close stops a running pull, its version is
// never committed, and Close returns.
func TestCloseAbortsRunningRun(t *testing.T) {
	forEachSource(t, func(t *testing.T, e sourceEnv) {
		ctx := context.Background()
		db := e.longTable(t, 500)
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "m", db, map[string]any{"chunk_rows": 100})); err != nil {
			t.Fatal(err)
		}
		if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "long", Connection: "m", Resource: "big"}); err != nil {
			t.Fatal(err)
		}
		first := ts.runWait(t, "long")
		mustSucceed(t, first)
		e.exec(t, db, "DELETE FROM big WHERE id > 400")
		b := newBlock(ts, "long", 50)
		rec, err := ts.svc.StartRun(ctx, "long", RunOptions{Trigger: "api"})
		if err != nil {
			t.Fatal(err)
		}
		<-b.reached
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := ts.svc.Close(cctx); err != nil {
			t.Fatal(err)
		}
		if _, err := ts.svc.StartRun(ctx, "long", RunOptions{Trigger: "api"}); !errors.Is(err, ErrShuttingDown) {
			t.Fatalf("start after close: %v", err)
		}
		got, err := ts.svc.GetRun(ctx, rec.ID)
		if err != nil || got.Status != RunAborted || !strings.Contains(got.Error, "shutting down") {
			t.Fatalf("aborted run record %+v %v", got, err)
		}
		// One cause, said once, and a stable code.
		if strings.Count(got.Error, "context canceled") > 1 || strings.Count(got.Error, "shutting down") > 1 || got.Code != "aborted" {
			t.Errorf("aborted run: code %q, error %q", got.Code, got.Error)
		}
		t.Logf("aborted run error: %s", got.Error)
		cur, rows := readAll(t, ts.db, "long")
		if cur.Version != first.Version || len(rows) != 500 {
			t.Fatalf("current version %d with %d rows, want %d with 500", cur.Version, len(rows), first.Version)
		}
		// A restart keeps the record aborted, and the service starts clean.
		ts.close()
		ts = openStack(t, ts.dir, Options{})
		got, err = ts.svc.GetRun(ctx, rec.ID)
		if err != nil || got.Status != RunAborted {
			t.Fatalf("after restart %+v %v", got, err)
		}
	})
}

func fmtValue(v snapshot.Value) string {
	switch v.Kind {
	case snapshot.KindNull:
		return "NULL"
	case snapshot.KindInt:
		return fmt.Sprintf("int %d", v.Int)
	case snapshot.KindUint:
		return fmt.Sprintf("uint %d", v.Uint)
	case snapshot.KindFloat:
		return fmt.Sprintf("float %v", v.Float)
	case snapshot.KindBytes, snapshot.KindGeometry:
		return fmt.Sprintf("kind %d hex %x", v.Kind, v.Bytes)
	}
	return fmt.Sprintf("kind %d %q (nil=%v)", v.Kind, v.Bytes, v.Bytes == nil)
}

// stringsOf is a test helper rendering a row.
func stringsOf(vals []snapshot.Value) string {
	var parts []string
	for _, v := range vals {
		parts = append(parts, fmtValue(v))
	}
	return strings.Join(parts, ", ")
}
