package placement

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/snapshot"
)

// keeperNode starts a member whose placement keeps the partition table of
// 8 partitions in db (cluster.K13); xfer is its transfer tag ("" for a node
// without a transfer listener).
func keeperNode(t *testing.T, name string, db *snapshot.DB, xfer string, edit func(*cluster.Config)) (*cluster.Membership, *Placement, *Partitions) {
	t.Helper()
	m := openNode(t, name, t.TempDir(), func(c *cluster.Config) {
		c.Heartbeat = 200 * time.Millisecond
		c.PartitionMoveInterval = 200 * time.Millisecond
		c.PartitionMoves = 8
		c.Transfer = xfer
		if edit != nil {
			edit(c)
		}
	})
	parts, err := OpenPartitions(context.Background(), db.Records(), 8)
	if err != nil {
		t.Fatal(err)
	}
	p := New(m, NewNodeList(db.Records()))
	p.KeepPartitions(parts)
	startPlacement(t, m, p, db, adapters.Options{})
	return m, p, parts
}

// ownedBy counts the partitions of each node in parts' cached table.
func ownedBy(parts *Partitions) map[string]int {
	out := map[string]int{}
	for _, o := range parts.Table().Owners {
		out[o]++
	}
	return out
}

// TestPartitionKeeper checks cluster.K13 with real members on one metadata
// table: the first node gets every partition at once; a second node takes
// half and only from the first; a member without a transfer listener owns
// none; a node stopped without a leave keeps its partitions while failed
// (no failover), and gives them up once forgotten.
func TestPartitionKeeper(t *testing.T) {
	db := openTestDB(t)
	a, _, pa := keeperNode(t, "a", db, "127.0.0.1:1", nil)
	eventually(t, 10*time.Second, "a owns every partition", func() bool { return ownedBy(pa)[a.ID()] == 8 })
	b, pb, partsB := keeperNode(t, "b", db, "127.0.0.1:2", func(c *cluster.Config) { c.Join = []string{a.Addr()}; c.ConfirmFailure = time.Second })
	c, _, _ := keeperNode(t, "c", db, "", func(c *cluster.Config) { c.Join = []string{a.Addr()} })
	eventually(t, 20*time.Second, "a and b own 4 each, on both", func() bool {
		for _, p := range []*Partitions{pa, partsB} {
			o := ownedBy(p)
			if o[a.ID()] != 4 || o[b.ID()] != 4 {
				return false
			}
		}
		return true
	})
	if n := ownedBy(partsB)[c.ID()]; n != 0 {
		t.Errorf("the node without a transfer listener owns %d partitions", n)
	}
	epoch := partsB.Table().Epoch
	before := partsB.Table().Owners

	// a stops without a leave: failed, it keeps its partitions.
	aid := a.ID()
	a.Close()
	eventually(t, 30*time.Second, "b sees a failed", func() bool { n, _ := node(b, aid); return n.State == cluster.Failed })
	time.Sleep(time.Second) // several of the keeper's rounds
	if tab, err := partsB.Refresh(context.Background()); err != nil || tab.Epoch != epoch || !slices.Equal(tab.Owners, before) {
		t.Fatalf("a failed node's partitions moved: epoch %d (was %d) %v %v", tab.Epoch, epoch, ownedBy(partsB), err)
	}
	if err := pb.Forget(context.Background(), aid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "b owns every partition once a is forgotten", func() bool { return ownedBy(partsB)[b.ID()] == 8 })
}
