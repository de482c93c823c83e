package placement

import (
	"github.com/snapstore/snapstore/cluster"
)

// The values of Placement.fence: the last answer of member, logged once
// per change.
const (
	fenceUnknown = iota
	fenceIn
	fenceOut
)

// live reports whether st is a state of a node in the cluster: joining,
// active or draining.
func live(st cluster.State) bool {
	return st == cluster.Joining || st == cluster.Active || st == cluster.Draining
}

// member reports whether this node is a member that the live members
// agree on, and so may write the records the nodes share: its entry of
// the node list, other nodes' entries (failed), the partition table, the
// fire records of the adapters it owns (cluster.K16). It is once, in this
// process, the node list as read recorded no other node joining, active
// or draining (the first node of a cluster, or one whose peers are all
// recorded failed or left), or serf showed alive, its failure not
// suspected, another node that the list records so: once it joined an
// existing member. From then on it stays one.
//
// serf's view is the one a stranger cannot fake: a node without the
// gossip key, or with a key the cluster no longer uses, hears no member,
// and a member it does not hear from is only seeded from the node list,
// failing since the node's start (cluster.K11); so such a node, which
// sees every other node failed after cluster.confirm_failure, records
// none of them failed, takes no partition and writes no entry of its
// own. Asking for a node the list records live, rather than any member,
// keeps out two strangers that hear each other (two nodes with one
// outdated key). Staying a member once joined is what lets the survivor
// of a two-node cluster record its dead peer failed and take its
// partitions: alone, a node cannot tell the others' death from its own
// isolation, and a member that lost them is more likely the former. The
// first node up after a full restart is not a member until another
// recorded node is back (or an operator forgets the others; Forget is the
// operator's decision, which the fence does not hold back). A network
// partition of members that had joined is not fenced: each side goes on.
//
// Without a node list the membership alone decides: every node is a
// member. Before the list was read once, no node is.
func (p *Placement) member() bool {
	if p.k == nil {
		return true
	}
	ok := p.k.inCluster()
	if !p.k.wasRead() {
		return false // not known yet: nothing to log
	}
	v := int32(fenceOut)
	if ok {
		v = fenceIn
	}
	if p.fence.Swap(v) != v {
		if ok {
			p.m.Logger().Info("this node joined the cluster: it writes the shared records (node list, partition table, fire records)")
		} else {
			p.m.Logger().Warn("this node has joined no node the node list records live: until it does, it writes no shared record (node list, partition table, fire records) and owns nothing",
				"recorded_live", p.k.othersLive())
		}
	}
	return ok
}

// inCluster is Placement.member from the node list last read.
func (k *nodeKeeper) inCluster() bool {
	k.mu.Lock()
	read, joined := k.readOnce, k.joined
	recorded := make(map[string]bool, len(k.entries))
	for id, e := range k.entries {
		if id != k.m.ID() && live(e.State) {
			recorded[id] = true
		}
	}
	k.mu.Unlock()
	if joined {
		return true
	}
	if !read {
		return false
	}
	ok := len(recorded) == 0
	for _, n := range k.m.Nodes() {
		if ok {
			break
		}
		ok = !n.Self && recorded[n.ID] && n.FailingSince.IsZero() && live(n.State)
	}
	if ok {
		k.mu.Lock()
		k.joined = true
		k.mu.Unlock()
	}
	return ok
}

// wasRead reports whether the node list was read in full once.
func (k *nodeKeeper) wasRead() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.readOnce
}

// othersLive counts the other nodes the node list last read records
// live.
func (k *nodeKeeper) othersLive() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for id, e := range k.entries {
		if id != k.m.ID() && live(e.State) {
			n++
		}
	}
	return n
}
