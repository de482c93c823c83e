package pebble

import (
	"log/slog"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
)

// Tuning of the Pebble database, measured with make bench and the
// store/storetest benchmarks (docs/benchmarks.md).
const (
	// upperBlockSize is the data block size of L0 to L4, which hold the
	// recent writes of runs: Pebble's default.
	upperBlockSize = 4 << 10
	// lowerBlockSize is the data block size of L5 and L6, which hold
	// nearly all the data: larger blocks let Zstandard find more to
	// share between rows, at the cost of decompressing more per point
	// read that misses the block cache.
	lowerBlockSize = 16 << 10
	// bloomBitsPerKey is the size of the bloom filter of each SSTable, per
	// row (not per key: filters hold the prefixes of comparer.go); 10
	// bits give about 1% false positives (RocksDB's and Pebble's usual
	// choice).
	bloomBitsPerKey = 10
)

// pebbleOptions returns the options of a database of the current format:
// the row-splitting comparer with bloom filters on every level (point
// reads skip SSTables without the row), Pebble's fastest compression
// (MinLZ; Snappy on arm64) on the upper levels, which compactions rewrite
// often, and Zstandard on L5 and L6, which hold nearly all the data and
// are rewritten least (CockroachDB's choice as well).
// lowerCompression is Zstandard at level 1 on data blocks, whatever they
// gain over MinLZ (Pebble's "balanced" profile, without its fallback to
// MinLZ for blocks zstd shrinks by less than 20% more). Measured on the
// benchmark table (make bench, 200k rows, 11 runs): the same size as level
// 3, 20.3 MiB of SSTables for 35.9 MiB of text, for about 10% less CPU in a
// first run (BenchmarkFirstRun, user time 1.10s to 1.00s).
var lowerCompression = func() *sstable.CompressionProfile {
	p := *sstable.BalancedCompression
	p.Name = "snapstore-zstd1"
	p.AdaptiveReductionCutoffPercent = 0
	return &p
}()

func pebbleOptions(opts Options, cache *cpebble.Cache, logger *slog.Logger) *cpebble.Options {
	po := &cpebble.Options{
		Comparer:           comparer,
		Cache:              cache,
		MemTableSize:       opts.MemTableSize,
		Logger:             slogBridge{logger},
		FormatMajorVersion: cpebble.FormatNewest,
		FS:                 opts.fs,
		// The cell time interval of every block and table, for the scans
		// with a time range (timefilter.go).
		BlockPropertyCollectors: []func() cpebble.BlockPropertyCollector{newCellTimeCollector},
	}
	// Values stay beside their keys. Pebble moves the values of older
	// versions of a prefix out to value blocks, which suits MVCC reads of
	// the newest version only; here the suffix is a column and a
	// timestamp, and package snapshot's reads walk several versions of a
	// row (a delta chain), each of which would cost a value block fetch.
	po.Experimental.SpanPolicyFunc = func([]byte) (cpebble.SpanPolicy, []byte, error) {
		return cpebble.SpanPolicy{DisableValueSeparationBySuffix: true, ValueStoragePolicy: cpebble.ValueStorageLowReadLatency}, nil, nil
	}
	filter := bloom.FilterPolicy(bloomBitsPerKey)
	for i := range po.Levels {
		l := &po.Levels[i]
		l.FilterPolicy = filter
		if i < 5 {
			l.BlockSize = upperBlockSize
			l.Compression = func() *sstable.CompressionProfile { return sstable.FastestCompression }
		} else {
			l.BlockSize = lowerBlockSize
			l.Compression = func() *sstable.CompressionProfile { return lowerCompression }
		}
	}
	return po
}
