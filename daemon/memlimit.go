package daemon

import (
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/store/pebble"
)

// defaultMemoryHeadroom is storage.pebble.memory_headroom's default: the
// Go memory a serving process has beyond Pebble's budgets (a run's
// batches, an export's record batch or row group, the HTTP connections).
const defaultMemoryHeadroom = 64 << 20

// memoryLimit is the Go runtime's soft memory limit serve sets with the
// Pebble backend: the block cache, two memtables (the mutable one and
// one being flushed) and storage.pebble.memory_headroom. Pebble's block
// cache lives in the Go heap when the binary is built without cgo (as
// release builds are), and with GOGC=100 alone the collector lets the
// heap grow to twice the live heap, the whole cache counted: a full
// cache of 128 MiB alone would let an export's garbage reach as much
// again. The limit makes the collector run before the heap passes the
// configured budgets instead (the practice of the Go GC guide's "memory
// limit" section). Zero: no limit (another backend, a negative
// headroom).
func memoryLimit(cfg *config.Config) int64 {
	if cfg.Storage.Backend != "pebble" {
		return 0
	}
	p := cfg.Storage.Pebble
	if p.MemoryHeadroom < 0 {
		return 0
	}
	headroom := p.MemoryHeadroom
	if headroom == 0 {
		headroom = defaultMemoryHeadroom
	}
	cache := p.CacheSize
	if cache <= 0 {
		cache = pebble.DefaultCacheSize
	}
	memtable := int64(p.MemTableSize)
	if memtable == 0 {
		memtable = pebble.DefaultMemTableSize
	}
	return cache + 2*memtable + headroom
}

// setMemoryLimit sets memoryLimit as the runtime's soft memory limit,
// unless the GOMEMLIMIT environment variable set one (the operator's
// choice wins) or the configuration asks for none.
func setMemoryLimit(cfg *config.Config, log *slog.Logger) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		log.Info("memory limit from GOMEMLIMIT", "bytes", debug.SetMemoryLimit(-1))
		return
	}
	limit := memoryLimit(cfg)
	if limit == 0 {
		return
	}
	debug.SetMemoryLimit(limit)
	log.Info("memory limit set", "bytes", limit)
}
