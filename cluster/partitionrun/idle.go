package partitionrun

import (
	"time"
)

// A stream whose coordinator died, or gave up without a DONE reaching
// this node, would hold its partition writer (an open iterator, a write
// batch) forever. The owner drops a stream it heard nothing of for
// OwnerWait: at its next batch of any stream, and on a timer, so that a
// node that receives nothing more still frees them.

// sweepEvery returns how often the timer looks for silent streams: a
// quarter of OwnerWait, between 100 ms and 30 s.
func sweepEvery(ownerWait time.Duration) time.Duration {
	return min(max(ownerWait/4, 100*time.Millisecond), 30*time.Second)
}

// sweepLoop runs sweep every sweepEvery until Close.
func (p *Runs) sweepLoop() {
	defer close(p.sweepDone)
	t := time.NewTicker(sweepEvery(p.cfg.OwnerWait))
	defer t.Stop()
	for {
		select {
		case <-p.stopc:
			return
		case <-t.C:
			p.sweep()
		}
	}
}

// sweep drops the streams nothing was heard of for OwnerWait.
func (p *Runs) sweep() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for k, st := range p.streams {
		if !st.used.IsZero() && now.Sub(st.used) > p.cfg.OwnerWait {
			p.log.Warn("dropping a stream of a partitioned run not heard of", "dataset", k.Dataset, "txn", k.Txn, "partition", k.Partition,
				"origin", k.origin, "idle", now.Sub(st.used).Round(time.Second))
			st.w.Discard()
			delete(p.streams, k)
			delete(p.records, k.RunKey)
			delete(p.retries, k)
			p.streamsDropped.Inc()
		}
	}
}

// Close stops the timer and discards the writers of every stream this
// node still holds; call it once the transport is closed.
func (p *Runs) Close() {
	p.closeOnce.Do(func() {
		close(p.stopc)
		<-p.sweepDone
		p.mu.Lock()
		defer p.mu.Unlock()
		for k, st := range p.streams {
			st.w.Discard()
			delete(p.streams, k)
		}
	})
}
