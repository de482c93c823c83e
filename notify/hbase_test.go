package notify

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store/hbase"
	"github.com/snapstore/snapstore/store/hbase/hbasetest"
)

// TestSharedOnHBase: two nodes on one HBase table share one delivery log
// and one stale mark: even when both look at the adapter, one stale event
// is sent (N2); the succeeded run on the other node sends recovered; each
// node lists the other's deliveries. It needs the test HBase
// (SNAPSTORE_TEST_HBASE_THRIFT) and is skipped without it.
func TestSharedOnHBase(t *testing.T) {
	t.Setenv("TEST_NOTIFY_SECRET", testSecret)
	ctx := context.Background()
	opts := hbasetest.Options(t)
	hbasetest.Open(t, func(o *hbase.Options) { *o = opts })
	rc := newReceiver(t)
	source := filepath.Join(t.TempDir(), "src.db")
	sqliteExec(t, source, `CREATE TABLE other (id INTEGER PRIMARY KEY)`) // items missing: runs fail
	type node struct {
		db  *snapshot.DB
		svc *adapters.Service
	}
	var nodes []node
	for _, self := range []string{"a", "b"} {
		st := hbasetest.OpenOptions(t, opts)
		db, err := snapshot.Open(ctx, st, snapshot.Options{})
		if err != nil {
			t.Fatal(err)
		}
		n, err := New(Options{Webhooks: []Webhook{hook("ops", rc.srv.URL)}, Default: []string{"ops"},
			StaleInterval: 100 * time.Millisecond, Backoff: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		svc, err := adapters.New(ctx, db, adapters.Options{
			Connections: []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": source}}},
			Adapters:    []api.Adapter{{Name: "items", Connection: "src", Resource: "items", Schedule: "@every 1s"}},
			Observer:    n,
		})
		if err != nil {
			t.Fatal(err)
		}
		// Both nodes look at the adapter: the mark alone keeps the event
		// single.
		n.Start(db, svc, self, nil)
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			svc.Close(cctx)
			n.Close(cctx)
			db.Close()
		})
		nodes = append(nodes, node{db, svc})
	}
	g := rc.next(t, EventStale)
	checkSigned(t, g)
	stale := g.event
	sqliteExec(t, source, `CREATE TABLE items (id INTEGER PRIMARY KEY)`, `INSERT INTO items VALUES (1)`)
	rec, err := nodes[1].svc.StartRun(ctx, "items", adapters.RunOptions{})
	if err == nil {
		rec, err = nodes[1].svc.WaitRun(ctx, rec.ID)
	}
	if err != nil || rec.Status != adapters.RunSucceeded {
		t.Fatalf("run on b: %+v %v", rec, err)
	}
	g = rc.next(t, EventRecovered)
	checkSigned(t, g)
	if g.event.Node != "b" || g.event.RunID != rec.ID {
		t.Fatalf("recovered %+v", g.event)
	}
	time.Sleep(500 * time.Millisecond)
	for i, nd := range nodes {
		ds, _, err := ListDeliveries(ctx, nd.db, DeliveryFilter{Adapter: "items", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var stales, recovereds int
		for _, d := range ds {
			switch d.Event {
			case EventStale:
				stales++
				if d.Node != stale.Node {
					t.Errorf("stale delivery from %q, event from %q", d.Node, stale.Node)
				}
			case EventRecovered:
				recovereds++
				if d.Node != "b" {
					t.Errorf("recovered delivery from %q", d.Node)
				}
			}
		}
		if stales != 1 || recovereds != 1 {
			t.Errorf("node %d lists %d stale and %d recovered deliveries, want 1 and 1: %+v", i, stales, recovereds, ds)
		}
	}
}
