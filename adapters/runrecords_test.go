package adapters

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
)

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
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "lite", Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items"}); err != nil {
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
