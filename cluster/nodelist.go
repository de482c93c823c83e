package cluster

import (
	"context"
	"time"
)

// The persisted node list. Not built yet: it needs single-row conditional
// mutations in store (check-and-mutate). Nothing implements NodeList; it
// fixes the shape the next step fills in.

// NodeRecord is what the cluster remembers of one node across a full
// restart: enough to compute the same owners again before every node is
// back (K6 over the recorded nodes, not only the live ones).
type NodeRecord struct {
	ID     string
	Addr   string // gossip address
	API    string // HTTP API address
	Weight int
	Zone   string
	// State is the last state recorded: active, draining, failed or left.
	State State
	// LastHeard is when a node last saw it alive.
	LastHeard time.Time
}

// NodeList is the node list kept in the metadata table, one row per node
// (s\x00node\x00<id>), each change one single-row mutation: a node writes
// its own row (join, drain, leave); an operator's forget deletes a row,
// and is the only way a node leaves the list without leaving by itself.
// A failed node stays in the list until it returns or is forgotten, so a
// flap or a full restart moves nothing.
type NodeList interface {
	// Nodes returns every recorded node, ordered by id.
	Nodes(ctx context.Context) ([]NodeRecord, error)
	// Put writes the record of a node.
	Put(ctx context.Context, r NodeRecord) error
	// Forget removes the record of a node that will not come back.
	Forget(ctx context.Context, id string) error
}
