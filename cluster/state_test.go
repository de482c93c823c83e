package cluster

import (
	"testing"
	"time"
)

// fakeClock is the state machine's clock in these tests: the tracker reads
// no clock, every call gets the time, so the test moves it by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time                    { return c.t }
func (c *fakeClock) advance(d time.Duration) time.Time { c.t = c.t.Add(d); return c.t }

func alive(id, st string) observation {
	return observation{id: id, addr: "127.0.0.1:7946", status: serfAlive, tags: map[string]string{tagState: st, tagWeight: "100"}}
}

func failed(id string) observation {
	o := alive(id, "active")
	o.status = serfFailed
	return o
}

func stateOf(t *testing.T, tr *tracker, now time.Time, id string) Node {
	t.Helper()
	for _, n := range tr.nodes(now) {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("no member %s", id)
	return Node{}
}

// TestTracker_FlapWithinDelayMovesNothing checks K3: a member serf reports
// failed, then alive again before the confirmation delay ends, stays
// active the whole time (no transition at all), and the flap is counted.
func TestTracker_FlapWithinDelayMovesNothing(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tr := newTracker("self", 30*time.Second)
	tr.observe(clk.now(), alive("a", "active"))

	clk.advance(time.Second)
	if tn, ok := tr.observe(clk.now(), failed("a")); ok {
		t.Fatalf("a failure report moved the state at once: %+v", tn)
	}
	failingSince := clk.now()
	for i := 0; i < 29; i++ {
		if ts := tr.tick(clk.advance(time.Second)); len(ts) != 0 {
			t.Fatalf("at +%ds: %+v", i+1, ts)
		}
		n := stateOf(t, tr, clk.now(), "a")
		if n.State != Active || !n.FailingSince.Equal(failingSince) {
			t.Fatalf("at +%ds: %+v", i+1, n)
		}
	}
	if tn, ok := tr.observe(clk.advance(500*time.Millisecond), alive("a", "active")); ok {
		t.Fatalf("coming back moved the state: %+v", tn)
	}
	n := stateOf(t, tr, clk.now(), "a")
	if n.State != Active || !n.FailingSince.IsZero() || tr.flaps != 1 {
		t.Fatalf("after the flap: %+v, flaps %d", n, tr.flaps)
	}
	// Long after: still nothing.
	if ts := tr.tick(clk.advance(time.Hour)); len(ts) != 0 {
		t.Fatalf("after an hour: %+v", ts)
	}
}

// TestTracker_FailedAfterDelay checks K3's other half: a member still
// failed when the delay has passed turns failed, at the first tick at or
// after the delay, and comes back to its declared state when serf sees it
// alive again.
func TestTracker_FailedAfterDelay(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tr := newTracker("self", 30*time.Second)
	tr.observe(clk.now(), alive("a", "active"))
	heard := clk.advance(10 * time.Second)
	tr.observe(heard, alive("a", "active"))
	tr.observe(clk.advance(time.Second), failed("a"))
	if ts := tr.tick(clk.advance(30*time.Second - time.Nanosecond)); len(ts) != 0 {
		t.Fatalf("before the delay: %+v", ts)
	}
	ts := tr.tick(clk.advance(time.Nanosecond))
	if len(ts) != 1 || ts[0].id != "a" || ts[0].from != Active || ts[0].to != Failed {
		t.Fatalf("at the delay: %+v", ts)
	}
	n := stateOf(t, tr, clk.now(), "a")
	if n.State != Failed || !n.Since.Equal(clk.now()) || n.Since.Sub(n.FailingSince) != 30*time.Second || !n.LastHeard.Equal(heard.Add(time.Second)) {
		t.Fatalf("failed member: %+v", n)
	}
	// Serf repeating its report changes nothing.
	if tn, ok := tr.observe(clk.advance(time.Minute), failed("a")); ok {
		t.Fatalf("a repeated failure report: %+v", tn)
	}
	// Back: to what it declares (a restarted node declares joining).
	tn, ok := tr.observe(clk.advance(time.Minute), alive("a", "joining"))
	if !ok || tn.from != Failed || tn.to != Joining || tr.flaps != 0 {
		t.Fatalf("return: %+v %v, flaps %d", tn, ok, tr.flaps)
	}
}

// TestTracker_DeclaredStatesAndLeave checks that an alive member is in the
// state it declares (joining, active, draining; anything else reads as
// joining), that a leave is left at once (K4), that a reaped member is
// forgotten and that the tracker never forgets itself.
func TestTracker_DeclaredStatesAndLeave(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tr := newTracker("self", 30*time.Second)
	tn, ok := tr.observe(clk.now(), alive("a", "joining"))
	if !ok || !tn.first || tn.to != Joining {
		t.Fatalf("first report: %+v", tn)
	}
	for _, step := range []struct {
		st   string
		want State
	}{{"active", Active}, {"draining", Draining}, {"active", Active}, {"failed", Joining}, {"", Joining}} {
		tr.observe(clk.advance(time.Second), alive("a", step.st))
		if n := stateOf(t, tr, clk.now(), "a"); n.State != step.want {
			t.Errorf("declared %q: state %s, want %s", step.st, n.State, step.want)
		}
	}
	tr.observe(clk.now(), failed("a")) // failing, then it leaves: left, no wait
	leave := alive("a", "active")
	leave.status = serfLeft
	tn, ok = tr.observe(clk.advance(time.Second), leave)
	if !ok || tn.to != Left {
		t.Fatalf("leave: %+v", tn)
	}
	if n := stateOf(t, tr, clk.now(), "a"); !n.FailingSince.IsZero() {
		t.Errorf("a member that left is still failing: %+v", n)
	}
	if ts := tr.tick(clk.advance(time.Hour)); len(ts) != 0 {
		t.Errorf("a left member turned %+v", ts)
	}
	if _, ok := tr.remove("a"); !ok || len(tr.nodes(clk.now())) != 0 {
		t.Errorf("reap: %+v", tr.nodes(clk.now()))
	}
	tr.observe(clk.now(), alive("self", "active"))
	if _, ok := tr.remove("self"); ok {
		t.Error("the tracker forgot itself")
	}
	if c := tr.counts(); c[Active] != 1 || len(tr.nodes(clk.now())) != 1 || !tr.nodes(clk.now())[0].Self {
		t.Errorf("counts %v nodes %+v", c, tr.nodes(clk.now()))
	}
}

// TestTracker_FirstSeenFailed checks a member learnt of as failed (from a
// push-pull after this node restarted): it shows what it declared until
// the delay confirms it failed.
func TestTracker_FirstSeenFailed(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tr := newTracker("self", 5*time.Second)
	tn, ok := tr.observe(clk.now(), failed("a"))
	if !ok || !tn.first || tn.to != Active {
		t.Fatalf("first seen failed: %+v", tn)
	}
	if n := stateOf(t, tr, clk.now(), "a"); !n.LastHeard.IsZero() || n.FailingSince.IsZero() {
		t.Fatalf("%+v", n)
	}
	if ts := tr.tick(clk.advance(5 * time.Second)); len(ts) != 1 || ts[0].to != Failed {
		t.Fatalf("after the delay: %+v", ts)
	}
}

func TestParseState(t *testing.T) {
	for _, s := range States {
		got, err := ParseState(s.String())
		if err != nil || got != s {
			t.Errorf("%s: %v %v", s, got, err)
		}
	}
	if _, err := ParseState("dead"); err == nil {
		t.Error("dead parsed")
	}
}

// TestTracker_Forget checks a forgotten member (K10): an alive one is not
// forgotten; a left one is dropped, serf's later reports of it as left or
// failed (its tombstone) are ignored, the node list does not seed it
// back, and a report of it alive is a join; serf's reap ends the memory.
func TestTracker_Forget(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tr := newTracker("self", 30*time.Second)
	tr.observe(clk.now(), alive("a", "active"))
	if _, ok := tr.forget("a"); ok || len(tr.nodes(clk.now())) != 1 {
		t.Fatal("an alive member was forgotten")
	}
	if _, ok := tr.forget("self"); ok {
		t.Fatal("the tracker forgot itself")
	}
	left := alive("a", "active")
	left.status = serfLeft
	tr.observe(clk.advance(time.Second), left)
	if tn, ok := tr.forget("a"); !ok || !tn.removed || len(tr.nodes(clk.now())) != 0 {
		t.Fatalf("forget of a left member: %+v %v %v", tn, ok, tr.nodes(clk.now()))
	}
	for _, o := range []observation{left, failed("a")} {
		if tn, ok := tr.observe(clk.advance(time.Second), o); ok {
			t.Errorf("a report of the forgotten member: %+v", tn)
		}
	}
	if _, ok := tr.seed(clk.now(), alive("a", "active"), Active, clk.now()); ok {
		t.Error("the forgotten member was seeded")
	}
	if len(tr.nodes(clk.now())) != 0 {
		t.Fatalf("the forgotten member is back: %v", tr.nodes(clk.now()))
	}
	tn, ok := tr.observe(clk.advance(time.Second), alive("a", "joining"))
	if !ok || !tn.first || tn.to != Joining {
		t.Fatalf("the forgotten member joins again: %+v %v", tn, ok)
	}
	tr.observe(clk.advance(time.Second), left)
	tr.forget("a")
	tr.remove("a") // serf reaped it
	if _, ok := tr.observe(clk.advance(time.Second), left); !ok {
		t.Error("after serf's reap the member is not forgotten any more")
	}
}
