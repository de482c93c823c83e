package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// The node list (K11): what the cluster remembers of each node across a
// full restart, kept in the metadata table that the nodes share, one
// record per node (snapshot records of kind "cluster.node", named by the
// node id), each change one conditional single-row mutation
// (snapshot.DB.CompareAndSetRecord) from the value read, so that two
// writers of one entry never lose each other's change:
//
//   - a node writes its own entry: at start, when its state changes, every
//     Heartbeat (last heard, its config digests), and at a graceful stop
//     (a node that was draining records itself left);
//   - a node that sees another confirmed failed records it failed, if the
//     entry is still that incarnation's;
//   - an operator's forget deletes the entry: the only way a node leaves
//     the list without leaving by itself.
//
// A node that starts reads the list and counts the nodes recorded there
// that serf does not show yet as members failing since its start (seed):
// for the confirmation delay they keep their state and their share of the
// work, so that the first nodes up after a full restart do not take the
// others' share in the meantime; nodes that do not come back turn failed.

// recordNode is the kind of the node list's records.
const recordNode = "cluster.node"

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

// nodeEntry is a record with the bytes it was read as, the condition of
// its next write.
type nodeEntry struct {
	rec NodeRecord
	raw []byte
}

// NodeList reads and writes the node list.
type NodeList struct{ db *snapshot.DB }

// NewNodeList returns the node list kept in db's metadata table.
func NewNodeList(db *snapshot.DB) *NodeList { return &NodeList{db: db} }

// Nodes returns every recorded node by id. A record that does not decode
// is skipped (and reported), never fatal.
func (l *NodeList) Nodes(ctx context.Context) (map[string]nodeEntry, error) {
	recs, err := l.db.ListRecords(ctx, recordNode)
	if err != nil {
		return nil, fmt.Errorf("cluster: reading the node list: %w", err)
	}
	out := make(map[string]nodeEntry, len(recs))
	var errs []error
	for _, r := range recs {
		var rec NodeRecord
		if err := json.Unmarshal(r.Value, &rec); err != nil || rec.ID != r.Name {
			errs = append(errs, fmt.Errorf("entry %s does not decode", r.Name))
			continue
		}
		out[r.Name] = nodeEntry{rec: rec, raw: r.Value}
	}
	return out, errors.Join(errs...)
}

// read returns node id's entry; nil raw when there is none.
func (l *NodeList) read(ctx context.Context, id string) (nodeEntry, error) {
	raw, err := l.db.GetRecord(ctx, recordNode, id)
	switch {
	case errors.Is(err, snapshot.ErrRecordNotFound):
		return nodeEntry{}, nil
	case err != nil:
		return nodeEntry{}, err
	}
	var rec NodeRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nodeEntry{raw: raw}, nil // rewritten whole by its next writer
	}
	return nodeEntry{rec: rec, raw: raw}, nil
}

// update applies edit to node id's entry (zero with exists false when
// there is none) and writes it conditionally on the value read, again
// from a fresh read when another writer came first. edit returns false to
// write nothing. After an error of unknown outcome (store.S9) the entry is
// read: the write holds if it landed.
func (l *NodeList) update(ctx context.Context, id string, edit func(r *NodeRecord, exists bool) bool) error {
	for range 5 {
		e, err := l.read(ctx, id)
		if err != nil {
			return fmt.Errorf("cluster: reading the entry of node %s: %w", id, err)
		}
		rec := e.rec
		if !edit(&rec, e.raw != nil) {
			return nil
		}
		rec.ID = id
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		ok, err := l.db.CompareAndSetRecord(ctx, recordNode, id, e.raw, b)
		if err != nil {
			if cur, rerr := l.read(ctx, id); rerr == nil && bytes.Equal(cur.raw, b) {
				return nil
			}
			return fmt.Errorf("cluster: writing the entry of node %s: %w", id, err)
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("cluster: the entry of node %s kept changing under five writes", id)
}

// forget deletes node id's entry, whatever it holds.
func (l *NodeList) forget(ctx context.Context, id string) error {
	for range 5 {
		e, err := l.read(ctx, id)
		if err != nil {
			return fmt.Errorf("cluster: reading the entry of node %s: %w", id, err)
		}
		if e.raw == nil {
			return nil
		}
		ok, err := l.db.CompareAndSetRecord(ctx, recordNode, id, e.raw, nil)
		if err != nil {
			return fmt.Errorf("cluster: deleting the entry of node %s: %w", id, err)
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("cluster: the entry of node %s kept changing under five deletes", id)
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

// selfRecord returns this node's entry as it is now.
func (m *Membership) selfRecord(config map[string]string) NodeRecord {
	m.mu.Lock()
	t := m.self
	m.mu.Unlock()
	return NodeRecord{
		ID: m.id, Addr: m.addr(), API: t.API, Weight: t.Weight, Zone: t.Zone, Version: t.Version,
		Incarnation: t.Incarnation, State: t.State, LastHeard: m.now().UTC(), Config: config,
	}
}

// weightOf is a record's weight for placement.
func (r NodeRecord) weightOf() int {
	if r.Weight > 0 {
		return r.Weight
	}
	return DefaultWeight
}
