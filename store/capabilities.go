package store

import "time"

// Optional capabilities of a Store, found by type assertion as database/sql
// finds a driver's (driver.Pinger, driver.Validator). A store that lacks
// one has the default behaviour each describes.

// LateWriter is implemented by a store whose writes can still land after
// the call that made them returned an error (S9): HBase's Thrift2 gateway
// keeps retrying a call its client gave up on. MaxWriteDelay bounds how
// long after such an error the write may land; past it, the write has
// either landed or never will. A store without the method (store/pebble)
// has none: a failed call has returned for good.
type LateWriter interface {
	MaxWriteDelay() time.Duration
}

// ApplyPlanner is implemented by a store whose Apply is atomic per row
// only (S1): ApplyCalls returns the parts Apply sends b in, in the order it
// sends them (store/hbase: one part per Thrift call). The rows of one part
// are each applied atomically, in no fixed order among themselves; a
// failure leaves the parts before it applied, a subset of its rows, and
// none after. store/storetest's fault-injecting store applies a batch in
// part along these lines; for a store without the method it takes every
// row as a part of its own, in the order of first appearance, which is
// what S1 allows any backend.
type ApplyPlanner interface {
	ApplyCalls(b *Batch) ([]*Batch, error)
}

// ProcessLocal is implemented by a store that may know that only one
// process can open it at a time (store/pebble locks its directory): when
// ProcessLocal returns true, what another process recorded in it was
// recorded by a process that has ended. A store without the method, or
// returning false, may be open in other processes (store/hbase); a
// wrapper answers for the store it wraps.
type ProcessLocal interface {
	ProcessLocal() bool
}

// CacheReserver is implemented by a store with a block cache in the
// process (store/pebble). ReserveCache shrinks the cache by up to n bytes
// until release is called, as Pebble reserves the size of its memtables
// from its cache, so that memory a reader holds beside the cache (an
// export's record batch and row group) comes out of the cache's budget
// instead of adding to the process's. The store may reserve less than n,
// or nothing, to keep part of its cache for other reads; release may be
// called more than once. A store without the method (store/hbase) has no
// cache in the process to reserve from.
type CacheReserver interface {
	ReserveCache(n int64) (release func())
}
