package adapters

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store/pebble"
	"github.com/snapstore/snapstore/store/storetest"
)

// openFaultStack opens a stack whose snapshot.DB runs on a
// storetest.FaultStore over a real Pebble store in dir: the fault-injecting
// wrapper stands in for an HBase gateway that stops answering.
func openFaultStack(t *testing.T, dir string) (*testStack, *storetest.FaultStore) {
	t.Helper()
	ts := &testStack{dir: dir}
	inner, err := pebble.Open(dir, pebble.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	fs := storetest.NewFaultStore(inner, storetest.Faults{})
	ts.st = fs
	if ts.db, err = snapshot.Open(context.Background(), fs, snapshot.Options{Logger: testLogger()}); err != nil {
		fs.Close()
		t.Fatal(err)
	}
	if ts.svc, err = New(context.Background(), ts.db, Options{Logger: testLogger(), FileOptions: FileOptionLimits{AnyFile: true}}); err != nil {
		ts.db.Close()
		fs.Close()
		t.Fatal(err)
	}
	t.Cleanup(ts.close)
	return ts, fs
}

// faultStackWithAdapter opens a fault stack with adapter "a" over the
// SQLite fixture's items (3 rows).
func faultStackWithAdapter(t *testing.T) (*testStack, *storetest.FaultStore) {
	t.Helper()
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts, fs := openFaultStack(t, t.TempDir())
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "lite", Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items"}); err != nil {
		t.Fatal(err)
	}
	return ts, fs
}

// startBlocked starts a run of "a" and returns once it paused after its
// second row, with the pause to release.
func startBlocked(t *testing.T, ts *testStack) (*blockAt, RunRecord) {
	t.Helper()
	b := newBlock(ts, "a", 2)
	rec, err := ts.svc.StartRun(context.Background(), "a", RunOptions{Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	<-b.reached
	return b, rec
}

// storedRun reads run id's record as stored, bypassing the Service.
func storedRun(t *testing.T, db *snapshot.DB, id string) (RunRecord, error) {
	t.Helper()
	b, err := db.GetRecord(context.Background(), recordRun, id)
	if err != nil {
		return RunRecord{}, err
	}
	var rec RunRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec, nil
}

// writesFail fails every write of the store, as a gateway that lost its
// region servers does, while reads answer (so that the abort of the run
// ends at once instead of waiting for the outcome of its writes).
func writesFail(c storetest.Call) storetest.Fault {
	if c.Op.IsWrite() {
		return storetest.Fail
	}
	return storetest.NoFault
}

// TestRunRecordSavedAfterStoreOutage: a run that fails because the store
// stopped answering ends failed with code store_unavailable; its final
// record, which the store refused, answers GetRun meanwhile and is stored
// once the store answers again, without a restart (U1); a restart keeps it
// failed.
func TestRunRecordSavedAfterStoreOutage(t *testing.T) {
	ctx := context.Background()
	ts, fs := faultStackWithAdapter(t)
	mustSucceed(t, ts.runWait(t, "a"))
	b, rec := startBlocked(t, ts)
	fs.SetDecide(writesFail) // the outage begins mid-run
	close(b.release)
	end, err := ts.svc.WaitRun(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != RunFailed || end.Code != "store_unavailable" {
		t.Fatalf("run cut by the outage: status %s code %q: %s", end.Status, end.Code, end.Error)
	}
	if got, err := ts.svc.GetRun(ctx, rec.ID); err != nil || got.Status != RunFailed {
		t.Fatalf("GetRun during the outage: %+v %v", got, err)
	}
	if runs, err := ts.svc.ListRuns(ctx, "a", 0); err != nil || runs[0].ID != rec.ID || runs[0].Status != RunFailed {
		t.Fatalf("ListRuns during the outage: %+v %v", runs, err)
	}
	if st, err := storedRun(t, ts.db, rec.ID); err != nil || st.Status != RunRunning {
		t.Fatalf("stored record during the outage: %+v %v, want still running", st, err)
	}
	fs.SetDecide(nil) // the store answers again
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := storedRun(t, ts.db, rec.ID)
		if err == nil && st.Status == RunFailed && st.Code == "store_unavailable" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored record after the outage: %+v %v, want failed", st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.close()
	ts = openStack(t, ts.dir, Options{})
	if got, err := ts.svc.GetRun(ctx, rec.ID); err != nil || got.Status != RunFailed || got.Code != "store_unavailable" {
		t.Fatalf("after a restart: %+v %v", got, err)
	}
}

// TestRunRecordLastTryAtClose: a final record still unsaved when the
// service closes gets a last try there.
func TestRunRecordLastTryAtClose(t *testing.T) {
	ctx := context.Background()
	ts, fs := faultStackWithAdapter(t)
	b, rec := startBlocked(t, ts)
	fs.SetDecide(writesFail)
	close(b.release)
	if end, err := ts.svc.WaitRun(ctx, rec.ID); err != nil || end.Status != RunFailed {
		t.Fatalf("run: %+v %v", end, err)
	}
	// The drainer waits at least unsavedRetryMin before its next try:
	// lift the outage and close at once, so that Close's try saves it.
	fs.SetDecide(nil)
	if err := ts.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := storedRun(t, ts.db, rec.ID); err != nil || st.Status != RunFailed {
		t.Fatalf("stored record after Close: %+v %v", st, err)
	}
}

// TestRunCheckpoints: the stored record of a running run says how far it
// got: once it reads, its transaction id and estimate; once it commits,
// the rows it read and the commit phase. A process killed there leaves
// that record, which the next start marks aborted naming the transaction.
func TestRunCheckpoints(t *testing.T) {
	ctx := context.Background()
	ts, fs := faultStackWithAdapter(t)
	b, rec := startBlocked(t, ts)
	st, err := storedRun(t, ts.db, rec.ID)
	if err != nil || st.TxnID == 0 || st.RowsEstimated != 3 || len(st.Phases) != 2 || st.Phases[1].Name != PhaseRead {
		t.Fatalf("stored record while reading: %+v %v", st, err)
	}
	// Hold the run's first data write, which its commit makes.
	var once sync.Once
	held, release := make(chan struct{}), make(chan struct{})
	fs.SetBefore(func(c storetest.Call) {
		if c.Op.IsWrite() && c.Table != "meta" {
			once.Do(func() { close(held); <-release })
		}
	})
	close(b.release)
	<-held
	st, err = storedRun(t, ts.db, rec.ID)
	close(release)
	if err != nil || st.Status != RunRunning || st.RowsRead != 3 || len(st.Phases) != 3 || st.Phases[2].Name != PhaseCommit {
		t.Fatalf("stored record while committing: %+v %v", st, err)
	}
	if end, err := ts.svc.WaitRun(ctx, rec.ID); err != nil || end.Status != RunSucceeded {
		t.Fatalf("run: %+v %v", end, err)
	}
	// What a restart does with the records a killed process left in the
	// commit phase: one whose transaction committed (its final record was
	// lost) is succeeded with that version; one whose transaction did not
	// is aborted, naming it.
	committed := st
	aborted := st
	aborted.ID, aborted.TxnID = "r0000000000000000001-0001", 999999
	for _, r := range []RunRecord{committed, aborted} {
		raw, _ := json.Marshal(r)
		if err := ts.db.PutRecord(ctx, recordRun, r.ID, raw); err != nil {
			t.Fatal(err)
		}
	}
	ts.close()
	ts = openStack(t, ts.dir, Options{})
	got, err := ts.svc.GetRun(ctx, committed.ID)
	if err != nil || got.Status != RunSucceeded || got.Version != committed.TxnID || got.Stats.Rows != 3 || got.Error != "" {
		t.Fatalf("committed run left running, after a restart: %+v %v", got, err)
	}
	got, err = ts.svc.GetRun(ctx, aborted.ID)
	if err != nil || got.Status != RunAborted || got.TxnID != 999999 || len(got.Phases) != 3 || !strings.Contains(got.Error, "transaction 999999") {
		t.Fatalf("record a killed process left, after a restart: %+v %v", got, err)
	}
}
