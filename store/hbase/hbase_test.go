package hbase

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/storetest"
)

// testAddr returns the Thrift2 gateway of the test HBase, or skips.
func testAddr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv("SNAPSTORE_TEST_HBASE_THRIFT")
	if addr == "" {
		t.Skip("SNAPSTORE_TEST_HBASE_THRIFT is not set, so there is no HBase to test against: " +
			"run scripts/hbase-standalone.sh start, then eval \"$(scripts/hbase-standalone.sh env)\" (make test does both)")
	}
	return addr
}

const testNamespace = "snapstore_test"

var (
	runID    = time.Now().UnixNano() % 1e9
	tableSeq atomic.Int64
)

// newTestTable returns a table name no other test (or run) uses.
func newTestTable() string { return fmt.Sprintf("t%d_%d", runID, tableSeq.Add(1)) }

func openTable(t testing.TB, table string) *Store {
	t.Helper()
	return openTableWith(t, Options{Table: table})
}

// openTableWith opens the test HBase with opts, whose Addr, Namespace and
// CallTimeout it sets.
func openTableWith(t testing.TB, opts Options) *Store {
	t.Helper()
	table := opts.Table
	if opts.Addr == "" {
		opts.Addr = testAddr(t)
	}
	opts.Namespace, opts.CallTimeout = testNamespace, 30*time.Second
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Open(ctx, opts)
	if err != nil {
		t.Fatalf("opening HBase table %s:%s: %v", testNamespace, table, err)
	}
	return s
}

func openTest(t *testing.T) store.Store {
	table := newTestTable()
	s := openTable(t, table)
	t.Cleanup(func() { dropTable(t, table) })
	return s
}

// dropTable disables and deletes a test table.
func dropTable(t testing.TB, table string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &Store{opts: Options{CallTimeout: time.Minute}}
	s.metrics = newMetrics(nil, func() (int, int) { return 0, 0 })
	s.pool = newPool(testAddr(t), 1, 5*time.Second, s.metrics)
	defer s.pool.close()
	name := tTableName{ns: testNamespace, qualifier: table}
	for _, m := range []string{"disableTable", "deleteTable"} {
		if err := s.call(ctx, m+" "+name.String(), m, func(e *enc) { e.structure(1, name.write) }, nil); err != nil {
			t.Logf("dropping test table %s: %v", name, err)
			return
		}
	}
}

func TestConformance(t *testing.T) {
	testAddr(t)
	storetest.RunSuite(t, openTest, storetest.WithReopen(func(t *testing.T, closed store.Store) store.Store {
		return openTable(t, closed.(*Store).opts.Table)
	}))
}

// TestConformanceSmallCalls runs the suite with two rows per scanner call
// and three cells per write call, so that scans span many gateway calls
// (S3 then rests on HBase's scanner read point, not on one reply) and
// batches span many writes.
func TestConformanceSmallCalls(t *testing.T) {
	testAddr(t)
	if testing.Short() {
		t.Skip("-short: the default-sized run covers the same behaviours")
	}
	open := func(t *testing.T) store.Store {
		table := newTestTable()
		s := openTableWith(t, Options{Table: table, ScanBatchRows: 2, MaxCellsPerCall: 3})
		t.Cleanup(func() { dropTable(t, table) })
		return s
	}
	storetest.RunSuite(t, open, storetest.WithSeed(2))
}

// BenchmarkStore runs the shared store benchmarks on the test HBase, one
// fresh HBase table per sub-benchmark.
func BenchmarkStore(b *testing.B) {
	testAddr(b)
	storetest.RunBenchmarks(b, func(b *testing.B) store.Store {
		table := newTestTable()
		s := openTable(b, table)
		b.Cleanup(func() { dropTable(b, table) })
		return s
	})
}
