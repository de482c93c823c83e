package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/hbase"
	"github.com/snapstore/snapstore/store/hbase/hbasetest"
	"github.com/snapstore/snapstore/store/pebble"
)

// envBackend selects the store the snapshot tests run on: unset or
// "pebble" (default), or "hbase" for the test HBase of
// scripts/hbase-standalone.sh (SNAPSTORE_TEST_HBASE_THRIFT must be set):
//
//	SNAPSTORE_SNAPSHOT_BACKEND=hbase go test ./snapshot -model.steps=200
const envBackend = "SNAPSTORE_SNAPSHOT_BACKEND"

// newTestStore is the one place the snapshot tests create a store.
func newTestStore(t testing.TB) store.Store {
	t.Helper()
	return openTestStore(t, t.TempDir())
}

// openTestStore opens (or reopens, also from a child process) the test
// backend whose data belongs to dir, closed at the end of the test.
func openTestStore(t testing.TB, dir string) store.Store {
	t.Helper()
	if os.Getenv(envBackend) == "hbase" {
		return openHBaseTestStore(t, dir)
	}
	st, err := pebble.Open(dir, pebble.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openHBaseTestStore opens the HBase test table of dir: the one a file in
// dir names (made by this process or its parent test), or else a fresh
// one of the table pool (hbasetest.Take), named in that file and dropped
// when the test that took it ends.
func openHBaseTestStore(t testing.TB, dir string) store.Store {
	t.Helper()
	marker := filepath.Join(dir, "hbase-table")
	var opts hbase.Options
	switch name, err := os.ReadFile(marker); {
	case err == nil:
		opts = hbasetest.Options(t)
		opts.Table = string(name)
	case os.IsNotExist(err):
		opts = hbasetest.Take(t)
		if err := os.WriteFile(marker, []byte(opts.Table), 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal(err)
	}
	return hbasetest.OpenOptions(t, opts)
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

// openSecondStore opens the store of dir once more, as a second process
// would: a second Store on the same HBase table, or, since Pebble locks its
// directory, the same Pebble store.
func openSecondStore(t *testing.T, dir string, first store.Store) store.Store {
	t.Helper()
	if os.Getenv(envBackend) == "hbase" {
		return openTestStore(t, dir)
	}
	return first
}
