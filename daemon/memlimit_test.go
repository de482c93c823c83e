package daemon

import (
	"testing"

	"github.com/snapstore/snapstore/config"
)

func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name string
		cfg  config.StorageConfig
		want int64
	}{
		{"defaults", config.StorageConfig{Backend: "pebble"}, 128*mib + 2*64*mib + 64*mib},
		{"configured", config.StorageConfig{Backend: "pebble", Pebble: config.PebbleConfig{MemTableSize: 16 * mib, CacheSize: 32 * mib, MemoryHeadroom: 8 * mib}}, 32*mib + 2*16*mib + 8*mib},
		{"no limit", config.StorageConfig{Backend: "pebble", Pebble: config.PebbleConfig{MemoryHeadroom: -1}}, 0},
		{"hbase", config.StorageConfig{Backend: "hbase"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := memoryLimit(&config.Config{Storage: c.cfg}); got != c.want {
				t.Errorf("memoryLimit = %d, want %d", got, c.want)
			}
		})
	}
}
