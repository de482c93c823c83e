package transfer

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Events are what a run's sender hears back. Both are called from the
// transport's goroutines and must not block.
type Events interface {
	// Acked: node to applied batch seq of stream s; report is the owner's
	// report with the ACK of an END batch, nil otherwise. Valid only
	// during the call.
	Acked(to string, s Stream, seq uint64, report []byte)
	// Refused: node to refused a batch of stream s (CodeRefused): the
	// run cannot finish. Nothing more of the run is sent to to on that
	// stream's lane.
	Refused(to string, s Stream, reason string)
}

// Run is the sending side of one run on its coordinator: Send queues
// batches for their owners, End releases them. Its methods are safe for
// concurrent use; Send calls are serialised.
type Run struct {
	t   *Transport
	key RunKey
	c   Compression
	ev  Events

	// mu guards the fields below and serialises Send. It is held while a
	// batch is encoded and written to its queue's log, and taken before a
	// lane's mutex.
	mu     sync.Mutex
	seqs   map[int]uint64 // last seq per partition
	queues map[*lane]*queue
	ended  bool
}

// ErrRunEnded is returned by Send after End.
var ErrRunEnded = errors.New("transfer: the run has ended")

// Key returns the run's key.
func (r *Run) Key() RunKey { return r.key }

// Send queues b for node to, the owner of b's partition: it numbers b in
// its stream (b.Seq), stamps it with the run and this node (b.Dataset,
// b.Txn, b.Origin), encodes it and appends it to its lane's queue, in
// memory or on disk (X7); it never waits for the network. A stream's
// batches must all go to one node; the last is an END batch.
func (r *Run) Send(to string, b *Batch) error {
	t := r.t
	if to == t.cfg.NodeID {
		return fmt.Errorf("transfer: a run's batches for this node (%s) are applied here, not sent", to)
	}
	p, err := t.peer(to)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return ErrRunEnded
	}
	b.RunKey, b.Origin = r.key, t.cfg.NodeID
	b.Seq = r.seqs[b.Partition] + 1
	frame, err := encodeBatch(b, r.c, false)
	if err != nil {
		return err
	}
	l := p.lanes[t.laneOf(b.Stream)]
	q := r.queues[l]
	if q == nil {
		dir := filepath.Join(t.cfg.Dir, to)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("transfer: creating a queue directory: %w", err)
		}
		name := fmt.Sprintf("%s.%d.%d.log", url.PathEscape(r.key.Dataset), r.key.Txn, l.idx)
		if q, err = openQueue(r, l, filepath.Join(dir, name)); err != nil {
			return err
		}
		r.queues[l] = q
		l.mu.Lock()
		l.queues = append(l.queues, q)
		l.mu.Unlock()
	}
	l.mu.Lock()
	err = q.appendLocked(&item{seq: b.Seq, part: b.Partition, rows: len(b.Rows), frame: frame})
	l.mu.Unlock()
	if err != nil {
		return err
	}
	r.seqs[b.Partition] = b.Seq
	t.metrics.queuedBatches.Inc()
	l.poke()
	return nil
}

// End ends the run: its queues are removed (whatever is still unanswered
// is dropped), and every node it sent to is told, with DONE, that the run
// is over and whether it committed, so that it drops its state.
func (r *Run) End(committed bool) error {
	dests := r.drop()
	for _, p := range dests {
		l := p.lanes[0]
		l.mu.Lock()
		l.control = append(l.control, done{run: r.key, committed: committed}.frame())
		l.mu.Unlock()
		l.poke()
	}
	return nil
}

// drop removes the run's queues and returns the nodes it sent to.
func (r *Run) drop() []*peer {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return nil
	}
	r.ended = true
	queues := r.queues
	r.queues = nil
	r.mu.Unlock()
	var dests []*peer
	seen := map[*peer]bool{}
	for l, q := range queues {
		l.mu.Lock()
		l.removeQueueLocked(q)
		if err := q.closeLocked(); err != nil {
			r.t.log.Warn("transfer: removing a queue file", "file", q.path, "err", err)
		}
		l.mu.Unlock()
		if !seen[l.peer] {
			seen[l.peer] = true
			dests = append(dests, l.peer)
		}
	}
	r.t.mu.Lock()
	if r.t.runs[r.key] == r {
		delete(r.t.runs, r.key)
	}
	r.t.mu.Unlock()
	return dests
}

// Wait is a destination a run waits for: it has unanswered batches of the
// run and cannot be reached.
type Wait struct {
	Node string
	// Since is when dialling it first failed.
	Since time.Time
	// Err is the last dial error.
	Err string
}

// Waiting returns the destinations the run waits for: those with
// unanswered batches of the run that no lane reaches now. A run applies
// its wait limit to Since (no failover: the batches wait until the node
// is back or the run gives up).
func (r *Run) Waiting() []Wait {
	r.mu.Lock()
	queues := make([]*queue, 0, len(r.queues))
	for _, q := range r.queues {
		queues = append(queues, q)
	}
	r.mu.Unlock()
	var out []Wait
	seen := map[*peer]bool{}
	for _, q := range queues {
		l := q.lane
		l.mu.Lock()
		pending := !q.ended && q.acked < q.n
		l.mu.Unlock()
		if !pending || seen[l.peer] {
			continue
		}
		seen[l.peer] = true
		l.peer.mu.Lock()
		if !l.peer.downSince.IsZero() {
			out = append(out, Wait{Node: l.peer.id, Since: l.peer.downSince, Err: l.peer.lastErr})
		}
		l.peer.mu.Unlock()
	}
	return out
}
