package snapshot

// Regression tests of faults between the calls of one metadata change:
// each injects, through storetest.FaultStore, a failure that a remote
// store (HBase) can produce in the middle of a commit, rollback, GC,
// drop or id allocation, and checks that no partial state shows, before
// and after a simulated crash (faultHarness.checkVersions).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/storetest"
)

var (
	srcA = map[int64]string{1: "a", 2: "b", 3: "c", 4: "d", 5: "e"}
	srcB = map[int64]string{1: "A", 2: "b", 3: "c", 6: "f"}
	srcC = map[int64]string{1: "a", 2: "B", 7: "g"}
)

// commitInPart commits a second version of ds while every metadata write
// is applied in part (a random subset of its rows, as HBase's putMultiple
// and deleteMultiple can leave it), then crashes.
func commitInPart(h *faultHarness, ds string) {
	h.t.Helper()
	h.run(ds, srcA)
	r, err := h.begin(h.db, ds, srcB, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.decide(func(c storetest.Call) storetest.Fault {
		if c.Op.IsWrite() && c.Table == "meta" {
			return storetest.Partial
		}
		return storetest.NoFault
	})
	h.commit(r, srcB)
	h.decide(nil)
	h.crash()
}

// TestFaultCommitCurrentHasItsVersion: a commit applied in part (the
// dataset's current version written without its version record) and a
// crash leave a current version that is a kept version, and the next run
// still finds the rows the source deleted.
func TestFaultCommitCurrentHasItsVersion(t *testing.T) {
	h := newFaultHarness(t, 1)
	for i := range 12 {
		ds := fmt.Sprint("c", i)
		commitInPart(h, ds)
		info, err := h.db.Dataset(h.ctx, ds)
		if err != nil {
			t.Fatal(err)
		}
		if info.CurrentInfo == nil {
			t.Fatalf("%s: after a commit applied in part and a crash, current version %d has no version record", ds, info.Current)
		}
		h.run(ds, srcC)
		h.checkVersions(h.db, ds, "after the next run")
	}
}

// TestFaultCommitCrashBetweenCalls: a crash after the commit's first call
// (its version written current, its transaction still recorded in
// progress) leaves a current version that reads, with its own stats.
func TestFaultCommitCrashBetweenCalls(t *testing.T) {
	h := newFaultHarness(t, 2)
	const n = 12
	for i := range n {
		commitInPart(h, fmt.Sprint("c", i))
	}
	for i := range n {
		ds := fmt.Sprint("c", i)
		info, err := h.db.Dataset(h.ctx, ds)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.read(h.db, ds, At{}); err != nil {
			t.Fatalf("%s: after a crash in the middle of a commit, current version %d: %v", ds, info.Current, err)
		}
	}
	for i := range n {
		h.checkVersions(h.db, fmt.Sprint("c", i), "after a crash in the middle of a commit")
	}
}

// TestFaultCommitAmbiguous: the commit lands but reports an error, and the
// abort that follows fails. The DB must learn what happened: the next run
// compares with what is durably current, so that after a restart its
// version reads as its source.
func TestFaultCommitAmbiguous(t *testing.T) {
	h := newFaultHarness(t, 3)
	ds := "amb"
	h.run(ds, srcA)
	r, err := h.begin(h.db, ds, srcB, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen, failed := false, false
	h.decide(func(c storetest.Call) storetest.Fault {
		switch {
		case !seen && c.Op.IsWrite() && isDatasetRow(c, ds):
			seen = true
			return storetest.Ambiguous
		case seen && !failed && c.Op.IsWrite() && c.Table == "meta":
			failed = true
			return storetest.Fail
		}
		return storetest.NoFault
	})
	_, cerr := h.commit(r, srcB)
	h.decide(nil)
	if cerr != nil {
		// The DB said it did not commit: a fresh look must agree.
		probe := h.open(h.opts)
		if info, _ := probe.Dataset(h.ctx, ds); info.Current == r.TxnID() {
			t.Fatalf("Commit returned %v, yet version %d is durably current", cerr, r.TxnID())
		}
	}
	h.run(ds, srcA) // back to the first version's rows
	h.checkVersions(h.db, ds, "after the next run")
	h.crash()
	h.checkVersions(h.db, ds, "after a restart")
}

// TestFaultRollbackInPart: a rollback whose metadata write is applied in
// part, or fails, followed by a run and a crash, leaves every version
// reading as committed and the run's version as its source.
func TestFaultRollbackInPart(t *testing.T) {
	h := newFaultHarness(t, 4)
	srcD := map[int64]string{1: "A", 2: "b", 6: "f", 8: "h"}
	i := 0
	for k := 1; k <= 3; k++ {
		for _, f := range []storetest.Fault{storetest.Partial, storetest.Partial, storetest.Ambiguous, storetest.Fail} {
			i++
			ds := fmt.Sprint("r", i)
			v1 := h.run(ds, srcA)
			h.run(ds, srcB)
			h.run(ds, srcC)
			h.decide(metaWrites(k, f))
			vi, err := h.db.Rollback(h.ctx, ds, v1.Version)
			h.decide(nil)
			if err == nil {
				h.record(ds, vi.Version, srcA)
			}
			h.run(ds, srcD)
			h.checkVersions(h.db, ds, fmt.Sprintf("rollback with %s at metadata write %d, then a run", f, k))
			h.crash()
			h.checkVersions(h.db, ds, fmt.Sprintf("rollback with %s at metadata write %d, then a run and a restart", f, k))
		}
	}
}

// TestFaultGCExpiryFails: a GC whose metadata write fails, then a GC that
// succeeds, then a restart, leave every listed version reading as it was
// committed: no version is listed whose cells were collected.
func TestFaultGCExpiryFails(t *testing.T) {
	h := newFaultHarness(t, 5)
	for k := 1; k <= 4; k++ {
		ds := fmt.Sprint("g", k)
		for _, src := range []map[int64]string{srcA, srcB, srcC, srcA} {
			h.run(ds, src)
			h.clock = h.clock.Add(time.Hour)
		}
		if err := h.db.SetConfig(h.ctx, DatasetConfig{Name: ds, Retention: Retention{TTL: time.Minute, MinVersions: 1}}); err != nil {
			t.Fatal(err)
		}
		h.decide(metaWrites(k, storetest.Fail))
		h.db.GC(h.ctx, ds, false)
		h.decide(nil)
		if _, err := h.db.GC(h.ctx, ds, false); err != nil {
			t.Fatalf("GC after the failed one: %v", err)
		}
		h.checkVersions(h.db, ds, fmt.Sprintf("GC failing at metadata write %d, then GC", k))
		h.crash()
		h.checkVersions(h.db, ds, fmt.Sprintf("GC failing at metadata write %d, then GC and a restart", k))
	}
}

// TestFaultLateDataWrite: a run's data write times out at the client but
// lands later, after the run aborted and GC ran: the late cells never
// show in a later version.
func TestFaultLateDataWrite(t *testing.T) {
	h := newFaultHarness(t, 6)
	ds := "late"
	h.run(ds, srcA)
	once := false
	h.decide(func(c storetest.Call) storetest.Fault {
		if !once && c.Op == storetest.OpApply && c.Table == dataTable(ds, 0) {
			once = true
			return storetest.Late
		}
		return storetest.NoFault
	})
	if r, err := h.begin(h.db, ds, srcB, nil); err == nil {
		// The late write failed no Put (batches are applied later): make
		// the commit fail instead.
		r.Abort(h.ctx, "test")
	}
	h.decide(nil)
	if _, err := h.db.GC(h.ctx, ds, false); err != nil {
		t.Fatal(err)
	}
	if n := h.fs.LandLate(h.ctx); n != 1 {
		t.Fatalf("%d late writes landed, want 1", n)
	}
	h.run(ds, srcA)
	h.checkVersions(h.db, ds, "after the late write landed")
	// Long after, GC removes the late cells and forgets the run.
	h.clock = h.clock.Add(24 * time.Hour)
	if _, err := h.db.GC(h.ctx, ds, false); err != nil {
		t.Fatal(err)
	}
	h.run(ds, srcA)
	h.checkVersions(h.db, ds, "after GC a day later")
	h.crash()
	h.checkVersions(h.db, ds, "after a restart")
}

// TestFaultScratchClearFails: clearing the scratch table of an aborted
// run fails, and keeps failing: the next run that needs the scratch table
// either fails with a clear error or is not misled by the keys left there
// (a row deleted at the source is deleted in its version).
func TestFaultScratchClearFails(t *testing.T) {
	h := newFaultHarness(t, 7)
	ds := "scratch"
	all := map[int64]string{1: "a", 2: "b", 3: "c", 4: "d", 5: "e", 6: "f", 7: "g", 8: "h"}
	h.run(ds, all)
	h.decide(func(c storetest.Call) storetest.Fault {
		if c.Op == storetest.OpDeleteRange && c.Table == scratchTable(ds, 0) {
			return storetest.Fail
		}
		return storetest.NoFault
	})
	// Out of key order from 8 on: keys 8 and 7 go to the scratch table.
	withNine := map[int64]string{1: "a", 9: "i", 8: "h", 7: "g"}
	r, err := h.begin(h.db, ds, withNine, []int64{1, 9, 8, 7})
	if err != nil {
		t.Fatal(err)
	}
	r.Abort(h.ctx, "test")
	// The source lost row 8; out of order from 1 on.
	noEight := map[int64]string{1: "a", 2: "b", 3: "c", 4: "d", 5: "e", 6: "f", 7: "g"}
	r, err = h.begin(h.db, ds, noEight, []int64{7, 1, 2, 3, 4, 5, 6})
	if err != nil {
		if !hasText(err, "scratch") {
			t.Fatalf("a run refused for a scratch table that could not be cleared says %q", err)
		}
		h.decide(nil)
		if r, err = h.begin(h.db, ds, noEight, []int64{7, 1, 2, 3, 4, 5, 6}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.commit(r, noEight); err != nil {
		t.Fatal(err)
	}
	h.checkVersions(h.db, ds, "after the run")
}

// TestFaultLateScratchClear: a run's clear of its scratch table times out
// at the client and lands during the next run, between that run's record
// of the keys it saw out of order and its commit's merge-join over them:
// the next run still finds every row it was given (no row of its source
// is deleted in its version), since a clear deletes only the rows of the
// runs up to its own.
func TestFaultLateScratchClear(t *testing.T) {
	h := newFaultHarness(t, 10)
	ds := "latescratch"
	all := map[int64]string{1: "a", 2: "b", 3: "c", 4: "d", 5: "e", 6: "f", 7: "g", 8: "h"}
	h.run(ds, all)
	h.decide(func(c storetest.Call) storetest.Fault {
		if c.Op == storetest.OpDeleteRange && c.Table == scratchTable(ds, 0) {
			return storetest.Late
		}
		return storetest.NoFault
	})
	// Out of key order from 8 on: keys 8 and 7 go to the scratch table,
	// which the commit clears, late.
	r, err := h.begin(h.db, ds, all, []int64{1, 2, 3, 4, 5, 6, 8, 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.commit(r, all); err != nil {
		t.Fatal(err)
	}
	h.decide(nil)
	// Out of order from key 4 on (below 5): keys 6, 7 and 8, above it, are
	// recorded, and the commit merge-joins them with the current rows above
	// 5; the late clear lands as it first reads them back.
	landed := 0
	h.fs.SetBefore(func(c storetest.Call) {
		if c.Op == storetest.OpScan && c.Table == scratchTable(ds, 0) && landed == 0 {
			landed = h.fs.LandLate(h.ctx)
		}
	})
	r, err = h.begin(h.db, ds, all, []int64{1, 2, 3, 5, 4, 6, 7, 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.commit(r, all); err != nil {
		t.Fatal(err)
	}
	h.fs.SetBefore(nil)
	if landed == 0 {
		t.Fatal("the late clear did not land during the run")
	}
	h.checkVersions(h.db, ds, "after a run during which a late clear of the scratch table landed")
}

// TestFaultDropMetadataFails: a drop whose metadata write fails after it
// deleted cells never leaves the dataset listed and reading as empty; a
// restart and a second drop finish it.
func TestFaultDropMetadataFails(t *testing.T) {
	h := newFaultHarness(t, 8)
	for k := 1; k <= 3; k++ {
		ds := fmt.Sprint("d", k)
		h.run(ds, srcA)
		h.decide(metaWrites(k, storetest.Fail))
		err := h.db.DropDataset(h.ctx, ds)
		h.decide(nil)
		if err == nil {
			continue
		}
		h.checkVersions(h.db, ds, fmt.Sprintf("drop failing at metadata write %d", k))
		h.crash()
		h.checkVersions(h.db, ds, fmt.Sprintf("drop failing at metadata write %d, then a restart", k))
		if err := h.db.DropDataset(h.ctx, ds); err != nil && !errors.Is(err, ErrDatasetNotFound) {
			t.Fatalf("dropping again: %v", err)
		}
		if _, err := h.db.Dataset(h.ctx, ds); !errors.Is(err, ErrDatasetNotFound) {
			t.Fatalf("after the second drop: %v", err)
		}
		// Once a deletion that failed can no longer land (the store's
		// grace), the name is free, and nothing of the old dataset shows.
		h.clock = h.clock.Add(24 * time.Hour)
		h.run(ds, srcC)
		h.checkVersions(h.db, ds, "a dataset of the same name")
	}
}

// TestFaultTagDuringRollback: a tag set, by another process, while a
// rollback is under way, between any two of its writes, always names a
// version that reads as it was committed.
func TestFaultTagDuringRollback(t *testing.T) {
	h := newFaultHarness(t, 9)
	other := h.open(h.opts)
	for k := 1; k <= 3; k++ {
		ds := fmt.Sprint("t", k)
		v1 := h.run(ds, srcA)
		v2 := h.run(ds, srcB)
		h.run(ds, srcC)
		n, done := 0, false
		h.fs.SetBefore(func(c storetest.Call) {
			if done || !c.Op.IsWrite() || !isDatasetRow(c, ds) {
				return
			}
			if n++; n == k {
				done = true
				if err := other.Refresh(h.ctx); err != nil {
					t.Error(err)
				}
				if err := other.Tag(h.ctx, ds, "mid", v2.Version); err != nil {
					t.Errorf("tag during the rollback: %v", err)
				}
			}
		})
		vi, err := h.db.Rollback(h.ctx, ds, v1.Version)
		h.fs.SetBefore(nil)
		if err != nil {
			t.Fatal(err)
		}
		h.record(ds, vi.Version, srcA)
		h.checkTag(h.db, ds, "mid", fmt.Sprintf("tag at metadata write %d of a rollback", k))
		h.checkVersions(h.db, ds, "after the rollback")
		h.crash()
		h.checkTag(h.db, ds, "mid", "after a restart")
		h.checkVersions(h.db, ds, "after a restart")
	}
}

// TestFaultLateIDWrite: the write that takes a block of transaction ids
// times out and lands late, after later blocks were taken: ids never go
// back, so a restart hands out none that was used.
func TestFaultLateIDWrite(t *testing.T) {
	h := newFaultHarness(t, 10)
	block := idBlock(&h.opts)
	h.crash() // open with the block size
	once := false
	h.decide(func(c storetest.Call) storetest.Fault {
		if !once && c.Op.IsWrite() && c.Table == "meta" && c.Touches([]byte("t\x00")) {
			once = true
			return storetest.Late
		}
		return storetest.NoFault
	})
	var used int64
	for i := 0; i < 2*block+2; i++ {
		r, err := h.begin(h.db, "ids", map[int64]string{1: fmt.Sprint(i)}, nil)
		if err != nil {
			continue // the late write
		}
		used = max(used, r.TxnID())
		if _, err := h.commit(r, map[int64]string{1: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	h.decide(nil)
	if n := h.fs.LandLate(h.ctx); n != 1 {
		t.Fatalf("%d late writes landed, want 1", n)
	}
	h.crash()
	r, err := h.begin(h.db, "ids", map[int64]string{1: "last"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.TxnID() <= used {
		t.Fatalf("after a restart, transaction id %d, but ids up to %d were used", r.TxnID(), used)
	}
	if _, err := h.commit(r, map[int64]string{1: "last"}); err != nil {
		t.Fatal(err)
	}
	h.checkVersions(h.db, "ids", "after the restart")
}

// TestOpenTakesLargestIDEverUsed: Open of a store whose id high-water mark
// is below a committed version (as a lost or stale write of the mark
// leaves it; written here in the metadata layout of format 1) hands out
// ids above every id used, committed ones included, so no run writes its
// cells at a committed version's timestamp.
func TestOpenTakesLargestIDEverUsed(t *testing.T) {
	ctx := t.Context()
	st := newTestStore(t)
	be := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	cfg, _ := json.Marshal(datasetConfig{CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Partitions: 1, Key: []string{"id"}})
	info, _ := json.Marshal(VersionInfo{Dataset: "h", Version: 10, CommittedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Schema: testSchema})
	b := &store.Batch{Table: "meta", Sync: true}
	b.Put([]byte("t\x00hwm"), []byte("v"), 0, be(3))
	b.Put([]byte("s\x00ds\x00h"), []byte("cfg"), 0, cfg)
	b.Put([]byte("s\x00ds\x00h"), []byte("cur"), 0, be(10))
	b.Put(append([]byte("s\x00ver\x00h\x00"), be(10)...), []byte("info"), 0, info)
	if err := st.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t, st, Options{})
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "h", Guard: Guard{AllowEmpty: true}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	if r.TxnID() <= 10 {
		t.Fatalf("first transaction id %d, but version 10 is committed", r.TxnID())
	}
	r.Abort(ctx, "test")
}

// TestFaultPausedWriterFenced: a writer that pauses in the middle of its
// commit, past its writer lease, while another process takes over the
// dataset, cannot commit: its commit is refused, or it stands whole.
func TestFaultPausedWriterFenced(t *testing.T) {
	h := newFaultHarness(t, 11)
	ds := "fence"
	h.opts = withSlotLease(h.opts, 30*time.Second)
	h.crash()
	h.run(ds, srcA)
	a := h.db
	r, err := h.begin(a, ds, srcB, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := false
	h.fs.SetBefore(func(c storetest.Call) {
		if done || !c.Op.IsWrite() || !isDatasetRow(c, ds) {
			return
		}
		done = true
		// A pauses here, past its lease; B takes the dataset over.
		h.clock = h.clock.Add(2 * time.Minute)
		b := h.open(h.opts)
		if _, err := b.GC(h.ctx, ds, false); err != nil {
			t.Errorf("GC of the second writer: %v", err)
		}
	})
	_, cerr := h.commit(r, srcB)
	h.fs.SetBefore(nil)
	h.clock = h.clock.Add(2 * time.Minute) // past B's lease too
	c := h.open(h.opts)
	info, err := c.Dataset(h.ctx, ds)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(cerr, ErrSlotLost) {
		t.Fatalf("paused writer's Commit after another took the dataset: %v, want ErrSlotLost", cerr)
	}
	if info.Current == r.TxnID() {
		t.Fatalf("paused writer's Commit failed (%v), yet it is current", cerr)
	}
	h.checkVersions(c, ds, "after the paused writer's commit")
}

var _ = slices.Equal[[]int]

// TestRowWriteFailuresWordedTruly: when every metadata write fails while
// reads answer (a gateway that serves reads of a broken region server's
// neighbours, or the first calls on new connections), writeRow gives up
// saying its writes failed and the store's error, as an unknown outcome
// (the last write may still land), and never blames other processes, of
// which there are none.
func TestRowWriteFailuresWordedTruly(t *testing.T) {
	h := newFaultHarness(t, 1)
	v := h.run("d", srcA)
	h.decide(func(c storetest.Call) storetest.Fault {
		if c.Op == storetest.OpCheckAndMutate {
			return storetest.Fail
		}
		return storetest.NoFault
	})
	err := h.db.Tag(h.ctx, "d", "x", v.Version)
	if err == nil || hasText(err, "other process") || !hasText(err, "failed writes") || !hasText(err, "backend unavailable") || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("tag on a store whose writes fail: %v", err)
	}
	t.Log(err)
}

// TestSlotLostText: a lost slot that nobody holds is said so, not as the
// slot of an empty name.
func TestSlotLostText(t *testing.T) {
	h := newFaultHarness(t, 1)
	err := h.db.holdsSlot(&rowState{Slot: writerSlot{Epoch: 5}}, 5)
	if !errors.Is(err, ErrSlotLost) || hasText(err, "'s") || !hasText(err, "free") {
		t.Fatalf("free slot: %v", err)
	}
	err = h.db.holdsSlot(&rowState{Slot: writerSlot{Owner: "w2", Epoch: 6}}, 5)
	if !errors.Is(err, ErrSlotLost) || !hasText(err, "writer w2's at epoch 6") {
		t.Fatalf("slot of another writer: %v", err)
	}
}

// TestFaultLateRowWriteFenced: a tag, a GC expiry and a configuration
// change whose write of the dataset's row times out at the client and
// whose row cannot be read back report ErrOutcomeUnknown; once the keeper
// has settled the row (learnPending, with the store answering again), the
// state it shows is final: the late write, landing afterwards, changes
// nothing, in this process and after a restart.
func TestFaultLateRowWriteFenced(t *testing.T) {
	for _, op := range []string{"tag", "gc", "config"} {
		t.Run(op, func(t *testing.T) {
			h := newFaultHarness(t, 9)
			h.opts.resolveWait = 20 * time.Millisecond
			h.db.Close()
			h.db = h.open(h.opts)
			ds := "d"
			v1 := h.run(ds, srcA)
			h.clock = h.clock.Add(2 * time.Hour)
			h.run(ds, srcB)
			h.clock = h.clock.Add(time.Minute)
			if op == "gc" {
				if err := h.db.SetConfig(h.ctx, DatasetConfig{Name: ds, Retention: Retention{TTL: time.Hour, MinVersions: 1}}); err != nil {
					t.Fatal(err)
				}
			}
			// The row's write lands late; every read of the row fails
			// meanwhile, so its outcome cannot be learned.
			late := false
			h.decide(func(c storetest.Call) storetest.Fault {
				if !isDatasetRow(c, ds) {
					return storetest.NoFault
				}
				if c.Op == storetest.OpCheckAndMutate && !late {
					late = true
					return storetest.Late
				}
				if !c.Op.IsWrite() {
					return storetest.Fail
				}
				return storetest.NoFault
			})
			var err error
			switch op {
			case "tag":
				err = h.db.Tag(h.ctx, ds, "t", v1.Version)
			case "gc":
				_, err = h.db.GC(h.ctx, ds, false)
			case "config":
				err = h.db.SetConfig(h.ctx, DatasetConfig{Name: ds, Retention: Retention{TTL: 5 * time.Hour, MinVersions: 3}})
			}
			if !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("%s with a late write and no reads: %v, want ErrOutcomeUnknown", op, err)
			}
			h.decide(nil)
			settle(t, h.db) // the keeper's work
			state := func(db *DB) string {
				info, err := db.Dataset(h.ctx, ds)
				if err != nil {
					t.Fatal(err)
				}
				vs, err := db.Versions(h.ctx, ds)
				if err != nil {
					t.Fatal(err)
				}
				var ids []int64
				for _, v := range vs {
					ids = append(ids, v.Version)
				}
				_, _, terr := h.read(db, ds, At{Tag: "t"})
				return fmt.Sprintf("versions %v, retention %+v, tag t found %v", ids, info.Retention, terr == nil)
			}
			settled := state(h.db)
			if n := h.fs.LandLate(h.ctx); n != 1 {
				t.Fatalf("%d late writes sent, want 1", n)
			}
			if got := state(h.db); got != settled {
				t.Fatalf("%s: the row showed %s once settled, and %s after the late write came", op, settled, got)
			}
			h.crash()
			if got := state(h.db); got != settled {
				t.Fatalf("%s: the row showed %s once settled, and %s after the late write and a restart", op, settled, got)
			}
			t.Log(settled)
		})
	}
}

// TestFaultRowWriteCanceledAfterLateWrite: a tag whose first write of
// the row times out at the client (it may land later, store.S9), the row
// read back unchanged, and whose caller goes away before the next attempt
// fails with the caller's error. The first write may still land, so the
// tag's outcome is unknown (ErrOutcomeUnknown), and once the keeper has
// settled the row the late write, landing, changes nothing.
func TestFaultRowWriteCanceledAfterLateWrite(t *testing.T) {
	h := newFaultHarness(t, 11)
	ds := "d"
	v1 := h.run(ds, srcA)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	late := false
	h.decide(func(c storetest.Call) storetest.Fault {
		if isDatasetRow(c, ds) && c.Op == storetest.OpCheckAndMutate && !late {
			late = true
			return storetest.Late
		}
		return storetest.NoFault
	})
	// The caller goes away as the row is read back after the late write.
	h.fs.SetBefore(func(c storetest.Call) {
		if late && isDatasetRow(c, ds) && !c.Op.IsWrite() {
			cancel()
		}
	})
	err := h.db.Tag(ctx, ds, "t", v1.Version)
	h.fs.SetBefore(nil)
	h.decide(nil)
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("tag whose late write may land, its caller gone: %v, want ErrOutcomeUnknown", err)
	}
	settle(t, h.db) // the keeper's work
	_, _, terr := h.read(h.db, ds, At{Tag: "t"})
	settled := terr == nil
	if n := h.fs.LandLate(h.ctx); n != 1 {
		t.Fatalf("%d late writes sent, want 1", n)
	}
	h.crash() // read what the store holds
	if _, _, terr := h.read(h.db, ds, At{Tag: "t"}); (terr == nil) != settled {
		t.Fatalf("tag found %v once settled, and %v after the late write landed", settled, terr == nil)
	}
}

// TestFaultFenceStaleReadKeepsNewerUnsettled: the keeper's read of the
// row, made to fence one unknown write, returns a state that a write of
// this DB then moves past, and another write of this DB, checked against
// that newer state, fails and may land late, before the keeper settles
// what it read. The keeper must not take its older read for proof that
// the newer write can no longer land: once it has run, the late write,
// landing, changes nothing.
func TestFaultFenceStaleReadKeepsNewerUnsettled(t *testing.T) {
	h := newFaultHarness(t, 12)
	h.opts.keepEvery = time.Hour // the test plays the keeper
	h.db.Close()
	h.db = h.open(h.opts)
	ds := "d"
	v1 := h.run(ds, srcA)
	// Every write of the row late, reads answering: a tag gives up, of
	// unknown outcome.
	lateRow := func(c storetest.Call) storetest.Fault {
		if isDatasetRow(c, ds) && c.Op == storetest.OpCheckAndMutate {
			return storetest.Late
		}
		return storetest.NoFault
	}
	// The keeper has a write to fence; its late writes never land.
	h.decide(lateRow)
	if err := h.db.Tag(h.ctx, ds, "a", v1.Version); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("first tag: %v, want ErrOutcomeUnknown", err)
	}
	h.decide(nil)
	h.fs.DropLate()
	// Another process commits a version this DB has not read.
	other := h.open(h.opts)
	r, err := h.begin(other, ds, srcB, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.commit(r, srcB); err != nil {
		t.Fatal(err)
	}
	// The keeper reads the row and stops reading the new version's body.
	var ds1 *dataset
	for _, d := range h.db.allDatasets() {
		if d.name == ds {
			ds1 = d
		}
	}
	blocked, release := make(chan struct{}), make(chan struct{})
	armed := true
	h.fs.SetBefore(func(c storetest.Call) {
		if armed && c.Op == storetest.OpGet && c.Table == "meta" && !isDatasetRow(c, ds) {
			armed = false
			close(blocked)
			<-release
		}
	})
	errc := make(chan error, 1)
	go func() { errc <- h.db.learnPending(h.ctx, ds1) }()
	<-blocked
	// Meanwhile a tag of this DB lands, and another fails, its write late.
	if err := h.db.Tag(h.ctx, ds, "x", v1.Version); err != nil {
		t.Fatal(err)
	}
	h.decide(lateRow)
	if err := h.db.Tag(h.ctx, ds, "y", v1.Version); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("tag y: %v, want ErrOutcomeUnknown", err)
	}
	h.decide(nil)
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	h.fs.SetBefore(nil)
	settle(t, h.db) // the keeper's next round
	_, _, terr := h.read(h.db, ds, At{Tag: "y"})
	settled := terr == nil
	if n := h.fs.LandLate(h.ctx); n == 0 {
		t.Fatal("no late write sent")
	}
	h.crash()
	if _, _, terr := h.read(h.db, ds, At{Tag: "y"}); (terr == nil) != settled {
		t.Fatalf("tag y found %v once the keeper had run, and %v after its late write landed", settled, terr == nil)
	}
}
