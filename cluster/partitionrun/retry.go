package partitionrun

import (
	"errors"
	"fmt"
	"time"

	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/store"
)

// An owner's writes of a partition may meet a transient store error:
// HBase's region server moving a region, a Thrift gateway restarting
// (store.ErrUnavailable). A partition writer cannot go on after an error
// (snapshot.PartitionWriter), but its writes are idempotent: the same
// rows give the same cells at the run's transaction. So the owner
// discards the writer and asks for the stream again from its first batch
// (transfer.CodeRewind), which the coordinator still holds; until a
// backoff has passed it answers the first batch "not now"
// (transfer.CodeRetry), so the sender pauses and resends. After
// StoreRetries such attempts of one stream the owner refuses it and the
// run fails, naming the error, as before. Other errors refuse at once.

// Defaults of Config.StoreRetries and Config.StoreRetryBackoff.
const (
	DefaultStoreRetries      = 5
	DefaultStoreRetryBackoff = 500 * time.Millisecond
)

// maxStoreRetryBackoff bounds the backoff between two attempts.
const maxStoreRetryBackoff = 8 * time.Second

// retryState is an owner's count of a stream's attempts that met a
// transient store error, and when it may begin again.
type retryState struct {
	attempts  int
	notBefore time.Time
	last      error
}

// refusedUnavailable begins the reason of a refusal after a store
// that kept failing with transient errors: the coordinator fails the run
// with store.ErrUnavailable (code store_unavailable) rather than a bare
// refusal, so that an outage of an owner's HBase reads as one. The reason
// is a string on the wire (transfer.CodeRefused), hence a prefix.
const refusedUnavailable = "store unavailable: "

// transient reports whether err is a store error worth trying again.
func transient(err error) bool { return errors.Is(err, store.ErrUnavailable) }

// storeFailed answers a batch of stream k whose write failed with err
// (what says which write): a rewind after a backoff while the stream has
// attempts left and err is transient, else a refusal. The caller
// discards the stream's writer.
func (p *Runs) storeFailed(k ownerStream, what string, err error) transfer.Outcome {
	reason := fmt.Sprintf("%s partition %d of %v: %v", what, k.Partition, k.RunKey, err)
	if !transient(err) {
		return transfer.NotApplied(transfer.CodeRefused, reason)
	}
	p.mu.Lock()
	rs := p.retries[k]
	if rs == nil {
		rs = &retryState{}
		p.retries[k] = rs
	}
	rs.attempts++
	rs.last = err
	attempts := rs.attempts
	wait := min(p.cfg.StoreRetryBackoff<<(attempts-1), maxStoreRetryBackoff)
	rs.notBefore = time.Now().Add(wait)
	if attempts > p.cfg.StoreRetries {
		delete(p.retries, k)
	}
	p.mu.Unlock()
	if attempts > p.cfg.StoreRetries {
		p.storeRetries.WithLabelValues("gave_up").Inc()
		p.log.Warn("a partition of a partitioned run failed: the store kept failing", "dataset", k.Dataset, "txn", k.Txn, "partition", k.Partition,
			"origin", k.origin, "attempts", attempts, "err", err)
		return transfer.NotApplied(transfer.CodeRefused, fmt.Sprintf("%s%s (after %d attempts)", refusedUnavailable, reason, attempts))
	}
	p.storeRetries.WithLabelValues("retried").Inc()
	p.log.Warn("a partition of a partitioned run met a store error; writing it again from its first batch", "dataset", k.Dataset, "txn", k.Txn,
		"partition", k.Partition, "origin", k.origin, "attempt", attempts, "of", p.cfg.StoreRetries, "backoff", wait, "err", err)
	return transfer.NotApplied(transfer.CodeRewind, fmt.Sprintf("%s; written again from its first batch after %s (attempt %d of %d)", reason, wait, attempts, p.cfg.StoreRetries))
}

// backingOff answers the first batch of stream k "not now" while the
// backoff after its last store error runs.
func (p *Runs) backingOff(k ownerStream) (transfer.Outcome, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := p.retries[k]
	if rs == nil {
		return transfer.Outcome{}, false
	}
	if d := time.Until(rs.notBefore); d > 0 {
		return transfer.NotApplied(transfer.CodeRetry, fmt.Sprintf("partition %d of %v: waiting %s after a store error: %v", k.Partition, k.RunKey, d.Round(time.Millisecond), rs.last)), true
	}
	return transfer.Outcome{}, false
}

// retried forgets the attempts of stream k, which ended.
func (p *Runs) retried(k ownerStream) {
	p.mu.Lock()
	delete(p.retries, k)
	p.mu.Unlock()
}
