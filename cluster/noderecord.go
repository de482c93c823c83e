package cluster

import (
	"net"
	"time"
)

// A node's entry of the node list (K11), kept in the metadata table by
// package placement: what the cluster remembers of a node across a full
// restart. A node that starts counts the nodes recorded there that serf
// does not show yet as members failing since its start (Seed): for the
// confirmation delay they keep their state and their share of the work,
// so that the first nodes up after a full restart do not take the
// others' share in the meantime; nodes that do not come back turn failed.

// NodeRecord is one node's entry in the node list.
type NodeRecord struct {
	ID          string `json:"id"`
	Addr        string `json:"addr"` // gossip address
	API         string `json:"api"`  // HTTP API address
	Weight      int    `json:"weight"`
	Zone        string `json:"zone,omitempty"`
	Version     string `json:"version,omitempty"`
	Incarnation string `json:"incarnation"`
	// State is the state last recorded: what the node declared (joining,
	// active, draining), failed (recorded by another node), or left (a
	// drained node that stopped).
	State State `json:"state"`
	// LastHeard is when the entry was last written by the node itself.
	LastHeard time.Time `json:"last_heard"`
	// Config holds the digests of the node's config-file definitions,
	// "connection/NAME" or "adapter/NAME" to a digest (K12).
	Config map[string]string `json:"config,omitempty"`
}

// seedObservation is what a recorded node looks like to the tracker.
func (r NodeRecord) seedObservation() observation {
	tags := Tags{API: r.API, Weight: r.Weight, Zone: r.Zone, Version: r.Version, Incarnation: r.Incarnation, State: Joining}
	if r.State.declarable() {
		tags.State = r.State
	}
	return observation{id: r.ID, addr: r.Addr, tags: tags.encode()}
}

// Seed adds the nodes of the node list that this node's serf does not show
// yet (K11): as failing since now, in their recorded state, until serf
// reports them or the confirmation delay makes them failed.
func (m *Membership) Seed(recs []NodeRecord) {
	now := m.now()
	var ts []transition
	m.mu.Lock()
	for _, r := range recs {
		if _, _, err := net.SplitHostPort(r.Addr); err != nil || !validID.MatchString(r.ID) {
			continue
		}
		if t, ok := m.tr.seed(now, r.seedObservation(), r.State, r.LastHeard); ok {
			ts = append(ts, t)
		}
	}
	m.mu.Unlock()
	for _, t := range ts {
		m.log.Info("cluster member from the node list, not heard since this node started", "node", t.id, "recorded", t.to)
	}
	m.record(ts)
}

// SelfRecord returns this node's entry as it is now.
func (m *Membership) SelfRecord(config map[string]string) NodeRecord {
	m.mu.Lock()
	t := m.self
	m.mu.Unlock()
	return NodeRecord{
		ID: m.id, Addr: m.addr(), API: t.API, Weight: t.Weight, Zone: t.Zone, Version: t.Version,
		Incarnation: t.Incarnation, State: t.State, LastHeard: m.now().UTC(), Config: config,
	}
}

// WeightOf is a record's weight for placement.
func (r NodeRecord) WeightOf() int {
	if r.Weight > 0 {
		return r.Weight
	}
	return DefaultWeight
}
