package transfer

import "context"

// Handler applies the batches a node receives: on a partitioned run's
// owner, the run writer of its partitions.
//
// Apply is called for each stream in seq order, one call at a time per
// stream, at most Config.MaxWorkers calls at once on the node; a batch
// already applied (its ACK was lost) is answered by the transport without
// a second call (X5). After an Outcome of CodeRewind, or when the stream's
// origin restarts it, a stream begins again at seq 1: a Handler that gets
// seq 1 of a stream it has state for drops that state first. from is the
// node that sent the batch, b.Origin the node that sent the stream (they
// differ for a forwarded batch, X6). The Batch and its slices are valid
// only until Apply returns. ctx ends when the connection or the transport
// does.
type Handler interface {
	Apply(ctx context.Context, from string, b *Batch) Outcome
	// Done tells that origin's run is over, committed or not; the Handler
	// drops what it keeps for it. It must not block.
	Done(origin string, run RunKey, committed bool)
}

// Outcome is a Handler's answer to a batch.
type Outcome struct {
	Code Code
	// To is the node a forwarded batch goes to.
	To string
	// Report is sent back with the ACK of an END batch: the owner's
	// report of the partition.
	Report []byte
	// Reason says why a batch was not applied (retry, rewind, refused);
	// it is logged by both nodes.
	Reason string
}

// Applied answers a batch that was applied; report is for an END batch.
func Applied(report []byte) Outcome { return Outcome{Code: CodeApplied, Report: report} }

// Forward answers a batch for a partition the node does not own: the
// transport sends it on to node to and answers the sender with to's answer
// (X6).
func Forward(to string) Outcome { return Outcome{Code: codeForward, To: to} }

// NotApplied answers a batch that was not applied, with code CodeRetry,
// CodeRewind or CodeRefused and the reason.
func NotApplied(code Code, reason string) Outcome { return Outcome{Code: code, Reason: reason} }

// refuseAll is the Handler of a node that applies no batches.
type refuseAll struct{}

func (refuseAll) Apply(context.Context, string, *Batch) Outcome {
	return NotApplied(CodeRefused, "this node applies no batches")
}

func (refuseAll) Done(string, RunKey, bool) {}
