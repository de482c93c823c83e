package adapters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
)

// twoNodes stands in for package cluster (which adapters cannot import)
// as the Cluster of two real Services on one snapshot.DB: "n1" and "n2".
// A hand-off from one is the other's TakeRun, as the HTTP route would
// call it; the membership is what the test sets. tests/e2e runs the
// real cluster.
type twoNodes struct {
	mu       sync.Mutex
	svcs     map[string]*Service
	active   map[string]bool
	draining map[string]bool
	owner    string            // the owner of every adapter; "" for none
	believes map[string]string // a node's own idea of the owner, when it differs
	down     map[string]bool   // nodes listed active that do not answer
	single   string            // the single node
	wait     time.Duration
	hints    []string
}

// nodeView is one node's view of twoNodes.
type nodeView struct {
	c    *twoNodes
	self string
}

func (v nodeView) Self() string { return v.self }
func (v nodeView) Draining() bool {
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	return v.c.draining[v.self]
}
func (v nodeView) Owner(string) (string, bool) {
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	if o, ok := v.c.believes[v.self]; ok {
		return o, true
	}
	return v.c.owner, v.c.owner != ""
}
func (v nodeView) Active() []string {
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	var out []string
	for _, n := range []string{"n1", "n2"} {
		if v.c.active[n] {
			out = append(out, n)
		}
	}
	return out
}
func (v nodeView) SingleNode() (string, bool, bool) {
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	return v.c.single, v.c.active[v.c.single], v.c.single != ""
}
func (v nodeView) SingleNodeWait() time.Duration { return v.c.wait }
func (v nodeView) Gone(node string) bool {
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	return !v.c.active[node] && !v.c.draining[node]
}
func (v nodeView) DefinitionsChanged(kind, name string) {
	v.c.mu.Lock()
	defer v.c.mu.Unlock()
	v.c.hints = append(v.c.hints, v.self+":"+kind+"/"+name)
}
func (v nodeView) HandOff(ctx context.Context, node string, h HandOff) (RunRecord, error) {
	v.c.mu.Lock()
	svc, up := v.c.svcs[node], (v.c.active[node] || v.c.draining[node]) && !v.c.down[node]
	v.c.mu.Unlock()
	if !up || svc == nil {
		return RunRecord{}, fmt.Errorf("%w: %s does not answer", ErrNodeUnreachable, node)
	}
	return svc.TakeRun(ctx, h)
}

func (c *twoNodes) set(f func(c *twoNodes)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

// newTwoNodes opens n1 on a fresh stack and n2 as a second Service on the
// same DB, with a sqlite connection "lite" and adapter "a" of strategy
// created through n1.
func newTwoNodes(t *testing.T, strategy Strategy) (*twoNodes, *testStack, *Service) {
	t.Helper()
	c := &twoNodes{svcs: map[string]*Service{}, active: map[string]bool{"n1": true, "n2": true}, draining: map[string]bool{}, owner: "n1", single: "n2", wait: time.Minute,
		believes: map[string]string{}, down: map[string]bool{}}
	ts := newStack(t, Options{Cluster: nodeView{c, "n1"}})
	ctx := context.Background()
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "lite", Type: "sqlite", Options: map[string]any{"path": newSQLiteFixture(t)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items", Strategy: string(strategy), Schedule: "@every 1h"}); err != nil {
		t.Fatal(err)
	}
	n2, err := New(ctx, ts.db, Options{Logger: testLogger(), Cluster: nodeView{c, "n2"}, FileOptions: FileOptionLimits{AnyFile: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n2.Close(context.Background()) })
	c.svcs["n1"], c.svcs["n2"] = ts.svc, n2
	return c, ts, n2
}

func shortWaits(t *testing.T) {
	r, p := waitRetry, waitPoll
	waitRetry, waitPoll = 20*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { waitRetry, waitPoll = r, p })
}

// TestDispatch_SingleNodeWaits checks L3 and L5: a run of a single-node
// adapter whose node (n2) cannot take it waits, recorded as waiting for
// n2 by n1, and holds the adapter's place; once n2 is active it is handed
// there under the same id, runs there and succeeds, its record naming
// both nodes; WaitRun on n1 follows it to its end.
func TestDispatch_SingleNodeWaits(t *testing.T) {
	shortWaits(t)
	c, ts, _ := newTwoNodes(t, StrategySingleNode)
	ctx := context.Background()
	c.set(func(c *twoNodes) { c.active["n2"] = false })
	rec, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "api"})
	if err != nil || rec.Status != RunWaiting || rec.Node != "n2" || rec.PlacedBy != "n1" {
		t.Fatalf("run while n2 is down: %+v %v", rec, err)
	}
	if got, err := ts.svc.GetRun(ctx, rec.ID); err != nil || got.Status != RunWaiting {
		t.Fatalf("the waiting record: %+v %v", got, err)
	}
	if _, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "api"}); !errors.Is(err, ErrRunInProgress) {
		t.Fatalf("a second run while one waits: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	c.set(func(c *twoNodes) { c.active["n2"] = true })
	end, err := ts.svc.WaitRun(ctx, rec.ID)
	if err != nil || end.Status != RunSucceeded || end.ID != rec.ID || end.Node != "n2" || end.PlacedBy != "n1" || end.Version == 0 {
		t.Fatalf("the run once n2 is back: %+v %v", end, err)
	}
	// With n2 active, a run goes there at once.
	rec, err = ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "api"})
	if err != nil || rec.Status != RunRunning || rec.Node != "n2" {
		t.Fatalf("a run with n2 up: %+v %v", rec, err)
	}
	if end, err := ts.svc.WaitRun(ctx, rec.ID); err != nil || end.Status != RunSucceeded {
		t.Fatalf("%+v %v", end, err)
	}
}

// TestDispatch_SingleNodeWaitLimit checks that a single-node run whose
// node never comes back fails after the wait limit, never started, with
// code node_unreachable and an error naming the node.
func TestDispatch_SingleNodeWaitLimit(t *testing.T) {
	shortWaits(t)
	c, ts, _ := newTwoNodes(t, StrategySingleNode)
	c.set(func(c *twoNodes) { c.active["n2"] = false; c.wait = 200 * time.Millisecond })
	ctx := context.Background()
	rec, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	end, err := ts.svc.WaitRun(ctx, rec.ID)
	if err != nil || end.Status != RunFailed || end.Code != "node_unreachable" || !strings.Contains(end.Error, "node n2") ||
		!strings.Contains(end.Error, "cluster.single_node_wait") || end.TxnID != 0 {
		t.Fatalf("after the limit: %+v %v", end, err)
	}
	if ts.svc.RunsInProgress() != 0 {
		t.Error("the failed waiting run still counts")
	}
	// The adapter's place is free again.
	c.set(func(c *twoNodes) { c.active["n2"] = true })
	if rec, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "api"}); err != nil || rec.Node != "n2" {
		t.Fatalf("%+v %v", rec, err)
	}
}

// TestDispatch_DrainingOwnerStrategy checks L6, L1's owner rule and L4:
// a draining node refuses a manual run and a hand-off; a tick this node
// does not own is dropped (errNotOwner, no record); a partition-by-key
// run is refused, and recorded as failed when a trigger of the scheduler
// asked for it.
func TestDispatch_DrainingOwnerStrategy(t *testing.T) {
	c, ts, n2 := newTwoNodes(t, StrategyLocal)
	ctx := context.Background()
	c.set(func(c *twoNodes) { c.draining["n1"] = true; c.active["n1"] = false })
	if _, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "api"}); !errors.Is(err, ErrNodeDraining) {
		t.Fatalf("a run on a draining node: %v", err)
	}
	if _, err := ts.svc.TakeRun(ctx, HandOff{Adapter: "a", RunID: "r0000000000000000001-0001", Trigger: "api", PlacedBy: "n2"}); !errors.Is(err, ErrNodeDraining) {
		t.Fatalf("a hand-off to a draining node: %v", err)
	}
	if _, err := n2.TakeRun(ctx, HandOff{Adapter: "a", RunID: "../x", Trigger: "api", PlacedBy: "n1"}); !errors.Is(err, ErrBadOption) {
		t.Fatalf("a hand-off with a bad run id: %v", err)
	}
	c.set(func(c *twoNodes) { c.owner = "n2" })
	if _, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "schedule", Tick: time.Now()}); !errors.Is(err, errNotOwner) {
		t.Fatalf("a tick of another node's adapter: %v", err)
	}
	if runs, _ := ts.svc.ListRuns(ctx, "a", 10); len(runs) != 0 {
		t.Fatalf("records of refused runs: %+v", runs)
	}
	if _, _, err := ts.svc.PutAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items", Strategy: string(StrategyPartitionByKey)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "api"}); !errors.Is(err, ErrStrategyNotSupported) {
		t.Fatalf("a manual partition-by-key run: %v", err)
	}
	rec, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "retry"})
	if !errors.Is(err, ErrStrategyNotSupported) || rec.Status != RunFailed || rec.Code != "strategy_not_supported" || !strings.Contains(rec.Error, "partition-by-key") {
		t.Fatalf("a retried partition-by-key run: %+v %v", rec, err)
	}
	if _, err := parseStrategy("strategy", "spread"); err == nil || !strings.Contains(err.Error(), "round-robin") {
		t.Errorf("an unknown strategy: %v", err)
	}
	// transfer_compression: one of three, and only with partition-by-key.
	for _, tc := range []struct {
		strategy Strategy
		c, want  string
	}{
		{StrategyPartitionByKey, "all", ""},
		{StrategyPartitionByKey, "zip", `want none, metadata or all, got "zip"`},
		{StrategyLocal, "metadata", "applies to strategy partition-by-key only"},
	} {
		_, _, err := ts.svc.PutAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items", Strategy: string(tc.strategy), TransferCompression: tc.c})
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), `"transfer_compression": `+tc.want)) {
			t.Errorf("strategy %s, transfer_compression %q: %v", tc.strategy, tc.c, err)
		}
	}
	// partition_key: columns of the resource, named once, and only with
	// partition-by-key.
	for _, tc := range []struct {
		strategy Strategy
		pk       []string
		want     string
	}{
		{StrategyPartitionByKey, []string{"name", "ratio"}, ""},
		{StrategyPartitionByKey, []string{"name", "name"}, `"partition_key[1]": empty or repeated`},
		{StrategyPartitionByKey, []string{"name", "region"}, `"partition_key[1]": "region" is not a column of items (its columns: id, name,`},
		{StrategyLocal, []string{"name"}, `"partition_key": applies to strategy partition-by-key only`},
	} {
		a, _, err := ts.svc.PutAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items", Strategy: string(tc.strategy), PartitionKey: tc.pk})
		if tc.want == "" && (err != nil || !slices.Equal(a.PartitionKey, tc.pk)) || tc.want != "" && (!errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("strategy %s, partition_key %v: %+v %v", tc.strategy, tc.pk, a.PartitionKey, err)
		}
	}
}

// TestDispatch_AbandonOwnRuns checks L7: a node that starts again marks
// aborted only its own runs and the waiting runs it placed; another
// node's running run stays running until that node is forgotten
// (AbandonNodeRuns).
func TestDispatch_AbandonOwnRuns(t *testing.T) {
	c, ts, _ := newTwoNodes(t, StrategyLocal)
	ctx := context.Background()
	now := time.Now().UTC()
	for _, r := range []RunRecord{
		{ID: "r0000000000000000001-0001", Adapter: "a", Status: RunRunning, Start: now, Node: "n1"},
		{ID: "r0000000000000000002-0001", Adapter: "a", Status: RunRunning, Start: now, Node: "n2"},
		{ID: "r0000000000000000003-0001", Adapter: "a", Status: RunWaiting, Start: now, Node: "n2", PlacedBy: "n1"},
		{ID: "r0000000000000000004-0001", Adapter: "a", Status: RunWaiting, Start: now, Node: "n1", PlacedBy: "n2"},
	} {
		if err := ts.svc.saveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	again, err := New(ctx, ts.db, Options{Logger: testLogger(), Cluster: nodeView{c, "n1"}, FileOptions: FileOptionLimits{AnyFile: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close(ctx)
	status := func() string {
		var out []string
		for _, id := range []string{"r0000000000000000001-0001", "r0000000000000000002-0001", "r0000000000000000003-0001", "r0000000000000000004-0001"} {
			r, err := again.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(r.Status))
		}
		return strings.Join(out, " ")
	}
	if got := status(); got != "aborted running aborted waiting" {
		t.Fatalf("after n1 started again: %s", got)
	}
	if n, err := again.AbandonNodeRuns(ctx, "n2"); err != nil || n != 2 {
		t.Fatalf("abandoning n2's runs: %d %v", n, err)
	}
	if got := status(); got != "aborted aborted aborted aborted" {
		t.Fatalf("after n2 was forgotten: %s", got)
	}
	if _, err := again.AbandonNodeRuns(ctx, "n1"); err == nil {
		t.Error("a node abandoned its own runs as another's")
	}
}

// TestReload checks A5 with two Services on one DB: what one creates,
// replaces and drops, the other applies on Reload, schedule included,
// and the first sent a hint for each change.
func TestReload(t *testing.T) {
	c, ts, _ := newTwoNodes(t, StrategyLocal)
	ctx := context.Background()
	n2, err := New(ctx, ts.db, Options{Logger: testLogger(), Cluster: nodeView{c, "n2"}, Schedule: true, FileOptions: FileOptionLimits{AnyFile: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close(ctx)
	if n, err := n2.Reload(ctx); err != nil || n != 0 {
		t.Fatalf("a reload with nothing new: %d %v", n, err)
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "b", Connection: "lite", Resource: "items", Schedule: "@every 1h"}); err != nil {
		t.Fatal(err)
	}
	if n, err := n2.Reload(ctx); err != nil || n != 1 {
		t.Fatalf("reload after a create: %d %v", n, err)
	}
	got, err := n2.GetAdapter(ctx, "b")
	if err != nil || got.Revision != 1 || got.NextRun == nil {
		t.Fatalf("b on n2: %+v %v", got, err)
	}
	if _, _, err := ts.svc.PutAdapter(ctx, api.Adapter{Name: "b", Connection: "lite", Resource: "cheap", KeyColumns: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := n2.Reload(ctx); n != 1 {
		t.Fatalf("reload after a replace: %d", n)
	}
	if got, _ := n2.GetAdapter(ctx, "b"); got.Revision != 2 || got.Resource != "cheap" || got.NextRun != nil {
		t.Fatalf("b replaced on n2: %+v", got)
	}
	if err := ts.svc.DeleteAdapter(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := ts.svc.DropConnection(ctx, "lite", true); err != nil {
		t.Fatal(err)
	}
	if n, _ := n2.Reload(ctx); n != 2 {
		t.Fatalf("reload after a delete and a drop: %d", n)
	}
	if _, err := n2.GetAdapter(ctx, "b"); !errors.Is(err, ErrAdapterNotFound) {
		t.Fatalf("b after its delete: %v", err)
	}
	if _, ok := n2.sched.nextRun("b"); ok {
		t.Error("b's schedule outlived it on n2")
	}
	if _, err := n2.GetConnection(ctx, "lite"); !errors.Is(err, ErrConnectionNotFound) {
		t.Fatalf("lite after its drop: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	want := "n1:connection/lite n1:adapter/a n1:adapter/b n1:adapter/b n1:adapter/b n1:connection/lite"
	if got := strings.Join(c.hints, " "); got != want {
		t.Errorf("hints %s, want %s", got, want)
	}
}

// TestDispatch_TickFiresOnce checks L1's claim: while n1 and n2 both take
// themselves for the owner, a tick fires on one of them only, and so does
// a tick within half a period of it (the nodes' schedules need not be in
// phase); the next period's tick fires; a tick whose previous tick's run
// still goes on another node is skipped. Ticks claimed from both nodes at
// once fire once each.
func TestDispatch_TickFiresOnce(t *testing.T) {
	c, ts, n2 := newTwoNodes(t, StrategyLocal)
	ctx := context.Background()
	c.set(func(c *twoNodes) { c.believes["n1"], c.believes["n2"] = "n1", "n2" })
	tick := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	rec, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "schedule", Tick: tick})
	if err != nil || rec.Node != "n1" {
		t.Fatalf("n1's tick: %+v %v", rec, err)
	}
	ts.svc.WaitRun(ctx, rec.ID)
	for _, at := range []time.Time{tick, tick.Add(10 * time.Minute), tick.Add(-5 * time.Minute)} {
		if _, err := n2.StartRun(ctx, "a", RunOptions{Trigger: "schedule", Tick: at}); !errors.Is(err, errNotOwner) {
			t.Fatalf("n2's tick at %s, after n1 fired %s: %v", at, tick, err)
		}
	}
	rec, err = n2.StartRun(ctx, "a", RunOptions{Trigger: "schedule", Tick: tick.Add(time.Hour)})
	if err != nil || rec.Node != "n2" {
		t.Fatalf("the next period's tick on n2: %+v %v", rec, err)
	}
	n2.WaitRun(ctx, rec.ID)

	// A tick whose adapter's previous tick still runs, on another node,
	// is skipped there too (C2). The source changes, so that the run
	// reads a row (the block) rather than verify its key ranges.
	lite, err := ts.svc.GetConnection(ctx, "lite")
	if err != nil {
		t.Fatal(err)
	}
	sqliteExec(t, lite.Options["path"].(string), "UPDATE items SET name = 'plum' WHERE id = 1")
	b := newBlock(ts, "a", 1)
	rec, err = ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "schedule", Tick: tick.Add(2 * time.Hour)})
	if err != nil || rec.Node != "n1" {
		t.Fatalf("n1's tick: %+v %v", rec, err)
	}
	<-b.reached
	if going, err := n2.StartRun(ctx, "a", RunOptions{Trigger: "schedule", Tick: tick.Add(3 * time.Hour)}); !errors.Is(err, ErrRunInProgress) || going.ID != rec.ID {
		t.Fatalf("n2's tick while n1's run goes: %+v %v", going, err)
	}
	close(b.release)
	ts.svc.WaitRun(ctx, rec.ID)
	tick = tick.Add(3 * time.Hour)

	// Claims from both nodes at once, 10 ticks: each fires once.
	var mu sync.Mutex
	fired := map[time.Time][]string{}
	var wg sync.WaitGroup
	for _, svc := range []*Service{ts.svc, n2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				at := tick.Add(time.Duration(2+i) * time.Hour)
				a, _ := svc.adapters.active("a")
				_, ok, err := svc.claimTick(ctx, a, at)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					fired[at] = append(fired[at], svc.self)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for i := range 10 {
		at := tick.Add(time.Duration(2+i) * time.Hour)
		if len(fired[at]) != 1 {
			t.Errorf("tick %s fired on %v", at, fired[at])
		}
	}
}

// TestDispatch_RoundRobin checks L2: successive runs alternate over the
// active nodes, from whichever node they are asked of; a node that does
// not answer is skipped for the next (fail over), and a draining node is
// out of the rotation.
func TestDispatch_RoundRobin(t *testing.T) {
	shortWaits(t)
	_, ts, n2 := newTwoNodes(t, StrategyRoundRobin)
	ctx := context.Background()
	var on []string
	for i := range 6 {
		svc := ts.svc
		if i%3 == 2 {
			svc = n2 // placed from the other node too
		}
		rec, err := svc.StartRun(ctx, "a", RunOptions{Trigger: "api"})
		if err != nil {
			t.Fatal(err)
		}
		end, err := svc.WaitRun(ctx, rec.ID)
		if err != nil || end.Status != RunSucceeded {
			t.Fatalf("run %d: %+v %v", i, end, err)
		}
		on = append(on, end.Node)
	}
	for i := 1; i < len(on); i++ {
		if on[i] == on[i-1] {
			t.Fatalf("runs ran on %v: two in a row on one node", on)
		}
	}
	t.Logf("6 runs on %v", on)
}

// TestDispatch_RoundRobinFailOver checks that a round-robin run skips a
// node that does not answer, and one that is draining.
func TestDispatch_RoundRobinFailOver(t *testing.T) {
	c, ts, _ := newTwoNodes(t, StrategyRoundRobin)
	ctx := context.Background()
	for _, mark := range []func(c *twoNodes){
		func(c *twoNodes) { c.down["n2"] = true },
		func(c *twoNodes) { c.down["n2"] = false; c.draining["n2"] = true; c.active["n2"] = false },
	} {
		c.set(mark)
		for range 3 {
			rec, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "api"})
			if err != nil {
				t.Fatal(err)
			}
			end, _ := ts.svc.WaitRun(ctx, rec.ID)
			if end.Status != RunSucceeded || end.Node != "n1" {
				t.Fatalf("with n2 away: %+v", end)
			}
		}
	}
	// n1 draining too: no active node takes it.
	c.set(func(c *twoNodes) { c.draining["n1"] = true; c.active["n1"] = false })
	if _, err := ts.svc.StartRun(ctx, "a", RunOptions{Trigger: "api"}); !errors.Is(err, ErrNodeUnreachable) {
		t.Fatalf("no active node: %v", err)
	}
}
