package pebble

import (
	"flag"
	"sync"
	"testing"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/storetest"
)

// dirs remembers the directory of each test store, for the reopen hook.
var dirs sync.Map // *Store -> string

func openTest(t *testing.T) store.Store {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	dirs.Store(s, dir)
	return s
}

func reopenTest(t *testing.T, closed store.Store) store.Store {
	t.Helper()
	dir, _ := dirs.Load(closed.(*Store))
	s, err := Open(dir.(string), Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	dirs.Store(s, dir) // to be reopened again
	return s
}

var seed = flag.Uint64("seed", 1, "seed of the conformance suite's randomized subtest")

func TestConformance(t *testing.T) {
	storetest.RunSuite(t, openTest, storetest.WithReopen(reopenTest), storetest.WithSeed(*seed))
}

// TestFaults checks storetest's FaultStore over Pebble, whose Apply is
// atomic whole: partial faults there follow whole rows (store.S1).
func TestFaults(t *testing.T) { storetest.RunFaultSuite(t, openTest) }

// TestConformanceThroughFaultStore: a FaultStore that injects nothing
// keeps the whole contract.
func TestConformanceThroughFaultStore(t *testing.T) {
	storetest.RunSuite(t, func(t *testing.T) store.Store { return storetest.NewFaultStore(openTest(t), storetest.Faults{}) })
}
