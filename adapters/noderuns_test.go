package adapters

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestEndNodeRuns checks that a survivor ends a dead node's running runs
// and the waiting runs it placed with code node_failed, leaves every other
// run alone, ends each once, and never overwrites a record that changed
// since it was read.
func TestEndNodeRuns(t *testing.T) {
	c, ts, _ := newTwoNodes(t, StrategyLocal)
	ctx := context.Background()
	now := time.Now().UTC()
	ended := now.Add(time.Second)
	recs := []RunRecord{
		{ID: "r0000000000000000001-0001", Adapter: "a", Dataset: "a", Status: RunRunning, Start: now, Node: "n2", TxnID: 7},
		{ID: "r0000000000000000002-0001", Adapter: "a", Dataset: "a", Status: RunSucceeded, Start: now, End: &ended, Node: "n2"},
		{ID: "r0000000000000000003-0001", Adapter: "a", Dataset: "a", Status: RunWaiting, Start: now, Node: "n1", PlacedBy: "n2"},
		{ID: "r0000000000000000004-0001", Adapter: "a", Dataset: "a", Status: RunRunning, Start: now, Node: "n3"},
		{ID: "r0000000000000000005-0001", Adapter: "a", Dataset: "a", Status: RunWaiting, Start: now, Node: "n2", PlacedBy: "n3"},
	}
	for _, r := range recs {
		if err := ts.svc.saveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	n1, err := New(ctx, ts.db, Options{Logger: testLogger(), Cluster: nodeView{c, "n1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Close(ctx)
	n, err := n1.EndNodeRuns(ctx, "n2", "was confirmed failed")
	if err != nil || n != 2 {
		t.Fatalf("ending n2's runs: %d %v", n, err)
	}
	want := []string{"aborted node_failed", "succeeded ", "aborted node_failed", "running ", "waiting "}
	for i, r := range recs {
		got, err := n1.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if s := string(got.Status) + " " + got.Code; s != want[i] {
			t.Errorf("run %d: %s, want %s", i+1, s, want[i])
		}
		if got.Code == codeNodeFailed && (!strings.Contains(got.Error, "node n2") || !strings.Contains(got.Error, "ended by node n1") || got.End == nil) {
			t.Errorf("run %d: %+v", i+1, got)
		}
	}
	if n, err := n1.EndNodeRuns(ctx, "n2", "was confirmed failed"); err != nil || n != 0 {
		t.Errorf("ending n2's runs again: %d %v", n, err)
	}
	if _, err := n1.EndNodeRuns(ctx, "n1", "was forgotten"); err == nil {
		t.Error("a node ended its own runs as another's")
	}

	// A record that changed after it was read (its run ended meanwhile)
	// is not overwritten.
	r := recs[3]
	stale, _ := json.Marshal(r)
	r.Status, r.End = RunSucceeded, &ended
	if err := ts.svc.saveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	gone := recs[3]
	gone.Status, gone.Code = RunAborted, codeNodeFailed
	if ok, err := n1.endRun(ctx, stale, gone); err != nil || ok {
		t.Fatalf("ending a run whose record changed: %v %v", ok, err)
	}
	if got, _ := n1.GetRun(ctx, r.ID); got.Status != RunSucceeded {
		t.Errorf("a run that ended meanwhile was overwritten: %s %s", got.Status, got.Code)
	}
}
