package snapshot

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/hbase"
	"github.com/snapstore/snapstore/store/hbase/hbasetest"
)

// TestHBaseStoppedMidRun stops the Thrift2 gateway after the first data
// batch of run 2: the run fails with store.ErrUnavailable, and after the
// gateway returns and the process restarts, version 1 is current, nothing of
// run 2 is visible, and GC reclaims its cells. It needs the test HBase of
// scripts/hbase-standalone.sh whatever SNAPSTORE_SNAPSHOT_BACKEND says, and
// skips without it.
func TestHBaseStoppedMidRun(t *testing.T) {
	g := hbasetest.StartGateway(t)
	st := hbasetest.Open(t, func(o *hbase.Options) { o.Addr = g.Addr })
	ctx := context.Background()
	stopped := false
	opts := Options{batchSize: 50}
	opts.hook = func(point string, n int64) {
		if point == "flush" && !stopped && n > 0 {
			stopped = true
			g.Stop(t)
		}
	}
	db := openTestDB(t, st, Options{})
	var rows1 [][]Value
	for i := range 300 {
		rows1 = append(rows1, []Value{iv(int64(i)), sv("v1")})
	}
	v1 := runRows(t, db, rows1)
	db.Close()
	db = openTestDB(t, st, opts)
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	var runErr error
	for i := range 300 {
		if runErr = r.Put(ctx, []Value{iv(int64(i)), sv(fmt.Sprint("v2-", i))}); runErr != nil {
			break
		}
	}
	if runErr == nil {
		_, runErr = r.Commit(ctx)
	}
	if !stopped || !errors.Is(runErr, store.ErrUnavailable) {
		t.Fatalf("run with the gateway stopped (stopped %v): got %v, want store.ErrUnavailable", stopped, runErr)
	}
	t.Logf("run 2: %v", runErr)
	g.Start(t)
	db.Close()
	// A new process on the same HBase.
	st2 := hbasetest.OpenOptions(t, st.Options())
	// No grace before pruning: the calls the stopped gateway held died
	// with it, so nothing of run 2 can land late (the grace of G6 is for
	// a gateway that keeps retrying).
	db2 := openTestDB(t, st2, Options{pruneGrace: -1})
	info, err := db2.Dataset(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if info.Current != v1.Version {
		t.Fatalf("current version %d after the failed run, want %d", info.Current, v1.Version)
	}
	rd, err := db2.Reader(ctx, "t", At{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := rd.Scan(ctx, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		if v := string(it.Row().Values[1].Bytes); v != "v1" {
			t.Fatalf("row %v of the failed run visible", it.Row())
		}
		n++
	}
	it.Close()
	rd.Close()
	if n != 300 {
		t.Fatalf("%d rows visible, want 300", n)
	}
	rep, err := db2.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.CellsDeleted == 0 || rep.InvalidTxnsPruned != 1 {
		t.Errorf("GC reclaimed nothing of the failed run, or did not prune its transaction: %+v", rep)
	}
	t.Logf("GC: %+v", rep)
}
