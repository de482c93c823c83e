package adapters

import (
	"context"
	"time"
)

// Placement: where the runs of an adapter happen when this node is a
// member of a cluster. The Service decides by the adapter's Strategy
// (strategy.go) over a Cluster, which package cluster implements from
// serf's membership; alone (Options.Cluster nil) every run is local.
//
//	L1 local: a scheduled tick fires on the adapter's owner (Cluster.Owner)
//	   only, and only once the owner has claimed the tick in the adapter's
//	   fire record, a conditional single-row mutation: two nodes that both
//	   take themselves for the owner while the membership changes cannot
//	   both fire one tick. A tick whose previous tick's run (noted in the
//	   fire record) still runs or waits on a node that is not gone is
//	   skipped (C2 across the cluster). A manual run happens on the node
//	   asked.
//	L2 round-robin: the owner claims the tick, takes the next position of
//	   the adapter's rotation counter (an increment), and hands the run to
//	   the active node at that position (Cluster.Active, in id order); a
//	   node that cannot take it is skipped for the next (fail over). A
//	   manual run rotates likewise, from the node asked.
//	L3 single-node: every run goes to Cluster.SingleNode. While that node
//	   cannot take it the run waits (status waiting, naming the node), is
//	   offered again every waitRetry, and fails with code node_unreachable
//	   after Cluster.SingleNodeWait.
//	L4 partition-by-key: refused with ErrStrategyNotSupported (a tick
//	   records a failed run) until partitioned runs exist.
//	L5 A run handed to another node keeps the id the placing node gave it;
//	   its record names the node that runs it (node) and the one that
//	   placed it (placed_by). The node that runs a run alone saves its
//	   record: the placing node saves only a waiting one.
//	L6 A draining node takes no new run: a manual run asked of it and a
//	   run handed to it are refused with ErrNodeDraining (the placing node
//	   tries the next), and it owns no tick, since owners are chosen among
//	   active nodes.
//	L7 At start a node marks aborted only the runs it ran itself (node is
//	   its id) and the waiting runs it placed: the other nodes' runs go on.

// Cluster is what the Service needs of the cluster it is a member of.
// Every method but HandOff reads memory and returns at once.
type Cluster interface {
	// Self returns this node's id.
	Self() string
	// Draining reports whether this node is draining (L6).
	Draining() bool
	// Owner returns the node that fires the scheduled ticks of adapter
	// name: weighted rendezvous of the name over the active nodes; false
	// when no node is active.
	Owner(name string) (string, bool)
	// Active returns the ids of the active nodes in id order: the rotation
	// of round-robin adapters (L2).
	Active() []string
	// SingleNode returns the node that runs every single-node adapter
	// (L3) and whether it is active now; ok is false when the cluster
	// knows no node to pick.
	SingleNode() (node string, active bool, ok bool)
	// SingleNodeWait is how long a single-node run waits for its node.
	SingleNodeWait() time.Duration
	// Gone reports whether node failed (after the confirmation delay),
	// left, or is not a member: a run it was running will not end there.
	Gone(node string) bool
	// DefinitionsChanged announces that this node changed the API
	// definition of kind ("connection" or "adapter") name, so that the
	// others reread theirs (A5). It must not block.
	DefinitionsChanged(kind, name string)
	// HandOff asks node to start the run h now and returns its record.
	// Errors wrapping ErrNodeUnreachable (no answer, stopping, draining)
	// mean: try another node; others (ErrRunInProgress,
	// ErrAdapterNotFound, ...) are that node's answer.
	HandOff(ctx context.Context, node string, h HandOff) (RunRecord, error)
}

// HandOff is a run one node hands to another (L5).
type HandOff struct {
	// Adapter names the adapter; Revision is the revision of its
	// definition the placing node saw (0 for a config definition): a node
	// that knows an older one rereads its definitions first.
	Adapter  string `json:"adapter"`
	Revision int64  `json:"revision,omitempty"`
	// RunID is the id the placing node gave the run.
	RunID   string `json:"run_id"`
	Trigger string `json:"trigger"`
	Force   bool   `json:"force,omitempty"`
	// PlacedBy is the placing node's id.
	PlacedBy string `json:"placed_by"`
}
