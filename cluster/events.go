package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/serf/serf"
)

// What nodes tell each other through serf besides membership (K7): hints,
// serf user events that say "something changed in HBase, read it again",
// and the drain and resume queries, which ask one node to change the
// state it declares. Neither carries data: the hint names what changed,
// the query the node.

// Hint is a serf user event this node received: a name and a payload of
// at most serf's 512 bytes, both together.
type Hint struct {
	Name    string
	Payload []byte
}

// hintBuffer is how many hints wait for their reader before new ones are
// dropped: a hint says only "read again", and readers also read
// periodically (K9).
const hintBuffer = 64

// Queries of a node's state, answered by the node named in their payload.
const (
	queryDrain  = "snapstore-drain"
	queryResume = "snapstore-resume"
)

// SendHint broadcasts a hint to every member, this node included (serf
// delivers a user event to its sender too). Coalescing is off: serf
// would keep only the last of several hints of one name.
func (m *Membership) SendHint(name string, payload []byte) error {
	if err := m.serf.UserEvent(name, payload, false); err != nil {
		return fmt.Errorf("cluster: sending hint %s: %w", name, err)
	}
	return nil
}

// HintDropped counts a hint dropped before it was sent, its queue full
// (snapstore_cluster_hints_dropped_total).
func (m *Membership) HintDropped() { m.metrics.hintsDropped.Inc() }

// Hints returns the channel of the hints this node receives (K9). Hints
// that find it full are dropped and counted.
func (m *Membership) Hints() <-chan Hint { return m.hints }

// deliverHint passes a user event to Hints without waiting (K5).
func (m *Membership) deliverHint(e serf.UserEvent) {
	select {
	case m.hints <- Hint{Name: e.Name, Payload: e.Payload}:
	default:
		m.metrics.hintsDropped.Inc()
		m.log.Debug("hint dropped: its reader is behind", "name", e.Name)
	}
}

// answerQueries answers the drain and resume queries, each by declaring
// the state it asks for, on a goroutine of its own: answering sends a
// message, which the event loop must not do (K5).
func (m *Membership) answerQueries() {
	defer m.wg.Done()
	for {
		var q *serf.Query
		select {
		case <-m.stopc:
			return
		case q = <-m.queries:
		}
		want := Draining
		if q.Name == queryResume {
			want = Active
		}
		answer := "ok"
		if string(q.Payload) != m.id {
			answer = "error: the query names node " + string(q.Payload)
		} else if err := m.SetState(want); err != nil {
			answer = "error: " + err.Error()
		} else {
			m.log.Info("node state changed at the request of another node", "node", m.id, "state", want, "from", q.SourceNode())
		}
		if err := q.Respond([]byte(answer)); err != nil {
			m.log.Warn("answering a serf query", "name", q.Name, "from", q.SourceNode(), "err", err)
		}
	}
}

// Drain makes node id declare itself draining: it takes no new work and
// owns nothing, and finishes what it has (K10). id may be this node or
// another member, asked through a serf query.
func (m *Membership) Drain(ctx context.Context, id string) error {
	return m.declare(ctx, id, Draining)
}

// Resume makes a draining node id active again.
func (m *Membership) Resume(ctx context.Context, id string) error {
	return m.declare(ctx, id, Active)
}

// ErrNotMember: the node named is not a member this node knows.
var ErrNotMember = errors.New("cluster: not a member")

// ErrNodeNotAlive: the node named is failed or left, so it cannot change
// its own state.
var ErrNodeNotAlive = errors.New("cluster: the node is not alive")

// ErrNodeAlive: forget of a node serf sees alive (or whose failure is not
// confirmed yet: K3).
var ErrNodeAlive = errors.New("cluster: the node is alive")

// eventForget is the user event that tells every member that the node
// its payload names was forgotten (K10).
const eventForget = "snapstore-forget"

// Forget removes node id, which will not come back, from the membership
// (K10): serf stops trying to reconnect to it and every member counts it
// left (serf's force-leave), and drops it (the forget event; the node
// list's entry, gone, for one that missed it). Only a failed or left
// member may be forgotten: ErrNodeAlive otherwise. A node serf does not
// know is nothing to do here. A forgotten node that starts again joins
// as a new one would.
//
// serf's force-leave with prune is not used: it erases the member a few
// seconds after a leave intent that found it alive, even when it came
// back meanwhile, and serf then never lists that node again while
// memberlist talks to it.
func (m *Membership) Forget(ctx context.Context, id string) error {
	if id == m.id {
		return fmt.Errorf("%w: node %s cannot forget itself", ErrNodeAlive, id)
	}
	n, ok := m.Node(id)
	if !ok {
		return nil
	}
	if n.State != Failed && n.State != Left {
		return fmt.Errorf("%w: %s is %s; drain it and stop it, or wait until it is confirmed failed (cluster.confirm_failure), then forget it",
			ErrNodeAlive, id, describeState(n))
	}
	errc := make(chan error, 1)
	go func() { errc <- m.serf.RemoveFailedNode(id) }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("cluster: forgetting node %s: %w", id, err)
		}
	case <-ctx.Done():
		return fmt.Errorf("cluster: forgetting node %s: %w", id, ctx.Err())
	}
	m.forgotten(id)
	if err := m.serf.UserEvent(eventForget, []byte(id), false); err != nil {
		m.log.Warn("telling the members that a node was forgotten; they drop it at their next read of the node list", "node", id, "err", err)
	}
	m.log.Warn("cluster member forgotten", "node", id, "state", n.State)
	return nil
}

// forgotten drops node id, forgotten, from the state machine, unless
// serf reports it alive (it came back).
func (m *Membership) forgotten(id string) {
	m.mu.Lock()
	t, removed := m.tr.forget(id)
	m.mu.Unlock()
	if removed {
		m.record([]transition{t})
	}
}

// ForgetUnrecorded drops the members that serf reports left and that the
// node list does not hold (recorded: the ids it holds): an operator
// forgot them, and this node missed the forget event (K10, K11).
func (m *Membership) ForgetUnrecorded(recorded map[string]bool) {
	var ids []string
	m.mu.Lock()
	for id, mem := range m.tr.members {
		if id != m.id && !mem.seeded && mem.status == serfLeft && !recorded[id] {
			ids = append(ids, id)
		}
	}
	m.mu.Unlock()
	for _, id := range ids {
		m.log.Info("a left member the node list does not hold: forgotten", "node", id)
		m.forgotten(id)
	}
}

// declare makes node id declare state s (Draining or Active).
func (m *Membership) declare(ctx context.Context, id string, s State) error {
	if id == m.id {
		return m.SetState(s)
	}
	n, ok := m.Node(id)
	switch {
	case !ok:
		return fmt.Errorf("%w: %s", ErrNotMember, id)
	case n.State == Failed || n.State == Left || !n.FailingSince.IsZero():
		return fmt.Errorf("%w: %s is %s", ErrNodeNotAlive, id, describeState(n))
	}
	name := queryDrain
	if s == Active {
		name = queryResume
	}
	// A query, or its answer, may be lost on the way (gossip is UDP):
	// ask again until ctx ends. Declaring a state twice is declaring it
	// once.
	for attempt := 1; ; attempt++ {
		params := m.serf.DefaultQueryParams()
		params.FilterNodes = []string{id}
		params.Timeout = max(params.Timeout, queryWait)
		if d, ok := ctx.Deadline(); ok {
			params.Timeout = min(params.Timeout, d.Sub(m.now()))
		}
		if params.Timeout <= 0 {
			return fmt.Errorf("%w: node %s, asked %d times to declare itself %s", ErrNoAnswer, id, attempt-1, s)
		}
		resp, err := m.serf.Query(name, []byte(id), params)
		if err != nil {
			return fmt.Errorf("cluster: asking node %s to declare itself %s: %w", id, s, err)
		}
		select {
		case r, ok := <-resp.ResponseCh():
			resp.Close()
			if !ok {
				m.log.Warn("a serf query had no answer; asking again", "name", name, "node", id, "attempt", attempt)
				continue
			}
			if answer := string(r.Payload); answer != "ok" {
				return fmt.Errorf("cluster: node %s: %s", id, strings.TrimPrefix(answer, "error: "))
			}
			return nil
		case <-ctx.Done():
			resp.Close()
			return fmt.Errorf("%w: node %s: %w", ErrNoAnswer, id, ctx.Err())
		}
	}
}

// queryWait is how long one drain or resume query waits for its answer
// at least.
const queryWait = 5 * time.Second

// ErrNoAnswer: the node asked (drain, resume) did not answer in time.
var ErrNoAnswer = errors.New("cluster: the node did not answer")

// describeState says what a member is, for errors.
func describeState(n Node) string {
	if n.State != Failed && !n.FailingSince.IsZero() {
		return n.State.String() + ", reported failed by serf since " + n.FailingSince.UTC().Format("15:04:05")
	}
	return n.State.String()
}
