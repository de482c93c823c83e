package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// State is a member's state as this package concludes it (K3, K4).
type State int

// The states of a member. A node declares joining, active or draining for
// itself (its tag); failed and left are what the others conclude from
// serf's reports.
const (
	// Joining: the node is in serf but not yet serving (it starts so and
	// declares active once its HTTP API answers).
	Joining State = iota
	// Active: the node serves and may be given work.
	Active
	// Draining: the node serves what it has but takes no new work.
	Draining
	// Failed: serf reported it failed and the confirmation delay passed
	// without it coming back (K3).
	Failed
	// Left: it left gracefully (K4).
	Left
)

// States lists every state in order.
var States = []State{Joining, Active, Draining, Failed, Left}

var stateNames = [...]string{"joining", "active", "draining", "failed", "left"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// ParseState parses a state's name.
func ParseState(s string) (State, error) {
	for i, n := range stateNames {
		if n == s {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("cluster: unknown state %q (want %s)", s, strings.Join(stateNames[:], ", "))
}

// MarshalText writes the state's name (JSON answers, logs, the node
// list).
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *State) UnmarshalText(b []byte) error {
	st, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// declarable reports whether a node may declare s for itself.
func (s State) declarable() bool { return s == Joining || s == Active || s == Draining }

// Node is one member as this node sees it.
type Node struct {
	// ID is the node id (K1), serf's node name.
	ID string
	// Addr is the advertised gossip address, host:port.
	Addr string
	// Tags are the node's decoded tags; RawTags are serf's map as sent
	// (keys a newer node sends are kept there).
	Tags    Tags
	RawTags map[string]string
	// State is the member's state; Since is when it entered it, by this
	// node's clock.
	State State
	Since time.Time
	// LastHeard is when serf last reported the member alive; for a member
	// serf reports alive now (memberlist probes it every probe interval)
	// it is the time of the answer.
	LastHeard time.Time
	// FailingSince is when serf reported the member failed, kept while
	// serf reports it so: while the confirmation delay runs (K3) the state
	// is still the one before, and a failed member has Since at least the
	// delay after it. Zero while serf reports the member alive or left.
	FailingSince time.Time
	// Self marks this node.
	Self bool
}

// serfStatus is serf's view of a member, the input of the state machine.
type serfStatus int

const (
	serfAlive serfStatus = iota
	serfFailed
	serfLeft // leaving or left
)

// observation is one report of serf about one member.
type observation struct {
	id     string
	addr   string
	status serfStatus
	tags   map[string]string
}

// transition is one change of a member's state, for logs and metrics.
// From is meaningless when first is set (a member seen for the first time);
// Removed marks a member serf reaped.
type transition struct {
	id       string
	from, to State
	first    bool
	removed  bool
}

// member is the state machine's record of one member.
type member struct {
	node Node
	// status is serf's last report of the member.
	status serfStatus
	// seeded marks a member known from the node list only (seed), not
	// yet reported by serf.
	seeded bool
}

// tracker is the state machine of K3 and K4: it turns serf's reports
// (observe), serf's reaping (remove) and the passing of time (tick) into
// each member's State. It does no I/O and reads no clock: every call gets
// the time, so a test drives it with a fake clock. Not safe for
// concurrent use; Membership guards it with its mutex.
type tracker struct {
	self    string
	confirm time.Duration
	members map[string]*member
	// forgotten holds the members forgotten (K10) that serf still lists
	// as left (its tombstone): reports of them are ignored until one says
	// the member is alive again, a join.
	forgotten map[string]bool
	// flaps counts failures that ended within the confirmation delay.
	flaps int
}

func newTracker(self string, confirm time.Duration) *tracker {
	return &tracker{self: self, confirm: confirm, members: map[string]*member{}, forgotten: map[string]bool{}}
}

// ignores reports whether observe ignores o: a report of a forgotten
// member that is not alive (serf's tombstone of it, K10), which serf's
// member list repeats until its tombstone timeout.
func (t *tracker) ignores(o observation) bool {
	return t.forgotten[o.id] && o.status != serfAlive
}

// observe applies one report of serf at now and returns the transition it
// caused, if any.
func (t *tracker) observe(now time.Time, o observation) (transition, bool) {
	if t.ignores(o) {
		return transition{}, false
	}
	delete(t.forgotten, o.id) // it came back, if forgotten: a node that joins
	tags := decodeTags(o.tags)
	m, ok := t.members[o.id]
	if !ok {
		m = &member{node: Node{ID: o.id, Self: o.id == t.self}}
		t.members[o.id] = m
	}
	m.node.Addr = o.addr
	m.node.Tags = tags
	m.node.RawTags = maps.Clone(o.tags)
	prev := m.node.State
	next := prev
	seeded := m.seeded
	m.seeded = false
	switch o.status {
	case serfAlive:
		if !m.node.FailingSince.IsZero() && prev != Failed && !seeded {
			t.flaps++ // back within the delay: nothing moved (K3)
		}
		m.node.FailingSince = time.Time{}
		m.node.LastHeard = now
		next = tags.State
	case serfFailed:
		if ok && m.status == serfAlive {
			m.node.LastHeard = now // it was alive until this report
		}
		if m.node.FailingSince.IsZero() {
			m.node.FailingSince = now
		}
		if !ok {
			next = tags.State // first seen failed: what it declared, until confirmed
		}
		if prev != Failed && now.Sub(m.node.FailingSince) >= t.confirm {
			next = Failed
		}
	case serfLeft:
		if ok && m.status == serfAlive {
			m.node.LastHeard = now
		}
		m.node.FailingSince = time.Time{}
		next = Left
	}
	m.status = o.status
	if !ok || next != prev {
		m.node.State = next
		m.node.Since = now
		return transition{id: o.id, from: prev, to: next, first: !ok}, true
	}
	return transition{}, false
}

// seed adds a member known from the node list (K11) but not (yet) from
// serf, in state st as recorded, last heard at heard: a member recorded
// joining, active or draining counts as failing since now, so that it
// keeps its state, and its share of the work, for the confirmation delay
// (K3) before it turns failed; one recorded failed or left is so at once.
// A member this tracker knows already, and this node, are left alone.
func (t *tracker) seed(now time.Time, o observation, st State, heard time.Time) (transition, bool) {
	if _, ok := t.members[o.id]; ok || o.id == t.self || t.forgotten[o.id] {
		return transition{}, false
	}
	m := &member{seeded: true, node: Node{ID: o.id, Addr: o.addr, Tags: decodeTags(o.tags), RawTags: maps.Clone(o.tags),
		State: st, Since: now, LastHeard: heard}}
	switch st {
	case Failed:
		m.status = serfFailed
	case Left:
		m.status = serfLeft
	default:
		m.status = serfFailed
		m.node.FailingSince = now
	}
	t.members[o.id] = m
	return transition{id: o.id, to: st, first: true}, true
}

// tick moves to failed every member whose confirmation delay has passed at
// now (K3).
func (t *tracker) tick(now time.Time) []transition {
	var out []transition
	for _, id := range slices.Sorted(maps.Keys(t.members)) {
		m := t.members[id]
		if m.status != serfFailed || m.node.State == Failed {
			continue
		}
		if now.Sub(m.node.FailingSince) >= t.confirm {
			out = append(out, transition{id: id, from: m.node.State, to: Failed})
			m.node.State = Failed
			m.node.Since = now
		}
	}
	return out
}

// remove forgets a member serf reaped (after its reconnect or tombstone
// timeout).
func (t *tracker) remove(id string) (transition, bool) {
	delete(t.forgotten, id) // serf reports it no more
	m, ok := t.members[id]
	if !ok || id == t.self {
		return transition{}, false
	}
	delete(t.members, id)
	return transition{id: id, from: m.node.State, to: m.node.State, removed: true}, true
}

// forget drops member id, forgotten (K10), unless serf reports it alive
// (it came back): serf keeps it as left for its tombstone timeout, and
// those reports are ignored until one says it is alive again.
func (t *tracker) forget(id string) (transition, bool) {
	if m, ok := t.members[id]; id == t.self || ok && m.status == serfAlive && !m.seeded {
		return transition{}, false
	}
	m, ok := t.members[id]
	t.forgotten[id] = true
	if !ok {
		return transition{}, false
	}
	delete(t.members, id)
	return transition{id: id, from: m.node.State, to: m.node.State, removed: true}, true
}

// nodes returns every member at now, ordered by id. A member serf reports
// alive was heard now.
func (t *tracker) nodes(now time.Time) []Node {
	out := make([]Node, 0, len(t.members))
	for _, id := range slices.Sorted(maps.Keys(t.members)) {
		m := t.members[id]
		n := m.node
		n.RawTags = maps.Clone(n.RawTags)
		if m.status == serfAlive {
			n.LastHeard = now
		}
		out = append(out, n)
	}
	return out
}

// counts returns the number of members in each state.
func (t *tracker) counts() map[State]int {
	c := map[State]int{}
	for _, m := range t.members {
		c[m.node.State]++
	}
	return c
}
