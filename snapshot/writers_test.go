package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/hbase/hbasetest"
	"github.com/snapstore/snapstore/store/pebble"
)

// TestTwoWriters runs two writer DBs on one store, as two processes (W1,
// W3, txn.I1, txn.I2): on the real HBase (two Stores on one table, as two
// processes; skipped without the test HBase), and on Pebble (one Store,
// two DBs). Their runs of different datasets, at once, get distinct ids;
// a dataset has one slot holder, and moving between the writers its ids
// still increase; a writer whose slot the other took after it expired
// cannot commit.
func TestTwoWriters(t *testing.T) {
	t.Run("hbase", func(t *testing.T) {
		a := hbasetest.Open(t)
		b := hbasetest.OpenOptions(t, a.Options())
		testTwoWriters(t, a, b)
	})
	t.Run("pebble", func(t *testing.T) {
		st, err := pebble.Open(t.TempDir(), pebble.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		testTwoWriters(t, st, st)
	})
}

// TestOpen_SlotRenew: Options.SlotRenew defaults to a third of the lease
// and must be under half of it.
func TestOpen_SlotRenew(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, o := range []Options{{SlotLease: 30 * time.Second, SlotRenew: 15 * time.Second}, {SlotRenew: -time.Second}} {
		if db, err := Open(context.Background(), st, o); !errors.Is(err, ErrInvalidArgument) {
			if db != nil {
				db.Close()
			}
			t.Errorf("Open with lease %s, renewal %s: %v, want ErrInvalidArgument", o.SlotLease, o.SlotRenew, err)
		}
	}
	db := openTestDB(t, st, Options{SlotLease: 30 * time.Second})
	if db.opts.SlotRenew != 10*time.Second || db.opts.keepEvery != time.Second {
		t.Errorf("renewal %s, keeper every %s; want 10s and 1s", db.opts.SlotRenew, db.opts.keepEvery)
	}
}

func testTwoWriters(t *testing.T, stA, stB store.Store) {
	ctx := context.Background()
	var nanos atomic.Int64
	nanos.Store(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, nanos.Load()) }
	advance := func(d time.Duration) { nanos.Add(int64(d)) }
	opts := Options{now: clock, SlotLease: 30 * time.Second, idBlock: 5}
	a := openTestDB(t, stA, opts)
	b := openTestDB(t, stB, opts)
	one := func(db *DB, ds, name string) (*Run, error) {
		r, err := db.BeginRun(ctx, DatasetConfig{Name: ds, Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
		if err != nil {
			return nil, err
		}
		return r, r.Put(ctx, []Value{iv(1), sv(name)})
	}

	// Runs of different datasets, at once: distinct ids.
	var mu sync.Mutex
	var ids []int64
	var wg sync.WaitGroup
	for w, db := range []*DB{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 12 {
				r, err := one(db, fmt.Sprint("own", w), fmt.Sprint(i))
				if err != nil {
					t.Error(err)
					return
				}
				vi, err := r.Commit(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids = append(ids, vi.Version)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(ids)
	if len(slices.Compact(slices.Clone(ids))) != len(ids) || len(ids) != 24 {
		t.Fatalf("ids of the two writers %v: one handed out twice", ids)
	}

	// One slot holder per dataset.
	r, err := one(a, "shared", "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := one(b, "shared", "b"); !errors.Is(err, ErrRunInProgress) {
		t.Fatalf("a second writer's run of a dataset the first is running: %v, want ErrRunInProgress", err)
	}
	for name, db := range map[string]*DB{"a, running it": a, "b": b} {
		if err := db.WriterBusy(ctx, "shared"); !errors.Is(err, ErrRunInProgress) {
			t.Fatalf("WriterBusy on %s while a runs the dataset: %v, want ErrRunInProgress", name, err)
		}
	}
	if _, err := b.GC(ctx, "shared", false); !errors.Is(err, ErrRunInProgress) {
		t.Fatalf("a second writer's GC of a dataset the first is running: %v, want ErrRunInProgress", err)
	}
	va, err := r.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriterBusy(ctx, "shared"); err != nil {
		t.Fatalf("WriterBusy on b once a committed: %v", err)
	}
	// The dataset moves to b, whose block may lie below a's id: its id is
	// still above every one the dataset used (txn.I2).
	r, err = one(b, "shared", "b")
	if err != nil {
		t.Fatal(err)
	}
	vb, err := r.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if vb.Version <= va.Version {
		t.Fatalf("the dataset's run on b got id %d after a's %d", vb.Version, va.Version)
	}

	// Fencing: a takes the dataset, and pauses past its lease without
	// renewing; b takes it over (a's run becomes invalid); a cannot commit.
	a.stopKeeper()
	r, err = one(a, "shared", "paused")
	if err != nil {
		t.Fatal(err)
	}
	advance(time.Minute)
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GC(ctx, "shared", false); err != nil {
		t.Fatalf("GC of the second writer after the first's slot expired: %v", err)
	}
	if _, err := r.Commit(ctx); !errors.Is(err, ErrSlotLost) {
		t.Fatalf("commit of a writer whose slot was taken: %v, want ErrSlotLost", err)
	}
	for _, db := range []*DB{a, b} {
		if err := db.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if name, v := readNameOf(t, db, "shared", 1); name != "b" || v != vb.Version {
			t.Fatalf("after the fenced commit: %q at %d, want b at %d", name, v, vb.Version)
		}
	}
}

// readNameOf reads the name of row id at the current version of ds.
func readNameOf(t *testing.T, db *DB, ds string, id int64) (string, int64) {
	t.Helper()
	r, err := db.Reader(context.Background(), ds, At{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	row, err := r.Get(context.Background(), []Value{iv(id)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(row.Values[1].Bytes), r.Version().Version
}

// TestCleanRestartKeepsIDs checks txn.I1's give-back through a DB: after
// a clean Close, the next DB's first run takes the id after the last one
// used, not the next block; after a crash, the next block.
func TestCleanRestartKeepsIDs(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	db := openTestDB(t, st, Options{})
	last := runRows(t, db, [][]Value{{iv(1), sv("a")}}).Version
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, st, Options{})
	if v := runRows(t, db, [][]Value{{iv(1), sv("b")}}).Version; v != last+1 {
		t.Fatalf("after a clean close: version %d, want %d", v, last+1)
	} else {
		last = v
	}
	db.crash() // a crash: the rest of the block is not given back
	db = openTestDB(t, st, Options{deadOwners: map[string]bool{db.owner: true}})
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "t"}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Abort(ctx, "test")
	if r.TxnID() <= last+1 {
		t.Fatalf("after a crash: id %d, want one of the next block (above %d)", r.TxnID(), last+1)
	}
}
