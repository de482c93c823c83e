package placement

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster"
)

// nodeKeeper keeps this node's entry of the node list (cluster.K11) and the
// entries last read of the others, and compares the config-file
// definitions of this node with theirs (cluster.K12). It runs on the placement
// loop; its reads for other goroutines take mu.
type nodeKeeper struct {
	m     *cluster.Membership
	list  *NodeList
	svc   *adapters.Service
	wrote cluster.State // the state of this node's last write
	// member is Placement.member: whether this node may write the list.
	member func() bool

	// mu guards entries, readOnce, joined and mismatches.
	mu         sync.Mutex
	entries    map[string]cluster.NodeRecord
	readOnce   bool                  // the list was read in full once
	joined     bool                  // this node was a member once (inCluster)
	mismatches map[string][]Mismatch // by the other node's id

	mismatched prometheus.Gauge
}

// Mismatch is one config-file definition that this node and another do
// not share (cluster.K12): Problem "differs" (both define it, differently) or
// "missing" (one of them does not define it); Nodes are the nodes, of the
// two, whose config file defines it.
type Mismatch struct {
	Kind, Name, Problem string
	Nodes               []string
}

func newNodeKeeper(m *cluster.Membership, list *NodeList) *nodeKeeper {
	k := &nodeKeeper{m: m, list: list, entries: map[string]cluster.NodeRecord{}, mismatches: map[string][]Mismatch{}, wrote: -1,
		mismatched: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snapstore_cluster_config_mismatches",
			Help: "cluster.Config-file definitions (connections, adapters) that this node defines differently from another alive node, or that only one of them defines.",
		})}
	k.member = k.inCluster
	return k
}

// start reads the list, seeds the membership with it and writes this
// node's entry.
func (k *nodeKeeper) start(svc *adapters.Service) {
	k.svc = svc
	k.read()
	k.m.Seed(k.all())
	k.writeSelf(false)
}

// ctx bounds one round of node-list I/O.
func (k *nodeKeeper) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// writeSelf writes this node's entry; stopping records a drained node
// left.
// Only a member (Placement.member) writes it: a node that cannot join
// never writes itself into the list of a cluster it is not part of.
func (k *nodeKeeper) writeSelf(stopping bool) {
	if !k.member() {
		return
	}
	rec := k.m.SelfRecord(k.svc.ConfigDigests(k.m.DigestKey()))
	if stopping && rec.State == cluster.Draining {
		rec.State = cluster.Left
	}
	ctx, cancel := k.ctx()
	defer cancel()
	err := k.list.update(ctx, k.m.ID(), func(r *cluster.NodeRecord, _ bool) bool { *r = rec; return true })
	if err != nil {
		k.m.Logger().Warn("writing this node's entry of the node list", "err", err)
		return
	}
	k.wrote = rec.State
	k.mu.Lock()
	k.entries[rec.ID] = rec
	k.mu.Unlock()
}

// selfChanged writes this node's entry when its declared state changed
// since the last write.
func (k *nodeKeeper) selfChanged() {
	if k.m.Declared() != k.wrote {
		k.writeSelf(false)
	}
}

// read rereads the list and compares the config digests.
func (k *nodeKeeper) read() {
	ctx, cancel := k.ctx()
	defer cancel()
	es, err := k.list.Nodes(ctx)
	if err != nil {
		k.m.Logger().Warn("reading the node list", "err", err)
		if es == nil {
			return
		}
	}
	entries := make(map[string]cluster.NodeRecord, len(es))
	recorded := make(map[string]bool, len(es))
	for id, e := range es {
		entries[id] = e.rec
		recorded[id] = true
	}
	if err == nil {
		k.m.ForgetUnrecorded(recorded)
	}
	k.mu.Lock()
	k.entries = entries
	k.readOnce = k.readOnce || err == nil
	k.mu.Unlock()
	if k.svc != nil {
		k.compare(k.svc.ConfigDigests(k.m.DigestKey()))
	}
}

// markFailed records failed every member that this node sees failed
// (confirmed, cluster.K3) and whose entry still holds the incarnation that
// failed and another state; only on a member (Placement.member): a node
// that hears nobody sees every other node failed.
func (k *nodeKeeper) markFailed() {
	if !k.member() {
		return
	}
	for _, n := range k.m.Nodes() {
		if n.State != cluster.Failed || n.Self {
			continue
		}
		k.mu.Lock()
		e, ok := k.entries[n.ID]
		k.mu.Unlock()
		if !ok || e.State == cluster.Failed || e.State == cluster.Left || e.Incarnation != n.Tags.Incarnation {
			continue
		}
		ctx, cancel := k.ctx()
		err := k.list.update(ctx, n.ID, func(r *cluster.NodeRecord, exists bool) bool {
			if !exists || r.Incarnation != n.Tags.Incarnation || r.State == cluster.Failed || r.State == cluster.Left {
				return false
			}
			r.State = cluster.Failed
			return true
		})
		cancel()
		if err != nil {
			k.m.Logger().Warn("recording a failed node in the node list", "node", n.ID, "err", err)
			continue
		}
		k.m.Logger().Info("failed node recorded in the node list", "node", n.ID)
		k.mu.Lock()
		e.State = cluster.Failed
		k.entries[n.ID] = e
		k.mu.Unlock()
	}
}

// compare computes the mismatches of mine, this node's config digests,
// with those of every other node alive now (cluster.K12), logs the new ones and
// sets the gauge.
func (k *nodeKeeper) compare(mine map[string]string) {
	alive := map[string]bool{}
	for _, n := range k.m.Nodes() {
		if !n.Self && (n.State == cluster.Joining || n.State == cluster.Active || n.State == cluster.Draining) && n.FailingSince.IsZero() {
			alive[n.ID] = true
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	fresh := map[string][]Mismatch{}
	names := map[string]bool{}
	for id, e := range k.entries {
		if !alive[id] {
			continue
		}
		var ms []Mismatch
		for _, key := range slices.Sorted(maps.Keys(unionKeys(mine, e.Config))) {
			a, inMine := mine[key]
			b, inTheirs := e.Config[key]
			kind, name := splitDefKey(key)
			switch {
			case inMine && inTheirs && a != b:
				ms = append(ms, Mismatch{Kind: kind, Name: name, Problem: "differs", Nodes: sortedPair(k.m.ID(), id)})
			case inMine && !inTheirs:
				ms = append(ms, Mismatch{Kind: kind, Name: name, Problem: "missing", Nodes: []string{k.m.ID()}})
			case !inMine && inTheirs:
				ms = append(ms, Mismatch{Kind: kind, Name: name, Problem: "missing", Nodes: []string{id}})
			default:
				continue
			}
			names[key] = true
		}
		if len(ms) > 0 {
			fresh[id] = ms
		}
		if !slices.EqualFunc(ms, k.mismatches[id], func(a, b Mismatch) bool { return a.Kind == b.Kind && a.Name == b.Name && a.Problem == b.Problem }) {
			for _, mm := range ms {
				k.m.Logger().Warn("config file mismatch with another node: fix the config files so that every node defines the same connections and adapters",
					"node", id, "kind", mm.Kind, "name", mm.Name, "problem", mm.Problem, "defined_by", mm.Nodes)
			}
		}
	}
	k.mismatches = fresh
	k.mismatched.Set(float64(len(names)))
}

// entry returns the entry last read of node id.
func (k *nodeKeeper) entry(id string) (cluster.NodeRecord, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.entries[id]
	return r, ok
}

// all returns every entry last read.
func (k *nodeKeeper) all() []cluster.NodeRecord {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Collect(maps.Values(k.entries))
}

// mismatchesWith returns the mismatches of this node with node id.
func (k *nodeKeeper) mismatchesWith(id string) []Mismatch {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.mismatches[id])
}

// forgotten drops node id's entry from memory.
func (k *nodeKeeper) forgotten(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.entries, id)
	delete(k.mismatches, id)
}

// unionKeys returns the keys of a and b.
func unionKeys(a, b map[string]string) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// splitDefKey splits "kind/name".
func splitDefKey(key string) (string, string) {
	kind, name, _ := strings.Cut(key, "/")
	return kind, name
}

// sortedPair returns a and b in order.
func sortedPair(a, b string) []string {
	if b < a {
		return []string{b, a}
	}
	return []string{a, b}
}
