package pebble

import (
	"context"
	"sync"

	cpebble "github.com/cockroachdb/pebble/v2"
)

// maxPooledIters is how many idle Pebble iterators the store keeps for
// reuse. Two per core would do; a fixed small number bounds what idle
// iterators pin.
const maxPooledIters = 16

// iterPool keeps idle Pebble iterators for Get and Scan, so that a read
// costs an Iterator.SetBounds instead of a DB.NewIter and an Iterator.Close
// (together most of the cost of a point Get: measured in
// BenchmarkStore/get, about 40% of a 10-column row read from the
// memtable, much of it the write barriers of Close zeroing Pebble's
// iterator allocation while the garbage collector runs).
//
// A Pebble iterator reads the database as of its creation and never sees a
// later write, so a pooled iterator may serve a read only while no write
// has happened since it was created (store.S3). gen counts writes: every
// successful Apply and DeleteRange bumps it after Pebble returns and closes
// the idle iterators (invalidate), and an iterator goes back to the pool only
// when gen has not moved since before it was created. Hence every pooled
// iterator sees every write that returned before the read takes it.
//
// An idle iterator pins the memtables and sstables of its view. Writes
// close the pooled iterators, and so does the end of a flush or a
// compaction (see Open's event listener), so at most maxPooledIters
// iterators pin a state no older than the last write, flush or compaction.
type iterPool struct {
	mu     sync.Mutex
	gen    uint64
	free   []*cpebble.Iterator
	closed bool // Store.Close or Store.DB was called: pool nothing

	// closing counts lists of idle iterators taken out to be closed
	// (takeFree, with mu held), so that close can wait for them.
	closing sync.WaitGroup
}

// get returns an iterator over [lower, upper) with its generation: a pooled
// one rebounded, or a new one from db. lower and upper may be reused by the
// caller once get returns.
func (p *iterPool) get(ctx context.Context, db *cpebble.DB, lower, upper []byte) (*cpebble.Iterator, uint64, error) {
	p.mu.Lock()
	gen := p.gen
	var pi *cpebble.Iterator
	if n := len(p.free); n > 0 {
		pi = p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
	}
	p.mu.Unlock()
	if pi != nil {
		pi.SetContext(ctx)
		pi.SetBounds(lower, upper)
		return pi, gen, nil
	}
	// NewIter copies the bounds, as SetBounds does.
	pi, err := db.NewIterWithContext(ctx, &cpebble.IterOptions{LowerBound: lower, UpperBound: upper})
	return pi, gen, err
}

// put returns pi, taken by get at generation gen, to the pool, or closes it
// when a write happened since, the pool is full or closed, or pi failed. It
// returns the error of Close.
func (p *iterPool) put(pi *cpebble.Iterator, gen uint64) error {
	if pi.Error() == nil {
		p.mu.Lock()
		if !p.closed && p.gen == gen && len(p.free) < maxPooledIters {
			// Let go of the caller's context (and of its values).
			pi.SetContext(context.Background())
			p.free = append(p.free, pi)
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
	}
	return pi.Close()
}

// invalidate records a write: no iterator created before it is reused, and
// the idle ones are closed.
func (p *iterPool) invalidate() {
	p.mu.Lock()
	p.gen++
	stale := p.takeFree()
	p.mu.Unlock()
	p.closeAll(stale)
}

// drain closes the idle iterators (to unpin what they read), keeping gen.
func (p *iterPool) drain() {
	p.mu.Lock()
	stale := p.takeFree()
	p.mu.Unlock()
	p.closeAll(stale)
}

// disable makes put close every iterator from now on, and closes the idle
// ones: Store.DB hands out the database, whose writes do not go through
// invalidate.
func (p *iterPool) disable() {
	p.mu.Lock()
	p.closed = true
	stale := p.takeFree()
	p.mu.Unlock()
	p.closeAll(stale)
}

// close disables the pool and returns when every idle iterator is closed,
// including those that a concurrent drain or invalidate took out. Called by
// Store.Close before Pebble is closed (Pebble wants every iterator closed
// first).
func (p *iterPool) close() {
	p.disable()
	p.closing.Wait()
}

// takeFree empties the free list and returns it; the caller holds mu and
// must pass the result to closeAll.
func (p *iterPool) takeFree() []*cpebble.Iterator {
	stale := p.free
	p.free = nil
	if len(stale) > 0 {
		p.closing.Add(1)
	}
	return stale
}

func (p *iterPool) closeAll(its []*cpebble.Iterator) {
	if len(its) == 0 {
		return
	}
	defer p.closing.Done()
	for _, pi := range its {
		// An idle iterator had no error when pooled; Close of one cannot
		// fail in a way that concerns any read.
		_ = pi.Close()
	}
}
