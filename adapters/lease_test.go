package adapters

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
)

// TestReplaceAndDropDuringPull: a pull started on revision 1 finishes on
// it while the connection is replaced, whose old pool closes when the pull
// ends (N1); the next run uses revision 2; a drop lets the running pull
// finish and later runs fail clearly (N2).
func TestReplaceAndDropDuringPull(t *testing.T) {
	forEachSource(t, func(t *testing.T, e sourceEnv) {
		ctx := context.Background()
		db := e.longTable(t, 3000)
		ts := newStack(t, Options{})
		svc := ts.svc
		if _, err := svc.CreateConnection(ctx, connSpec(t, e, "m", db, map[string]any{"chunk_rows": 100})); err != nil {
			t.Fatal(err)
		}
		// A version per run even when nothing changed: the second run's
		// version records the replaced connection's revision.
		if _, err := svc.CreateAdapter(ctx, api.Adapter{Name: "long", Connection: "m", Resource: "big", CommitUnchanged: true}); err != nil {
			t.Fatal(err)
		}
		b := newBlock(ts, "long", 150)
		rec, err := svc.StartRun(ctx, "long", RunOptions{Trigger: "api"})
		if err != nil {
			t.Fatal(err)
		}
		<-b.reached
		if _, err := svc.StartRun(ctx, "long", RunOptions{Trigger: "api"}); !errors.Is(err, ErrRunInProgress) || !strings.Contains(err.Error(), rec.ID) {
			t.Fatalf("second start: %v", err)
		}
		live, err := svc.GetRun(ctx, rec.ID)
		if err != nil || live.Status != RunRunning || live.TxnID == 0 || live.RowsEstimated == 0 {
			t.Fatalf("live record %+v %v", live, err)
		}
		svc.mu.Lock()
		old := svc.conns.api["m"].h
		svc.mu.Unlock()
		if _, _, err := svc.PutConnection(ctx, connSpec(t, e, "m", db, map[string]any{"chunk_rows": 1000})); err != nil {
			t.Fatal(err)
		}
		old.mu.Lock()
		if !old.retired || old.refs != 1 || old.src == nil {
			t.Errorf("old handle while the run holds it: retired=%v refs=%d open=%v", old.retired, old.refs, old.src != nil)
		}
		old.mu.Unlock()
		close(b.release)
		end, err := svc.WaitRun(ctx, rec.ID)
		if err != nil || end.Status != RunSucceeded || end.RowsRead != 3000 {
			t.Fatalf("run across replace: %+v %v", end, err)
		}
		vi, err := ts.db.VersionInfo(ctx, "long", end.Version)
		if err != nil || vi.Source.Revision != 1 {
			t.Fatalf("version source %+v %v", vi.Source, err)
		}
		old.mu.Lock()
		if old.src != nil || old.refs != 0 {
			t.Errorf("old handle not closed after its last run: refs=%d", old.refs)
		}
		old.mu.Unlock()
		r2 := ts.runWait(t, "long")
		mustSucceed(t, r2)
		if vi, _ := ts.db.VersionInfo(ctx, "long", r2.Version); vi.Source.Revision != 2 || r2.Stats.Unchanged != 3000 {
			t.Fatalf("second run: revision %d stats %+v", vi.Source.Revision, r2.Stats)
		}
		// Drop while a pull runs: it finishes; the next run fails.
		e.exec(t, db, "UPDATE big SET v = 'changed' WHERE id <= 10")
		b = newBlock(ts, "long", 150)
		rec, err = svc.StartRun(ctx, "long", RunOptions{Trigger: "api"})
		if err != nil {
			t.Fatal(err)
		}
		<-b.reached
		if err := svc.DropConnection(ctx, "m", false); !errors.Is(err, ErrConnectionInUse) {
			t.Fatalf("drop without force: %v", err)
		}
		if err := svc.DropConnection(ctx, "m", true); err != nil {
			t.Fatal(err)
		}
		close(b.release)
		end, _ = svc.WaitRun(ctx, rec.ID)
		if end.Status != RunSucceeded || end.Stats.Updated != 10 {
			t.Fatalf("run across drop: %+v", end)
		}
		r4 := ts.runWait(t, "long")
		if r4.Status != RunFailed || !strings.Contains(r4.Error, `data connection does not exist: "m"`) {
			t.Fatalf("run after drop: %+v", r4)
		}
	})
}
