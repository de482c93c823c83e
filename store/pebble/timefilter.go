package pebble

import (
	"bytes"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/snapstore/snapstore/store"
)

// Time-bound scans, after CockroachDB's time-bound iterators (its MVCC
// time-interval block-property collector, pkg/storage/pebble.go): every
// SSTable written by this store records, for each data block, each index
// block and the whole table, the interval of the cell timestamps of its
// keys, and a scan whose time range has a lower bound gives its iterator a
// filter on that interval, so that Pebble skips the tables and blocks that
// hold no cell of the range. The filter is coarse (a block holding one cell
// of the range is read whole) and memtables are never filtered: the
// iterator still applies the exact range to every key it sees (iterator.go).
//
// Skipping is safe against Pebble's point tombstones because the property
// depends only on the user key: a key and every version and tombstone of it
// carry the same timestamp, so they are skipped or read together, and a put
// whose tombstone was skipped surfaces only outside the range, where the
// exact check drops it. Range deletions (DeleteRange) are not filtered.
//
// A table written before the collector existed has no such property, and
// Pebble reads it whole (sstable.IntersectsTable treats a missing property
// as intersecting), so directories written by older versions open and read
// unchanged.

// cellTimeProperty names the property in every SSTable: stable for the life
// of the format, since old tables keep it.
const cellTimeProperty = "snapstore.cell-time"

// cellTimeMapper maps a key to the interval [ts, ts+1) of its cell
// timestamp; the reserved keys (formatKey, counters: every key in the space
// of the empty table name) and keys too short to hold a timestamp map to
// the empty interval. Only scans of a table's cells are filtered, and they
// never read reserved keys.
type cellTimeMapper struct{}

var reservedPrefix = []byte{escByte, escTerm}

func (cellTimeMapper) MapPointKey(key sstable.InternalKey, _ []byte) (sstable.BlockInterval, error) {
	k := key.UserKey
	if len(k) < termLen+tsLen || bytes.HasPrefix(k, reservedPrefix) {
		return sstable.BlockInterval{}, nil
	}
	ts := uint64(decodeTS(k[len(k)-tsLen:]))
	return sstable.BlockInterval{Lower: ts, Upper: ts + 1}, nil
}

func (cellTimeMapper) MapRangeKeys(sstable.Span) (sstable.BlockInterval, error) {
	// The store writes no range keys.
	return sstable.BlockInterval{}, nil
}

// newCellTimeCollector is the collector of Options.BlockPropertyCollectors.
func newCellTimeCollector() cpebble.BlockPropertyCollector {
	return sstable.NewBlockIntervalCollector(cellTimeProperty, cellTimeMapper{}, nil)
}

// timeFilters returns the block-property filters of a scan's time range,
// nil when the range has no lower bound: a read at a version ([0, V+1))
// wants every older block, and the newest cells, which such a range would
// skip, sit in the memtables and the upper levels anyway.
func timeFilters(tr store.TimeRange) []cpebble.BlockPropertyFilter {
	if tr.Min <= 0 {
		return nil
	}
	upper := uint64(tr.Max)
	if tr.Max == store.MaxTimestamp {
		upper++ // MaxTimestamp itself is in range (store.TimeRange)
	}
	// Pebble appends to the slice it is given: one spare element saves an
	// allocation (IterOptions.PointKeyFilters).
	f := make([]cpebble.BlockPropertyFilter, 1, 2)
	f[0] = sstable.NewBlockIntervalFilter(cellTimeProperty, uint64(tr.Min), upper, nil)
	return f
}
