package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/snapstore/snapstore/cluster"
)

// TestHintsDrainForget runs three real members: a hint sent by one reaches
// the others (cluster.K9); a drain asked of a for b (a serf query) makes b
// declare itself draining on every member and own nothing, a resume brings
// it back (cluster.K10); forgetting an alive node is refused, and once c
// stopped and is confirmed failed, forgetting it removes it from every
// member; the single node of single-node adapters stays on c while it is
// failed and moves when it is forgotten.
func TestHintsDrainForget(t *testing.T) {
	// Ids written before the first start (cluster.K1), chosen so that c is the
	// single node of the three.
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	for i := 0; ; i++ {
		names := []string{fmt.Sprintf("a-%d", i), fmt.Sprintf("b-%d", i), fmt.Sprintf("c-%d", i)}
		cands := []Candidate{{names[0], 100}, {names[1], 100}, {names[2], 100}}
		if o, _ := Owner(singleNodeName, cands); o == names[2] {
			for j, d := range dirs {
				os.WriteFile(filepath.Join(d, cluster.NodeIDFile), []byte(names[j]+"\n"), 0o644)
			}
			break
		}
	}
	a := openNode(t, "a", dirs[0], nil)
	b := openNode(t, "b", dirs[1], func(c *cluster.Config) { c.Join = []string{a.Addr()} })
	c := openNode(t, "c", dirs[2], func(c *cluster.Config) { c.Join = []string{a.Addr()} })
	ms := []*cluster.Membership{a, b, c}
	ids := []string{a.ID(), b.ID(), c.ID()}
	slices.Sort(ids)
	for _, m := range ms {
		if err := m.SetState(cluster.Active); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "three active members", func() bool { return allSee(ms, ids, cluster.Active) })

	// A hint from b reaches a and c (and b itself: serf delivers to the
	// sender too).
	payload, _ := json.Marshal(definitionHint{Kind: "adapter", Name: "orders", From: b.ID()})
	if err := b.SendHint(hintDefinitions, payload); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*cluster.Membership{a, c} {
		select {
		case h := <-m.Hints():
			d := newDefinitionsSync(m)
			if h.Name != hintDefinitions || string(h.Payload) != string(payload) || !d.fromOther(h) {
				t.Errorf("hint %s %s", h.Name, h.Payload)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s got no hint", m.ID())
		}
	}
	if h := <-b.Hints(); newDefinitionsSync(b).fromOther(h) {
		t.Error("b takes its own hint for another node's")
	}

	// Drain b through a: every member sees it draining; it owns nothing.
	ctx := context.Background()
	if err := a.Drain(ctx, b.ID()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "b draining everywhere", func() bool {
		for _, m := range ms {
			if view(m)[b.ID()] != cluster.Draining {
				return false
			}
		}
		return true
	})
	pa := New(a, nil)
	if !New(b, nil).Draining() || pa.Draining() {
		t.Error("cluster.Draining: b should be, a not")
	}
	for i := range 200 {
		if o, _ := pa.Owner(testNames(200)[i]); o == b.ID() {
			t.Fatalf("draining b owns %s", testNames(200)[i])
		}
	}
	if slices.Contains(pa.Active(), b.ID()) || len(pa.Active()) != 2 {
		t.Errorf("active %v", pa.Active())
	}
	if err := c.Resume(ctx, b.ID()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "b active again", func() bool { return allSee(ms, ids, cluster.Active) })
	if err := a.Drain(ctx, "nobody"); !errors.Is(err, cluster.ErrNotMember) {
		t.Errorf("drain of a stranger: %v", err)
	}

	// Forget: refused while c is alive; c stops (a crash) and is
	// confirmed failed; its single-node share waits for it; forgotten, it
	// is gone from a and b and the single node moves.
	if err := a.Forget(ctx, c.ID()); !errors.Is(err, cluster.ErrNodeAlive) {
		t.Fatalf("forget of an alive node: %v", err)
	}
	vid := c.ID()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "c confirmed failed", func() bool { return view(a)[vid] == cluster.Failed })
	if s, active, ok := pa.SingleNode(); !ok || s != vid || active {
		t.Errorf("single node while c is failed: %s active=%v ok=%v, want %s, not active", s, active, ok, vid)
	}
	if err := a.Drain(ctx, vid); !errors.Is(err, cluster.ErrNodeNotAlive) {
		t.Errorf("drain of a failed node: %v", err)
	}
	if !pa.Gone(vid) || pa.Gone(a.ID()) {
		t.Error("Gone")
	}
	if err := a.Forget(ctx, vid); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "c gone from a and b", func() bool {
		for _, m := range []*cluster.Membership{a, b} {
			if _, ok := view(m)[vid]; ok {
				return false
			}
		}
		return true
	})
	if s, active, _ := pa.SingleNode(); s == vid || !active {
		t.Errorf("the single node is %s (active %v) after c was forgotten", s, active)
	}
}
