package placement

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/records"
	"github.com/snapstore/snapstore/store/hbase"
	"github.com/snapstore/snapstore/store/hbase/hbasetest"
	"github.com/snapstore/snapstore/store/pebble"
)

// recordsTable is the metadata table of these tests, on the bare store
// so that two handles can share one Pebble store in one process, or one
// HBase table from two connections.
const recordsTable = "cluster_test_meta"

// recordStores returns two record stores on one store: the same Pebble store,
// or, with SNAPSTORE_TEST_HBASE_THRIFT set, two connections to one HBase
// table too (each backend a subtest).
func recordStores(t *testing.T, f func(t *testing.T, a, b *records.Store)) {
	t.Run("pebble", func(t *testing.T) {
		st, err := pebble.Open(t.TempDir(), pebble.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		f(t, records.New(st, recordsTable), records.New(st, recordsTable))
	})
	t.Run("hbase", func(t *testing.T) {
		opts := hbasetest.Options(t)
		t.Cleanup(func() { hbase.DropTable(context.Background(), opts) })
		a := hbasetest.OpenOptions(t, opts)
		b := hbasetest.OpenOptions(t, opts)
		f(t, records.New(a, recordsTable), records.New(b, recordsTable))
	})
}

// TestPartitionTable_OneWriterAnEpochRestartMovesNothing: two nodes step
// the table at once, each from what it read; for every epoch exactly one
// of them writes, the other finds the table changed and reads it; they
// agree on every owner; the table settles balanced; a node opening it
// again (a full restart) reads the same table and, with the same nodes,
// or with one of them stopped or failed, moves nothing.
func TestPartitionTable_OneWriterAnEpochRestartMovesNothing(t *testing.T) {
	recordStores(t, func(t *testing.T, ra, rb *records.Store) {
		ctx := context.Background()
		const parts = 32
		nodes := activeNodes([]string{"node-a", "node-b", "node-c", "node-d", "node-e"})
		pa, err := OpenPartitions(ctx, ra, parts)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := OpenPartitions(ctx, rb, parts)
		if err != nil {
			t.Fatal(err)
		}
		if tab := pa.Table(); tab.Epoch != 0 || len(tab.Owners) != parts || tab.Owners[0] != "" {
			t.Fatalf("a new cluster's table: %+v", tab)
		}
		written, refused := 0, 0
		for range 50 {
			var wg sync.WaitGroup
			var ma, mb []Move
			var ea, eb error
			e0 := pa.Table().Epoch
			wg.Add(2)
			go func() { defer wg.Done(); ma, ea = pa.Step(ctx, nodes, 4, "node-a", time.Now()) }()
			go func() { defer wg.Done(); mb, eb = pb.Step(ctx, nodes, 4, "node-b", time.Now()) }()
			wg.Wait()
			if ea != nil || eb != nil {
				t.Fatal(ea, eb)
			}
			wrote := 0
			for _, ms := range [][]Move{ma, mb} {
				if len(ms) > 0 {
					wrote++
				}
			}
			// Each write is the epoch after the one it read: a write from
			// a table another write replaced would leave fewer epochs
			// than writes.
			ta, _ := pa.Refresh(ctx)
			tb, _ := pb.Refresh(ctx)
			if ta.Epoch != e0+int64(wrote) || tb.Epoch != ta.Epoch || strings.Join(ta.Owners, ",") != strings.Join(tb.Owners, ",") {
				t.Fatalf("from epoch %d, %d writes: epochs %d and %d, owners agree %v", e0, wrote, ta.Epoch, tb.Epoch, strings.Join(ta.Owners, ",") == strings.Join(tb.Owners, ","))
			}
			written += wrote
			if wrote < 2 && len(Rebalance(ta.Owners, nodes, 0)) > 0 {
				refused++ // a node computed a step and found the table changed
			}
			if len(Rebalance(ta.Owners, nodes, 0)) == 0 {
				break
			}
		}
		t.Logf("%d epochs written; in %d rounds a node's write was refused (the other wrote first)", written, refused)
		tab := pa.Table()
		checkBalanced(t, "settled", tab.Owners, nodes)
		if written < parts/4 {
			t.Fatalf("%d writes for %d partitions at 4 moves a write", written, parts)
		}
		for p, s := range tab.Since {
			if s < 1 || s > tab.Epoch {
				t.Fatalf("partition %d owned since epoch %d of %d", p, s, tab.Epoch)
			}
		}
		if tab.ChangedBy != "node-a" && tab.ChangedBy != "node-b" || tab.ChangedAt.IsZero() {
			t.Errorf("changed by %q at %v", tab.ChangedBy, tab.ChangedAt)
		}

		// A full restart: the same table; nothing moves, nodes stopped or
		// failed included.
		pc, err := OpenPartitions(ctx, rb, parts)
		if err != nil {
			t.Fatal(err)
		}
		if got := pc.Table(); got.Epoch != tab.Epoch || strings.Join(got.Owners, ",") != strings.Join(tab.Owners, ",") {
			t.Fatalf("reopened: epoch %d, want %d, owners equal %v", got.Epoch, tab.Epoch, strings.Join(got.Owners, ",") == strings.Join(tab.Owners, ","))
		}
		restart := activeNodes([]string{"node-a", "node-b", "node-c", "node-d", "node-e"})
		restart[1].State, restart[3].State = cluster.Left, cluster.Failed
		for _, ns := range [][]Member{nodes, restart} {
			if ms, err := pc.Step(ctx, ns, 0, "node-c", time.Now()); err != nil || len(ms) != 0 {
				t.Fatalf("a restart moves %v (%v)", ms, err)
			}
		}
		if pc.Table().Epoch != tab.Epoch {
			t.Fatal("a step that moves nothing wrote an epoch")
		}

		// Another count is refused, naming both.
		if _, err := OpenPartitions(ctx, ra, 64); !errors.Is(err, ErrPartitionCount) || !strings.Contains(err.Error(), "has 32 partitions, this node is configured with 64") {
			t.Fatalf("opening with 64 partitions: %v", err)
		}
	})
}

// TestPartitionTable_SixthNodeMovesAShare: a sixth node joining a settled
// table of five moves, over rate-limited steps, at most 1/N + 5% of the
// partitions, every one to it and owned since the epoch that moved it.
func TestPartitionTable_SixthNodeMovesAShare(t *testing.T) {
	recordStores(t, func(t *testing.T, ra, _ *records.Store) {
		ctx := context.Background()
		const parts = 32
		ids := []string{"node-a", "node-b", "node-c", "node-d", "node-e", "node-f"}
		p, err := OpenPartitions(ctx, ra, parts)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ms, err := p.Step(ctx, activeNodes(ids[:5]), parts/8, "node-a", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) == 0 {
				break
			}
		}
		before := p.Table()
		var moved []Move
		for {
			ms, err := p.Step(ctx, activeNodes(ids), parts/8, "node-a", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) > parts/8 {
				t.Fatalf("%d moves in one step, limit %d", len(ms), parts/8)
			}
			if len(ms) == 0 {
				break
			}
			moved = append(moved, ms...)
		}
		after := p.Table()
		checkBalanced(t, "after the join", after.Owners, activeNodes(ids))
		if bound := (1.0/6 + 0.05) * parts; float64(len(moved)) > bound {
			t.Fatalf("the sixth node moved %d of %d partitions, more than 1/N + 5%% (%.1f)", len(moved), parts, bound)
		}
		for _, m := range moved {
			if m.To != "node-f" || after.Since[m.Partition] <= before.Epoch {
				t.Fatalf("move %v: owned since %d, the join began after epoch %d", m, after.Since[m.Partition], before.Epoch)
			}
		}
		t.Logf("a sixth node moved %d of %d partitions (%.1f%%; 1/N = 16.7%%) in %d epochs",
			len(moved), parts, 100*float64(len(moved))/parts, after.Epoch-before.Epoch)
	})
}

// TestKeeper: the keeper is one active node, the same for every caller,
// and another once it is not active.
func TestKeeper(t *testing.T) {
	nodes := activeNodes([]string{"node-a", "node-b", "node-c"})
	k := Keeper(nodes)
	if k == "" {
		t.Fatal("no keeper")
	}
	for i := range nodes {
		if nodes[i].ID == k {
			nodes[i].State = cluster.Failed
		}
	}
	if k2 := Keeper(nodes); k2 == "" || k2 == k {
		t.Fatalf("keeper %q after %q failed", k2, k)
	}
	if Keeper(nil) != "" {
		t.Fatal("a keeper without nodes")
	}
}
