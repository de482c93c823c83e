package placement

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store/pebble"
)

// openTestDB opens a snapshot DB on Pebble in a temp dir: the metadata
// table the node list lives in (tests/e2e runs it on HBase).
func openTestDB(t *testing.T) *snapshot.DB {
	t.Helper()
	st, err := pebble.Open(t.TempDir(), pebble.Options{MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	db, err := snapshot.Open(context.Background(), st, snapshot.Options{})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(); st.Close() })
	return db
}

// TestNodeList_Update checks the node list's writes: concurrent updates of
// one entry, each a read then a conditional write, all land; an edit that
// declines writes nothing; forget deletes the entry whatever it holds.
func TestNodeList_Update(t *testing.T) {
	ctx := context.Background()
	l := NewNodeList(openTestDB(t).Records())
	if err := l.update(ctx, "n1", func(r *cluster.NodeRecord, exists bool) bool {
		*r = cluster.NodeRecord{Addr: "127.0.0.1:7946", Weight: 100, State: cluster.Active, Config: map[string]string{}}
		return !exists
	}); err != nil {
		t.Fatal(err)
	}
	// Five writers: each loses a conditional write only to another's
	// success, so each lands within the five attempts update makes, however
	// the goroutines are scheduled (eight could not, under -race on a
	// loaded machine).
	const writers = 5
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.update(ctx, "n1", func(r *cluster.NodeRecord, _ bool) bool {
				if r.Config == nil {
					r.Config = map[string]string{}
				}
				r.Config[fmt.Sprintf("adapter/%d", i)] = "x"
				return true
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	es, err := l.Nodes(ctx)
	if err != nil || len(es) != 1 || len(es["n1"].rec.Config) != writers || es["n1"].rec.ID != "n1" || es["n1"].rec.State != cluster.Active {
		t.Fatalf("after %d concurrent updates: %+v %v", writers, es, err)
	}
	if err := l.update(ctx, "n1", func(r *cluster.NodeRecord, _ bool) bool { r.Weight = 1; return false }); err != nil {
		t.Fatal(err)
	}
	if e, _ := l.read(ctx, "n1"); e.rec.Weight != 100 {
		t.Errorf("a declined edit wrote: %+v", e.rec)
	}
	if existed, err := l.forget(ctx, "n1"); err != nil || !existed {
		t.Fatalf("forget of an entry: existed %v, %v", existed, err)
	}
	if es, _ := l.Nodes(ctx); len(es) != 0 {
		t.Errorf("after forget: %+v", es)
	}
	if existed, err := l.forget(ctx, "n1"); err != nil || existed {
		t.Errorf("forget of an absent entry: existed %v, %v", existed, err)
	}
}

// nodeWithList opens a member whose placement keeps the node list of db,
// with an adapters service over db holding the config adapters ads.
func nodeWithList(t *testing.T, name string, db *snapshot.DB, ads []string, edit func(*cluster.Config)) (*cluster.Membership, *Placement) {
	t.Helper()
	m := openNode(t, name, t.TempDir(), func(c *cluster.Config) {
		c.Heartbeat = 200 * time.Millisecond
		if edit != nil {
			edit(c)
		}
	})
	p := New(m, NewNodeList(db.Records()))
	// One connection, defined alike on every node; never opened here.
	conns := []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": "/nonexistent/src.db"}}}
	var specs []api.Adapter
	for _, a := range ads {
		specs = append(specs, api.Adapter{Name: a[:1], Connection: "src", Resource: a[1:]})
	}
	startPlacement(t, m, p, db, adapters.Options{Connections: conns, Adapters: specs})
	return m, p
}

// startPlacement starts p with an adapters service on db (opts, with p as
// its cluster), closed at the end of the test, and declares m active.
func startPlacement(t *testing.T, m *cluster.Membership, p *Placement, db *snapshot.DB, opts adapters.Options) {
	t.Helper()
	opts.Cluster = p
	svc, err := adapters.New(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(); svc.Close(context.Background()) })
	if err := m.SetState(cluster.Active); err != nil {
		t.Fatal(err)
	}
}

// TestNodeList_Cluster checks cluster.K11 and cluster.K12 with real
// members on one metadata table: each writes its entry; a config adapter
// defined differently on two nodes, and one defined on one node only, are
// reported by both; a member stopped without a leave is recorded failed by
// the other once confirmed; a node that starts again counts the node of
// the list it does not hear from as failing, in its recorded state (it
// keeps its share) until the confirmation delay makes it failed; the
// single node stays on a failed node of the list and moves once it is
// forgotten, which deletes its entry.
func TestNodeList_Cluster(t *testing.T) {
	db := openTestDB(t)
	// Ids written before the first start (cluster.K1), chosen so that a is the
	// single node of a and b.
	var ids []string
	for i := 0; ids == nil; i++ {
		c := []Candidate{{fmt.Sprintf("a-%d", i), 100}, {fmt.Sprintf("b-%d", i), 100}}
		if o, _ := Owner(singleNodeName, c); o == c[0].ID {
			ids = []string{c[0].ID, c[1].ID}
		}
	}
	withID := func(id string) func(*cluster.Config) {
		return func(c *cluster.Config) { writeID(t, c.DataDir, id) }
	}
	a, pa := nodeWithList(t, "a", db, []string{"xitems", "yitems"}, withID(ids[0]))
	b, pb := nodeWithList(t, "b", db, []string{"xother", "zitems"}, func(c *cluster.Config) {
		writeID(t, c.DataDir, ids[1])
		c.Join = []string{a.Addr()}
		c.ConfirmFailure = time.Second
	})
	eventually(t, 20*time.Second, "a and b active", func() bool {
		return allSee([]*cluster.Membership{a, b}, slices.Sorted(slices.Values(ids)), cluster.Active)
	})
	want := []Mismatch{
		{Kind: "adapter", Name: "x", Problem: "differs", Nodes: slices.Sorted(slices.Values(ids))},
		{Kind: "adapter", Name: "y", Problem: "missing", Nodes: []string{a.ID()}},
		{Kind: "adapter", Name: "z", Problem: "missing", Nodes: []string{b.ID()}},
	}
	eventually(t, 10*time.Second, "both report the mismatches", func() bool {
		return fmt.Sprint(pa.Mismatches(b.ID())) == fmt.Sprint(want) && fmt.Sprint(pb.Mismatches(a.ID())) == fmt.Sprint(want)
	})
	eventually(t, 10*time.Second, "a reads b's entry, active", func() bool {
		r, ok := pa.Recorded(b.ID())
		return ok && r.State == cluster.Active && r.API != "" && len(r.Config) == 3
	})

	// a stops without a leave: b records it failed.
	aid := a.ID()
	pa.Close()
	a.Close()
	eventually(t, 30*time.Second, "b records a failed", func() bool {
		r, ok := pb.Recorded(aid)
		return ok && r.State == cluster.Failed
	})

	// b stops too, as after a crash, and starts again: it does not hear
	// from a, which counts as active (failing) for the delay, then failed.
	bdir := b.Config().DataDir
	pb.Close()
	b.Close()
	ghostHeard := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if err := NewNodeList(db.Records()).update(context.Background(), "ghost", func(r *cluster.NodeRecord, _ bool) bool {
		*r = cluster.NodeRecord{Addr: "127.0.0.1:1", API: "127.0.0.1:2", Weight: 100, State: cluster.Active, LastHeard: ghostHeard, Incarnation: "00"}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	b2 := openNode(t, "b2", bdir, func(c *cluster.Config) { c.ConfirmFailure = time.Second; c.Heartbeat = 200 * time.Millisecond })
	pb2 := New(b2, NewNodeList(db.Records()))
	svc, err := adapters.New(context.Background(), db, adapters.Options{Cluster: pb2})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	if err := pb2.Start(svc); err != nil {
		t.Fatal(err)
	}
	defer pb2.Close()
	n, ok := node(b2, aid)
	if !ok || n.State != cluster.Failed {
		t.Errorf("a, recorded failed, as b sees it after its restart: %+v %v", n, ok)
	}
	g, ok := node(b2, "ghost")
	if !ok || g.State != cluster.Active || g.FailingSince.IsZero() || !g.LastHeard.Equal(ghostHeard) {
		t.Errorf("the ghost, recorded active, as b sees it after its restart: %+v %v", g, ok)
	}
	eventually(t, 10*time.Second, "the ghost failed after the delay", func() bool { g, _ := node(b2, "ghost"); return g.State == cluster.Failed })
	b2.SetState(cluster.Active)
	if err := pb2.Forget(context.Background(), "ghost"); err != nil {
		t.Fatal(err)
	}
	if s, active, _ := pb2.SingleNode(); s != aid || active {
		t.Errorf("single node %s (active %v), want the failed a, waited for", s, active)
	}
	if err := pb2.Forget(context.Background(), aid); err != nil {
		t.Fatal(err)
	}
	// Forgotten, a is known nowhere: a forget of it again, as of a
	// mistyped id, is ErrNotMember, not done.
	if err := pb2.Forget(context.Background(), aid); !errors.Is(err, cluster.ErrNotMember) {
		t.Errorf("a second forget of a: %v, want ErrNotMember", err)
	}
	if err := pb2.Forget(context.Background(), "nosuchnode"); !errors.Is(err, cluster.ErrNotMember) {
		t.Errorf("a forget of an unknown id: %v, want ErrNotMember", err)
	}
	if _, ok := pb2.Recorded(aid); ok {
		t.Error("a's entry kept after the forget")
	}
	if es, _ := NewNodeList(db.Records()).Nodes(context.Background()); len(es) != 1 {
		t.Errorf("entries after the forget: %d", len(es))
	}
	if _, ok := node(b2, aid); ok {
		t.Error("a still a member after the forget")
	}
	eventually(t, 10*time.Second, "b the single node once a is forgotten", func() bool {
		s, active, _ := pb2.SingleNode()
		return s == b2.ID() && active
	})
}

// writeID writes node id id into dir before the first start (cluster.K1).
func writeID(t *testing.T, dir, id string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, cluster.NodeIDFile), []byte(id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
