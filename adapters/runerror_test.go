package adapters

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/errtext"
	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/pebble"
)

// dataWritesFail wraps a real store and fails every write of a dataset's
// rows (its data tables, "r/...") with err. It is a fault injected around
// a real Pebble store, standing in for an HBase Thrift2 gateway whose
// TIOError carries a Java stack trace: a text of many lines.
type dataWritesFail struct {
	store.Store
	err error
}

func (f *dataWritesFail) Apply(ctx context.Context, b *store.Batch) error {
	if strings.HasPrefix(b.Table, "r/") {
		return f.err
	}
	return f.Store.Apply(ctx, b)
}

// ProcessLocal passes on the wrapped store's answer (store.ProcessLocal).
func (f *dataWritesFail) ProcessLocal() bool {
	pl, ok := f.Store.(store.ProcessLocal)
	return ok && pl.ProcessLocal()
}

// TestRunRecord_ErrorOfManyLines: a run whose store fails with a text of
// many lines, longer than a record keeps, ends failed with the stable code
// store_unavailable and an error of one line, at most errtext.MaxLine
// bytes, that keeps the text's start and says it was cut: as the run
// answers at its end, as GetRun and ListRuns answer, and as stored. The
// run's end is logged once with the whole text.
func TestRunRecord_ErrorOfManyLines(t *testing.T) {
	ctx := context.Background()
	var trace strings.Builder
	trace.WriteString("org.apache.hadoop.hbase.RegionTooBusyException: Over memstore limit=512.0M, regionName=r/items/0,,1.abc, server=rs1,16020\n")
	for i := range 60 {
		fmt.Fprintf(&trace, "\tat org.apache.hadoop.hbase.regionserver.HRegion.checkResources(HRegion.java:%d)\n", 4900+i)
	}
	trace.WriteString("\tat the.last.Frame(Frame.java:1)\n")
	injected := fmt.Errorf("hbase: apply: %w: %s", store.ErrUnavailable, trace.String())

	dir := t.TempDir()
	inner, err := pebble.Open(dir, pebble.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testStack{dir: dir, st: &dataWritesFail{Store: inner, err: injected}}
	if ts.db, err = snapshot.Open(ctx, ts.st, snapshot.Options{Logger: testLogger()}); err != nil {
		inner.Close()
		t.Fatal(err)
	}
	var logs testenv.SyncBuffer
	log := slog.New(slog.NewJSONHandler(io.MultiWriter(&logs, lockedWriter{}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	if ts.svc, err = New(ctx, ts.db, Options{Logger: log, FileOptions: FileOptionLimits{AnyFile: true}}); err != nil {
		ts.db.Close()
		inner.Close()
		t.Fatal(err)
	}
	t.Cleanup(ts.close)
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "lite", Type: "sqlite", Options: map[string]any{"path": newSQLiteFixture(t)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items"}); err != nil {
		t.Fatal(err)
	}

	end := ts.runWait(t, "a")
	if end.Status != RunFailed || end.Code != "store_unavailable" {
		t.Fatalf("run: status %s code %q: %s", end.Status, end.Code, end.Error)
	}
	check := func(what, got string) {
		t.Helper()
		if len(got) > errtext.MaxLine || strings.ContainsAny(got, "\n\r\t") ||
			!strings.Contains(got, "RegionTooBusyException: Over memstore limit=512.0M") ||
			!strings.Contains(got, "server=rs1,16020; at org.apache.hadoop.hbase.regionserver.HRegion.checkResources(HRegion.java:4900); at ") ||
			!strings.HasSuffix(got, "more bytes cut; the whole text is in the log]") || strings.Contains(got, "the.last.Frame") {
			t.Errorf("%s: error of %d bytes, want one line of at most %d keeping the start and saying it was cut:\n%s", what, len(got), errtext.MaxLine, got)
		}
	}
	check("the run's end", end.Error)
	got, err := ts.svc.GetRun(ctx, end.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("GetRun", got.Error)
	runs, err := ts.svc.ListRuns(ctx, "a", 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("ListRuns: %+v %v", runs, err)
	}
	check("ListRuns", runs[0].Error)
	stored, err := storedRun(t, ts.db, end.ID)
	if err != nil || stored.Code != "store_unavailable" {
		t.Fatalf("stored record: %+v %v", stored, err)
	}
	check("the stored record", stored.Error)

	// The log has the whole text, its last frame too, once.
	var full []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if e, _ := m["err"].(string); strings.Contains(e, "the.last.Frame(Frame.java:1)") {
			full = append(full, m)
		}
	}
	if len(full) != 1 || full[0]["msg"] != "run ended without a new version" || full[0]["code"] != "store_unavailable" ||
		!strings.Contains(full[0]["err"].(string), trace.String()) {
		t.Fatalf("log lines with the whole error: %v", full)
	}
}
