package placement

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster"
)

// Placement answers package adapters' questions about where runs go
// (adapters.Cluster) from this node's view of the membership: the owner of
// a name by weighted rendezvous over the active nodes (cluster.K6), the
// rotation of round-robin adapters, the single node of single-node
// adapters, and hand-offs to another node's HTTP API with the cluster
// credential (handoff.go, cluster.K8). Start attaches the adapters
// service: definitions are then reread on hints and periodically
// (definitions.go, cluster.K9) and ownership moves are counted
// (ownership.go). Safe for concurrent use.
type Placement struct {
	m  *cluster.Membership
	h  *handOffClient
	d  *definitionsSync
	o  *ownership
	k  *nodeKeeper      // nil without a node list
	pk *partitionKeeper // nil when this node keeps no partition table
	// fence is the last answer of member (fenceIn, fenceOut), so that a
	// change is logged once (fence.go).
	fence atomic.Int32
	// deadRunsEnded holds "node/incarnation" of the failed nodes whose
	// runs this node ended (deadruns.go); the placement loop's alone.
	deadRunsEnded map[string]bool

	started bool
	svc     *adapters.Service // set by Start
	stopc   chan struct{}
	donec   chan struct{}
}

var _ adapters.Cluster = (*Placement)(nil)

// singleNodeName is the name rendezvous places to pick the single node of
// single-node adapters (adapters.L3): one name, so that every such
// adapter goes to the same node.
const singleNodeName = "\x00single-node"

// New returns the placement of m's cluster, whose node list is
// list (cluster.K11; nil: none, the membership alone).
func New(m *cluster.Membership, list *NodeList) *Placement {
	p := &Placement{m: m, h: newHandOffClient(m), d: newDefinitionsSync(m), o: newOwnership(m),
		deadRunsEnded: map[string]bool{}, stopc: make(chan struct{}), donec: make(chan struct{})}
	if list != nil {
		p.k = newNodeKeeper(m, list)
		p.k.member = p.member
		p.o.cs = append(p.o.cs, p.k.mismatched)
	}
	return p
}

// Start attaches svc and starts the placement's loop: it sends the hints
// of this node's definition changes, rereads the definitions on the
// others' hints and every DefinitionsRefresh (cluster.K9), and recomputes the
// owners of the adapters when members change or definitions do. Call it
// once; Close stops it.
func (p *Placement) Start(svc *adapters.Service) error {
	if err := p.o.register(p.m.Config().Registerer); err != nil {
		return err
	}
	if p.pk != nil {
		if err := p.pk.register(p.m.Config().Registerer); err != nil {
			p.o.unregister(p.m.Config().Registerer)
			return err
		}
	}
	p.started = true
	p.svc = svc
	if p.k != nil {
		p.k.start(svc)
	}
	if p.pk != nil {
		go p.pk.loop()
	}
	go p.loop(svc)
	return nil
}

// Forget removes node id, which will not come back, from the cluster
// (cluster.K10): from serf (Membership.Forget) and the node list, and ends
// the runs it was running (code node_failed, deadruns.go). Its share moves
// to the others. An id that is neither a member, nor in the node list,
// nor the node of a run in progress is cluster.ErrNotMember (a mistyped
// id must not read as done); a forget asked again after one that failed
// half-way still finishes it.
func (p *Placement) Forget(ctx context.Context, id string) error {
	_, member := p.m.Node(id)
	if err := p.m.Forget(ctx, id); err != nil {
		return err
	}
	listed := false
	if p.k != nil {
		existed, err := p.k.list.forget(ctx, id)
		if err != nil {
			return err
		}
		listed = existed
		p.k.forgotten(id)
	}
	ended := 0
	if p.svc != nil {
		n, err := p.svc.AbandonNodeRuns(ctx, id)
		if err != nil {
			return fmt.Errorf("cluster: node %s forgotten; ending its runs: %w", id, err)
		}
		if n > 0 {
			p.m.Logger().Warn("runs of a forgotten node ended", "node", id, "runs", n, "code", "node_failed")
		}
		ended = n
	}
	if !member && !listed && ended == 0 {
		return fmt.Errorf("%w: %s is neither a member this node knows nor in the node list, and runs nothing", cluster.ErrNotMember, id)
	}
	return nil
}

// Close stops the loop started by Start and writes this node's entry of
// the node list a last time (a draining node records itself left).
func (p *Placement) Close() {
	if !p.started {
		return
	}
	p.started = false
	close(p.stopc)
	<-p.donec
	if p.pk != nil {
		p.pk.stop()
		p.pk.unregister(p.m.Config().Registerer)
	}
	if p.k != nil {
		p.k.writeSelf(true)
	}
	p.o.unregister(p.m.Config().Registerer)
}

// loop is the goroutine of Start: the one reader of the membership's
// Changed and Hints channels.
func (p *Placement) loop(svc *adapters.Service) {
	defer close(p.donec)
	refresh := time.NewTicker(p.m.Config().DefinitionsRefresh)
	defer refresh.Stop()
	// Runs in progress are told through the node's tags (run), read here
	// every second: they change at most with each run's start and end.
	runs := time.NewTicker(time.Second)
	defer runs.Stop()
	heartbeat := time.NewTicker(p.m.Config().Heartbeat)
	defer heartbeat.Stop()
	p.updateOwners(svc)
	for {
		select {
		case <-p.stopc:
			return
		case h := <-p.d.out:
			p.d.send(h)
		case h := <-p.m.Hints():
			if !p.d.fromOther(h) {
				continue
			}
			if p.d.reload(svc, "hint") > 0 {
				p.updateOwners(svc)
			}
		case <-refresh.C:
			if p.d.reload(svc, "periodic") > 0 {
				p.updateOwners(svc)
			}
		case <-p.m.Changed():
			p.updateOwners(svc)
			if p.pk != nil {
				p.pk.poke()
			}
			if p.k != nil {
				p.k.selfChanged()
				p.k.markFailed()
			}
			p.endDeadRuns()
		case <-heartbeat.C:
			if p.k != nil {
				p.k.writeSelf(false)
				p.k.read()
				p.k.markFailed()
			}
			p.endDeadRuns()
		case <-runs.C:
			if err := p.m.SetRunsInProgress(svc.RunsInProgress()); err != nil {
				p.m.Logger().Warn("telling the runs in progress", "err", err)
			}
		}
	}
}

// updateOwners recomputes the owner of every adapter of svc.
func (p *Placement) updateOwners(svc *adapters.Service) {
	var names []string
	for _, a := range svc.ListAdapters() {
		if len(names) == 0 || names[len(names)-1] != a.Name {
			names = append(names, a.Name)
		}
	}
	p.o.update(names, p.Owner)
}

// Self returns this node's id.
func (p *Placement) Self() string { return p.m.ID() }

// Draining reports whether this node declared itself draining.
func (p *Placement) Draining() bool {
	return p.m.Declared() == cluster.Draining
}

// nodes returns the members, this node in the state it declared last
// (which its own serf reports back only a moment later), or joining while
// it is not a member the others agree on (member): such a node owns no
// adapter, no partition and no place in the rotation.
func (p *Placement) nodes() []cluster.Node {
	declared := p.m.Declared()
	if live(declared) && !p.member() {
		declared = cluster.Joining
	}
	ns := p.m.Nodes()
	for i := range ns {
		if ns[i].Self {
			ns[i].State = declared
		}
	}
	return ns
}

// candidates returns the members in one of states, as rendezvous
// candidates, in id order.
func (p *Placement) candidates(states ...cluster.State) []Candidate {
	var out []Candidate
	for _, n := range p.nodes() {
		if slices.Contains(states, n.State) {
			out = append(out, Candidate{ID: n.ID, Weight: n.Tags.Weight})
		}
	}
	return out
}

// Owner returns the node that owns name: weighted rendezvous over the
// active nodes (cluster.K6). A draining, failed, left or joining node owns
// nothing; a member whose failure is not confirmed yet (cluster.K3) still does.
func (p *Placement) Owner(name string) (string, bool) {
	return Owner(name, p.candidates(cluster.Active))
}

// Active returns the active nodes' ids in id order.
func (p *Placement) Active() []string {
	var out []string
	for _, c := range p.candidates(cluster.Active) {
		out = append(out, c.ID)
	}
	return out
}

// SingleNode returns the node of single-node adapters: rendezvous of one
// fixed name over the nodes of the node list (cluster.K11) and the members
// that are not draining and did not leave for good, so that it stays put
// while its node is failed or restarting (its runs wait for it) and moves
// only when that node drains or is forgotten (cluster.K10). A member's
// live state wins over its entry. active reports whether it is active now.
func (p *Placement) SingleNode() (string, bool, bool) {
	weights := map[string]int{}
	if p.k != nil {
		for _, r := range p.k.all() {
			if r.State != cluster.Draining && r.State != cluster.Left {
				weights[r.ID] = r.WeightOf()
			}
		}
	}
	states := map[string]cluster.State{}
	for _, n := range p.nodes() {
		states[n.ID] = n.State
		switch n.State {
		case cluster.Draining, cluster.Left:
			delete(weights, n.ID)
		default:
			weights[n.ID] = max(n.Tags.Weight, 1)
		}
	}
	var cands []Candidate
	for _, id := range slices.Sorted(maps.Keys(weights)) {
		cands = append(cands, Candidate{ID: id, Weight: weights[id]})
	}
	id, ok := Owner(singleNodeName, cands)
	if !ok {
		return "", false, false
	}
	return id, states[id] == cluster.Active, true
}

// Recorded returns node id's entry of the node list, as last read.
func (p *Placement) Recorded(id string) (cluster.NodeRecord, bool) {
	if p.k == nil {
		return cluster.NodeRecord{}, false
	}
	return p.k.entry(id)
}

// Records returns every entry of the node list, as last read.
func (p *Placement) Records() []cluster.NodeRecord {
	if p.k == nil {
		return nil
	}
	return p.k.all()
}

// Mismatches returns the config-file definitions that this node and node
// id do not share (cluster.K12), as last compared.
func (p *Placement) Mismatches(id string) []Mismatch {
	if p.k == nil {
		return nil
	}
	return p.k.mismatchesWith(id)
}

// SingleNodeWait is cluster.single_node_wait.
func (p *Placement) SingleNodeWait() time.Duration { return p.m.Config().SingleNodeWait }

// Gone reports whether node is failed, left, or not a member; never
// while this node is not a member itself (member): it hears from nobody,
// and so cannot tell.
func (p *Placement) Gone(node string) bool {
	if !p.member() {
		return false
	}
	n, ok := p.m.Node(node)
	return !ok || n.State == cluster.Failed || n.State == cluster.Left
}

// DefinitionsChanged sends the hint of a changed definition (cluster.K9).
func (p *Placement) DefinitionsChanged(kind, name string) { p.d.changed(kind, name) }
