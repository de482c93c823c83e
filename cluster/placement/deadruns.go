package placement

import (
	"context"
	"time"

	"github.com/snapstore/snapstore/cluster"
)

// The runs of a node confirmed failed (cluster.K3) will never end on that
// node: its run records would say running until it restarts or is
// forgotten. One survivor ends them (adapters.Service.EndNodeRuns): the
// rendezvous owner, over the active nodes, of a name derived from the
// dead node's id, so that every member that sees the failure picks the
// same one and the work spreads when several nodes die. The records are
// rewritten conditionally, so two survivors that disagree for a moment
// still end each run once. A forgotten node's runs are ended by the node
// that forgets it (Placement.Forget).

// deadRunsName is the name whose owner ends the runs of node.
func deadRunsName(node string) string { return "\x00runs-of/" + node }

// endDeadRuns ends, on this node when it is the survivor chosen for it,
// the runs of every member confirmed failed whose runs it has not ended
// yet in that incarnation; only on a member (Placement.member): a node
// that hears nobody sees every other node failed. A failed attempt is
// tried again at the next call.
func (p *Placement) endDeadRuns() {
	if p.svc == nil || !p.member() {
		return
	}
	self := p.m.ID()
	for _, n := range p.m.Nodes() {
		if n.Self || n.State != cluster.Failed {
			continue
		}
		key := n.ID + "/" + n.Tags.Incarnation
		if p.deadRunsEnded[key] {
			continue
		}
		if owner, ok := p.Owner(deadRunsName(n.ID)); !ok || owner != self {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ended, err := p.svc.EndNodeRuns(ctx, n.ID, "was confirmed failed")
		cancel()
		if err != nil {
			p.m.Logger().Warn("ending the runs of a failed node; trying again", "node", n.ID, "ended", ended, "err", err)
			continue
		}
		p.deadRunsEnded[key] = true
		if ended > 0 {
			p.m.Logger().Warn("runs of a failed node ended", "node", n.ID, "runs", ended, "code", "node_failed")
		}
	}
}
