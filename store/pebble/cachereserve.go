package pebble

import (
	"sync"

	"github.com/snapstore/snapstore/internal/cmalloc"
)

// reservations is what ReserveCache holds of the block cache.
type reservations struct {
	mu     sync.Mutex
	held   int64 // bytes reserved and not released
	closed bool  // the store closed: the cache is Pebble's to free
}

// ReserveCache implements store.CacheReserver with Pebble's Cache.Reserve,
// by which Pebble reserves the size of each memtable from its cache: the
// cache's target size shrinks by n and it evicts at once down to it. Its
// reservations hold at most half of the cache in all, so that point reads
// keep the other half; a call past that reserves what is left, maybe
// nothing.
//
// The blocks it evicts are freed. In a binary built with cgo the cache is
// C memory, which the C library keeps resident for its next allocations
// once freed; cmalloc.Trim returns it to the system, so that the reserved
// bytes are in fact available to the reader, whose memory is Go memory.
// Without cgo the cache is Go memory and the garbage collector reclaims
// the evicted blocks.
func (s *Store) ReserveCache(n int64) (release func()) {
	s.resv.mu.Lock()
	n = min(n, s.cacheSize/2-s.resv.held)
	if n <= 0 || s.resv.closed {
		s.resv.mu.Unlock()
		return func() {}
	}
	s.resv.held += n
	undo := s.cache.Reserve(int(n))
	s.resv.mu.Unlock()
	cmalloc.Trim()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.resv.mu.Lock()
			defer s.resv.mu.Unlock()
			s.resv.held -= n
			if !s.resv.closed {
				undo()
			}
		})
	}
}

// reserved is the bytes ReserveCache holds.
func (r *reservations) reserved() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

// close makes later reservations and releases leave the cache alone: the
// store is closing, and the database frees the cache once closed.
func (r *reservations) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}
