package placement

import (
	"slices"

	"github.com/snapstore/snapstore/cluster"
)

// Departed reports whether node, an owner of partitions of a partitioned
// run in progress, will never write them, and says why: it was forgotten
// (neither a member nor in the node list), or it is confirmed failed or
// left and the partition table no longer gives it a partition (they
// moved: it was drained, or forgotten by another node first). A failed
// node that still owns partitions may come back and write them
// (cluster.K13: no failover), so it has not departed; the run waits for it
// up to cluster.transfer.owner_wait. Never while this node is not a
// member itself (member): it hears from nobody, and so cannot tell.
func (p *Placement) Departed(node string) (string, bool) {
	if node == p.m.ID() || !p.member() {
		return "", false
	}
	n, isMember := p.m.Node(node)
	rec, recorded := p.Recorded(node)
	st := n.State
	switch {
	case !isMember && !recorded:
		return "was forgotten", true
	case !isMember: // reaped by serf, still in the node list
		st = cluster.Failed
		if rec.State == cluster.Left {
			st = cluster.Left
		}
	}
	if (st != cluster.Failed && st != cluster.Left) || p.pk == nil {
		return "", false
	}
	if slices.Contains(p.pk.parts.Table().Owners, node) {
		return "", false
	}
	return "is " + st.String() + " and its partitions moved to other nodes", true
}
