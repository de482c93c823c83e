package placement

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/records"
)

// The node list (cluster.K11): what the cluster remembers of each node across a
// full restart, kept in the metadata table that the nodes share, one
// record per node (records of kind "cluster.node", named by the node id),
// each change one conditional single-row mutation
// (records.Store.CompareAndSet) from the value read, so that two
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
// that serf does not show yet as members failing since its start
// (cluster.Membership.Seed):
// for the confirmation delay they keep their state and their share of the
// work, so that the first nodes up after a full restart do not take the
// others' share in the meantime; nodes that do not come back turn failed.

// recordNode is the kind of the node list's records.
const recordNode = "cluster.node"

// nodeEntry is a record with the bytes it was read as, the condition of
// its next write.
type nodeEntry struct {
	rec cluster.NodeRecord
	raw []byte
}

// NodeList reads and writes the node list.
type NodeList struct{ rec *records.Store }

// NewNodeList returns the node list kept in rec.
func NewNodeList(rec *records.Store) *NodeList { return &NodeList{rec: rec} }

// Nodes returns every recorded node by id. A record that does not decode
// is skipped (and reported), never fatal.
func (l *NodeList) Nodes(ctx context.Context) (map[string]nodeEntry, error) {
	recs, err := l.rec.List(ctx, recordNode)
	if err != nil {
		return nil, fmt.Errorf("cluster: reading the node list: %w", err)
	}
	out := make(map[string]nodeEntry, len(recs))
	var errs []error
	for _, r := range recs {
		var rec cluster.NodeRecord
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
	raw, err := l.rec.Get(ctx, recordNode, id)
	switch {
	case errors.Is(err, records.ErrNotFound):
		return nodeEntry{}, nil
	case err != nil:
		return nodeEntry{}, err
	}
	var rec cluster.NodeRecord
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
func (l *NodeList) update(ctx context.Context, id string, edit func(r *cluster.NodeRecord, exists bool) bool) error {
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
		ok, err := l.rec.CompareAndSet(ctx, recordNode, id, e.raw, b)
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

// forget deletes node id's entry, whatever it holds; existed reports
// whether there was one.
func (l *NodeList) forget(ctx context.Context, id string) (existed bool, err error) {
	for range 5 {
		e, err := l.read(ctx, id)
		if err != nil {
			return false, fmt.Errorf("cluster: reading the entry of node %s: %w", id, err)
		}
		if e.raw == nil {
			return false, nil
		}
		ok, err := l.rec.CompareAndSet(ctx, recordNode, id, e.raw, nil)
		if err != nil {
			return true, fmt.Errorf("cluster: deleting the entry of node %s: %w", id, err)
		}
		if ok {
			return true, nil
		}
	}
	return true, fmt.Errorf("cluster: the entry of node %s kept changing under five deletes", id)
}
