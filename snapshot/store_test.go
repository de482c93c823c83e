package snapshot

import (
	"context"
	"testing"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/pebble"
)

// newTestStore is the one place the snapshot tests create a store; point
// it at another backend to run the whole semantics suite there.
func newTestStore(t testing.TB) store.Store {
	t.Helper()
	return openTestStore(t, t.TempDir())
}

// openTestStore opens (or reopens) the test backend in dir, closed at the
// end of the test.
func openTestStore(t testing.TB, dir string) store.Store {
	t.Helper()
	st, err := pebble.Open(dir, pebble.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func openTestDB(t testing.TB, st store.Store, opts Options) *DB {
	t.Helper()
	db, err := Open(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
