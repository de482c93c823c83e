package placement

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/snapstore/snapstore/cluster"
)

// TestFence checks cluster.K16 with real members on one metadata table:
// a node with a gossip key the cluster does not use (an outdated one) and
// a node without a key cannot join; each sees the members it does not hear
// from failed after the confirmation delay, yet writes no entry of its
// own, records none of them failed, owns no adapter, places nothing in
// the rotation and takes no run of theirs for gone; a node that joins
// with the right key is a member at once.
func TestFence(t *testing.T) {
	db := openTestDB(t)
	key := []byte("0123456789abcdef")
	withKey := func(k []byte, join ...string) func(*cluster.Config) {
		return func(c *cluster.Config) {
			c.GossipKey = k
			c.Join = join
			c.ConfirmFailure = time.Second
		}
	}
	a, pa := nodeWithList(t, "a", db, []string{"xitems"}, withKey(key))
	b, _ := nodeWithList(t, "b", db, []string{"xitems"}, withKey(key, a.Addr()))
	ids := slices.Sorted(slices.Values([]string{a.ID(), b.ID()}))
	eventually(t, 20*time.Second, "a and b active and recorded", func() bool {
		ra, oka := pa.Recorded(a.ID())
		rb, okb := pa.Recorded(b.ID())
		return allSee([]*cluster.Membership{a, b}, ids, cluster.Active) && oka && okb && ra.State == cluster.Active && rb.State == cluster.Active
	})
	if !pa.member() {
		t.Fatal("a, the first node, is not a member")
	}

	outdated, po := nodeWithList(t, "outdated", db, []string{"xitems"}, withKey([]byte("fedcba9876543210"), a.Addr()))
	keyless, pk := nodeWithList(t, "keyless", db, []string{"xitems"}, withKey(nil, a.Addr()))
	for _, s := range []struct {
		m *cluster.Membership
		p *Placement
	}{{outdated, po}, {keyless, pk}} {
		eventually(t, 10*time.Second, s.m.ID()+" sees a and b failed", func() bool {
			na, _ := node(s.m, a.ID())
			nb, _ := node(s.m, b.ID())
			return na.State == cluster.Failed && nb.State == cluster.Failed
		})
	}
	// Several heartbeats (200 ms) and confirmation delays later.
	time.Sleep(2 * time.Second)
	entries, err := NewNodeList(db.Records()).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("%d entries in the node list, want a's and b's", len(entries))
	}
	for _, id := range ids {
		if e := entries[id]; e.rec.State != cluster.Active {
			t.Errorf("%s recorded %s, want active", id, e.rec.State)
		}
	}
	for _, p := range []*Placement{po, pk} {
		if p.member() {
			t.Errorf("%s is a member", p.Self())
		}
		if o, ok := p.Owner("x"); ok {
			t.Errorf("%s places adapter x on %s", p.Self(), o)
		}
		if act := p.Active(); len(act) != 0 {
			t.Errorf("%s rotates over %v", p.Self(), act)
		}
		if p.Gone(a.ID()) {
			t.Errorf("%s takes a for gone", p.Self())
		}
	}

	// A node with the right key joins and is a member.
	_, pc := nodeWithList(t, "c", db, []string{"xitems"}, withKey(key, a.Addr()))
	eventually(t, 20*time.Second, "c recorded", func() bool {
		_, ok := pc.Recorded(pc.Self())
		return ok && pc.member()
	})
}
