package server

import "github.com/snapstore/snapstore/store"

// exportMemory is the memory an Arrow stream or a Parquet file holds
// beside the store's block cache once it is longer than one record batch:
// the batch being filled, the one being written and, for Parquet,
// pqarrow's row group of parquetRowGroupRows rows, with the garbage the
// collector lets grow beside them (GOGC=100: up to their size again).
// Measured on whole exports of the bench table (10 columns, 4M rows): a
// Go heap of 47-56 MiB at the collector's goal, 66-75 MiB obtained from
// the system.
const exportMemory = 64 << 20

// exportCache is what an answer in batches reserves its memory from: the
// store's block cache, when the store has one in the process
// (store.CacheReserver), else nothing.
type exportCache struct {
	cache   store.CacheReserver // nil: no reservation
	release func()              // non-nil once reserved
}

// reserve reserves exportMemory of the block cache, once: a whole scan
// reads every block once and gains nothing from the cache, so while it
// runs the cache gives up the room its batches take, and the process's
// memory stays that of the cache, the memtables and the headroom
// (docs/operations.md "Memory limit") rather than growing by an export's
// working memory for each export. Answers of one batch or less (a page, a
// small diff) never reserve: they would evict point reads' blocks for
// memory they hardly use.
func (e *exportCache) reserve() {
	if e.cache != nil && e.release == nil {
		e.release = e.cache.ReserveCache(exportMemory)
	}
}

// done releases the reservation, if any.
func (e *exportCache) done() {
	if e.release != nil {
		e.release()
		e.release = nil
	}
}
