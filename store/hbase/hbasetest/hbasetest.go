// Package hbasetest opens store/hbase stores on the test HBase for the
// tests of other packages (package snapshot's semantics suite, two-process
// tests), each on a fresh HBase table dropped when the test ends.
//
//	func newTestStore(t testing.TB) store.Store {
//		if _, ok := testenv.LookupHBaseThrift(); ok {
//			return hbasetest.Open(t)
//		}
//		...
//	}
//
// A suite of many short tests takes its tables with Take instead, from a
// pool that creates them ahead and drops them behind (pool.go), and calls
// Finish from its TestMain.
//
// The test HBase is the one scripts/hbase-standalone.sh starts; `make test`
// exports its gateway address (testenv.HBaseThrift).
package hbasetest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/store/hbase"
)

// Namespace is the HBase namespace of every test table.
const Namespace = "snapstore_test"

var (
	runID = time.Now().UnixNano() % 1e9
	seq   atomic.Int64
)

// Options returns the options of a fresh test table: the test gateway, the
// test namespace, a table name no other test or run uses, a 30 s call
// timeout and a logger that discards. It skips t when there is no test
// HBase (testenv.HBaseThrift).
func Options(t testing.TB) hbase.Options {
	return options(testenv.HBaseThrift(t))
}

// options are the Options of a fresh test table on the gateway at addr.
func options(addr string) hbase.Options {
	return hbase.Options{
		Addr:        addr,
		Namespace:   Namespace,
		Table:       fmt.Sprintf("t%d_%d_%d", runID, os.Getpid()%1000, seq.Add(1)),
		CallTimeout: 30 * time.Second,
		Logger:      slog.New(slog.DiscardHandler),
	}
}

// Open opens a store on a fresh test table (Options, changed by each
// adjust), closed and dropped when t ends. It skips t when there is no test
// HBase.
func Open(t testing.TB, adjust ...func(*hbase.Options)) *hbase.Store {
	t.Helper()
	opts := Options(t)
	for _, f := range adjust {
		f(&opts)
	}
	s := OpenOptions(t, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := hbase.DropTable(ctx, opts); err != nil {
			t.Logf("dropping test table %s:%s: %v", opts.Namespace, opts.Table, err)
		}
	})
	return s
}

// OpenOptions opens a store with opts and closes it when t ends (a second
// Close is harmless); it drops nothing. Use it to open a table again, as a
// second process or after a Close.
func OpenOptions(t testing.TB, opts hbase.Options) *hbase.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := hbase.Open(ctx, opts)
	if err != nil {
		t.Fatalf("opening HBase table %s:%s at %s: %v", opts.Namespace, opts.Table, opts.Addr, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
