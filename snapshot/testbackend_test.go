package snapshot

import (
	"context"
	"fmt"
	"hash/fnv"
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

// openHBaseTestStore maps dir to an HBase test table named after it; the
// process that creates the table (marked by a file in dir) drops it when
// its test ends.
func openHBaseTestStore(t testing.TB, dir string) store.Store {
	t.Helper()
	h := fnv.New64a()
	h.Write([]byte(dir))
	opts := hbasetest.Options(t)
	opts.Table = fmt.Sprintf("snap_%x", h.Sum64())
	marker := filepath.Join(dir, "hbase-table")
	if _, err := os.Stat(marker); os.IsNotExist(err) {
		if err := os.WriteFile(marker, []byte(opts.Table), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := hbase.DropTable(context.Background(), opts); err != nil {
				t.Logf("dropping %s: %v", opts.Table, err)
			}
		})
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
