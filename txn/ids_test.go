package txn

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/pebble"
	"github.com/snapstore/snapstore/store/storetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openTestStore is the one place these tests create a store.
func openTestStore(t *testing.T, dir string) store.Store {
	t.Helper()
	st, err := pebble.Open(dir, pebble.Options{MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func next(t *testing.T, m *IDs, above int64) int64 {
	t.Helper()
	id, err := m.Next(context.Background(), above)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestIDsSurviveRestart checks I1: ids increase in one IDs and are never
// handed out again across restarts, clean (the rest of the block given
// back, so the next id follows the last) or not (the rest skipped).
func TestIDsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var last int64
	clean := false
	for restart := range 6 {
		st := openTestStore(t, dir)
		m := OpenIDs(st, IDOptions{BlockSize: 4})
		for i := range 5 {
			id := next(t, m, 0)
			if id <= last {
				t.Fatalf("restart %d: id %d after %d", restart, id, last)
			}
			if i == 0 && clean && id != last+1 {
				t.Fatalf("restart %d after a clean close: first id %d, want %d", restart, id, last+1)
			}
			last = id
		}
		clean = restart%2 == 1
		if clean {
			if err := m.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
	}
}

// TestGiveBack checks I1's give-back: a clean Close lets the next IDs
// continue where it stopped; not when another took a block since, and
// never twice.
func TestGiveBack(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	a := OpenIDs(st, IDOptions{BlockSize: 10})
	if id := next(t, a, 0); id != 1 {
		t.Fatalf("first id %d", id)
	}
	next(t, a, 0)
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b, c := OpenIDs(st, IDOptions{BlockSize: 10}), OpenIDs(st, IDOptions{BlockSize: 10})
	if id := next(t, b, 0); id != 3 {
		t.Fatalf("after a clean close: id %d, want 3", id)
	}
	if id := next(t, c, 0); id != 11 {
		t.Fatalf("a second IDs got the block given back too: id %d, want 11", id)
	}
	// b gives back 4..10, but c took a block since: the gift does not
	// hold, and the next IDs takes a new block.
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	d := OpenIDs(st, IDOptions{BlockSize: 10})
	if id := next(t, d, 0); id != 21 {
		t.Fatalf("after another took a block: id %d, want 21", id)
	}
}

// TestNextAbove checks I2: Next returns an id above the owner's largest,
// leaving its block when it lies below.
func TestNextAbove(t *testing.T) {
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	a, b := OpenIDs(st, IDOptions{BlockSize: 100}), OpenIDs(st, IDOptions{BlockSize: 100})
	ida := next(t, a, 0) // a: 1..100
	idb := next(t, b, 0) // b: 101..200
	if ida != 1 || idb != 101 {
		t.Fatalf("ids %d %d", ida, idb)
	}
	// The owner's last id came from b: a leaves the rest of its block.
	if id := next(t, a, idb); id != 201 {
		t.Fatalf("above %d: id %d, want 201", idb, id)
	}
	if id := next(t, b, 150); id != 151 {
		t.Fatalf("above 150 within the block: id %d, want 151", id)
	}
	// A counter below the owner's ids (written by hand) is moved past them.
	if id := next(t, b, 5000); id != 5001 {
		t.Fatalf("above 5000: id %d", id)
	}
	if id := next(t, a, 0); id != 202 {
		t.Fatalf("a's own block after the counter moved: id %d, want 202", id)
	}
	if id := next(t, OpenIDs(st, IDOptions{BlockSize: 100}), 0); id <= 5001 {
		t.Fatalf("a new block after the counter moved: id %d", id)
	}
}

// TestIDsConcurrent checks I1 with several IDs (as several processes) on
// one store, taking ids at once: none is handed out twice.
func TestIDsConcurrent(t *testing.T) {
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	const procs, each = 4, 300
	var mu sync.Mutex
	var all []int64
	var wg sync.WaitGroup
	for range procs {
		m := OpenIDs(st, IDOptions{BlockSize: 7})
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var last int64
				for range each / 2 {
					id, err := m.Next(context.Background(), 0)
					if err != nil {
						t.Error(err)
						return
					}
					if id <= last {
						t.Errorf("id %d after %d", id, last)
					}
					mu.Lock()
					all = append(all, id)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	slices.Sort(all)
	if len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Fatal("an id was handed out twice")
	}
}

// TestIDsAfterFailedIncrement: an Increment that failed, whether or not it
// was applied, hands out nothing; the next Next takes another block.
func TestIDsAfterFailedIncrement(t *testing.T) {
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	for _, f := range []storetest.Fault{storetest.Fail, storetest.Ambiguous, storetest.Late} {
		fs := storetest.NewFaultStore(st, storetest.Faults{})
		m := OpenIDs(fs, IDOptions{BlockSize: 5})
		fs.SetDecide(func(c storetest.Call) storetest.Fault {
			if c.Op == storetest.OpIncrement {
				return f
			}
			return storetest.NoFault
		})
		if _, err := m.Next(context.Background(), 0); err == nil {
			t.Fatalf("%s: Next succeeded", f)
		}
		fs.SetDecide(nil)
		id := next(t, m, 0)
		fs.LandLate(context.Background())
		other := next(t, OpenIDs(fs, IDOptions{BlockSize: 5}), 0)
		if other <= id {
			t.Fatalf("%s: another IDs got %d after %d", f, other, id)
		}
	}
}

func TestReadOnlyIDs(t *testing.T) {
	st := openTestStore(t, t.TempDir())
	defer st.Close()
	m := OpenIDs(st, IDOptions{ReadOnly: true})
	if _, err := m.Next(context.Background(), 0); err != ErrReadOnly {
		t.Fatalf("Next of read-only ids: %v", err)
	}
}
