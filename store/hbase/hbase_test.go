package hbase_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/hbase"
	"github.com/snapstore/snapstore/store/hbase/hbasetest"
	"github.com/snapstore/snapstore/store/storetest"
)

func openTest(t *testing.T) store.Store { return hbasetest.Open(t) }

// reopen opens the table of a closed store again.
func reopen(t *testing.T, closed store.Store) store.Store {
	return hbasetest.OpenOptions(t, closed.(*hbase.Store).Options())
}

func TestConformance(t *testing.T) {
	testenv.HBaseThrift(t)
	storetest.RunSuite(t, openTest, storetest.WithReopen(reopen))
}

// TestFaults checks storetest's FaultStore over HBase with three cells per
// write call, so that a partial Apply follows several of Apply's calls
// (store.ApplyPlanner).
func TestFaults(t *testing.T) {
	testenv.HBaseThrift(t)
	storetest.RunFaultSuite(t, func(t *testing.T) store.Store {
		return hbasetest.Open(t, func(o *hbase.Options) { o.MaxCellsPerCall = 3 })
	})
}

// TestConformanceSmallCalls runs the suite with two rows per scanner call
// and three cells per write call, so that scans span many gateway calls
// (store.S3 then rests on HBase's scanner read point, not on one reply) and
// batches span many writes.
func TestConformanceSmallCalls(t *testing.T) {
	testenv.HBaseThrift(t)
	if testing.Short() {
		t.Skip("-short: TestConformance covers the same behaviours")
	}
	open := func(t *testing.T) store.Store {
		return hbasetest.Open(t, func(o *hbase.Options) { o.ScanBatchRows, o.MaxCellsPerCall = 2, 3 })
	}
	storetest.RunSuite(t, open, storetest.WithSeed(2))
}

// TestTwoStoresOneTable: what one Store (one snapstore process) applies,
// another Store opened on the same HBase table reads, and a range the
// second deletes is gone for the first.
func TestTwoStoresOneTable(t *testing.T) {
	a := hbasetest.Open(t)
	b := hbasetest.OpenOptions(t, a.Options())
	ctx := t.Context()
	batch := &store.Batch{Table: "meta", Sync: true}
	batch.Put([]byte("dataset/films"), []byte("version"), 7, []byte("7"))
	batch.DeleteRow([]byte("dataset/gone"), 7)
	if err := a.Apply(ctx, batch); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, "meta", []byte("dataset/films"), store.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[0].Value) != "7" || got[0].Timestamp != 7 {
		t.Fatalf("second store reads %v, want the first store's version 7", got)
	}
	if err := b.DeleteRange(ctx, "meta", nil, nil); err != nil {
		t.Fatal(err)
	}
	it, err := a.Scan(ctx, "meta", store.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if it.Next() {
		t.Errorf("first store still sees %v after the second deleted the table", it.Cell())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenBadOptions(t *testing.T) {
	_, err := hbase.Open(t.Context(), hbase.Options{Namespace: "bad-ns", Table: ".x"})
	if !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("got %v, want store.ErrInvalidArgument", err)
	}
	for _, field := range []string{"Addr", "Namespace", "Table"} {
		if !contains(err.Error(), "option "+field) {
			t.Errorf("error %q does not name option %s", err, field)
		}
	}
}

func TestOpenUnreachable(t *testing.T) {
	// A port nothing listens on: 127.0.0.1:1 refuses at once.
	_, err := hbase.Open(t.Context(), hbase.Options{Addr: "127.0.0.1:1"})
	if !errors.Is(err, store.ErrUnavailable) || !contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("got %v, want store.ErrUnavailable naming the address", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// BenchmarkStore runs the shared store benchmarks on the test HBase, one
// fresh HBase table per sub-benchmark.
func BenchmarkStore(b *testing.B) {
	testenv.HBaseThrift(b)
	storetest.RunBenchmarks(b, func(b *testing.B) store.Store { return hbasetest.Open(b) })
}

// TestGatewayRestart checks hbasetest.Gateway, the outage tool of other
// packages: calls through a stopped gateway fail with store.ErrUnavailable
// and work again, on the same Store, once it is back.
func TestGatewayRestart(t *testing.T) {
	g := hbasetest.StartGateway(t)
	s := hbasetest.Open(t, func(o *hbase.Options) { o.Addr = g.Addr })
	ctx := t.Context()
	put := &store.Batch{Table: "t"}
	put.Put([]byte("r"), []byte("c"), 1, []byte("v"))
	if err := s.Apply(ctx, put); err != nil {
		t.Fatal(err)
	}
	g.Stop(t)
	if _, err := s.Get(ctx, "t", []byte("r"), store.ReadOptions{}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("get through a stopped gateway: got %v, want store.ErrUnavailable", err)
	}
	g.Start(t)
	got, err := s.Get(ctx, "t", []byte("r"), store.ReadOptions{})
	if err != nil || len(got) != 1 {
		t.Fatalf("get after the gateway restarted: %v, %v", got, err)
	}
}

func TestRowKeyTooLong(t *testing.T) {
	s := hbasetest.Open(t)
	b := &store.Batch{Table: "t"}
	b.Put([]byte("ok"), []byte("c"), 1, []byte("v"))
	b.Put(make([]byte, 32767), []byte("c"), 1, []byte("v"))
	if err := s.Apply(t.Context(), b); !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "mutation 1") {
		t.Fatalf("row key over HBase's limit: got %v, want store.ErrInvalidArgument naming mutation 1", err)
	}
	if got, err := s.Get(t.Context(), "t", []byte("ok"), store.ReadOptions{}); err != nil || got != nil {
		t.Fatalf("the rejected batch was applied in part: %v, %v", got, err)
	}
}
