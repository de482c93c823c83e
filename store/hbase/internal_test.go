package hbase

import (
	"context"
	"errors"
	"fmt"
	"github.com/snapstore/snapstore/internal/testenv"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The tests of this file need the package's internals (test hooks, raw
// Thrift calls), so they cannot use package hbasetest, which imports this
// one; these helpers do the same.

func testAddr(t testing.TB) string {
	t.Helper()
	return testenv.HBaseThrift(t)
}

var tableSeq atomic.Int64

// testOptions returns options for a fresh table in the test namespace.
func testOptions(t testing.TB) Options {
	return Options{
		Addr:        testAddr(t),
		Namespace:   "snapstore_test",
		Table:       fmt.Sprintf("i%d_%d", time.Now().UnixNano()%1e9, tableSeq.Add(1)),
		CallTimeout: 30 * time.Second,
		Logger:      slog.New(slog.DiscardHandler),
	}
}

// openTest opens opts and drops its table when t ends.
func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), opts)
	if err != nil {
		t.Fatalf("opening %s:%s at %s: %v", opts.Namespace, opts.Table, opts.Addr, err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		dropTest(t, opts)
	})
	return s
}

func dropTest(t testing.TB, opts Options) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts.Addr = testAddr(t)
	if err := DropTable(ctx, opts); err != nil {
		t.Logf("dropping test table %s:%s: %v", opts.Namespace, opts.Table, err)
	}
}

// TestOpenRefusesIncompatibleTable creates a table whose family would lose
// versions (VERSIONS 1, a TTL, no NEW_VERSION_BEHAVIOR) and checks that
// Open refuses it, naming the settings.
func TestOpenRefusesIncompatibleTable(t *testing.T) {
	opts := testOptions(t)
	s := openTest(t, opts) // creates the namespace; its table is compatible
	bad := opts
	bad.Table += "_bad"
	f := familyDescriptor()
	f.maxVersions, f.timeToLive, f.attributes = 1, 3600, nil
	desc := tTableDescriptor{name: tTableName{ns: bad.Namespace, qualifier: bad.Table}, families: []tColumnFamilyDescriptor{f}}
	if err := s.call(t.Context(), "creating a bad table", "createTable", func(e *enc) { e.structure(1, desc.write) }, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropTest(t, bad) })
	_, err := Open(t.Context(), bad)
	if !errors.Is(err, ErrIncompatibleTable) {
		t.Fatalf("open of a table with VERSIONS 1: got %v, want ErrIncompatibleTable", err)
	}
	for _, want := range []string{"VERSIONS is 1", "TTL is 3600 s", "NEW_VERSION_BEHAVIOR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
