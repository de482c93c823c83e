package pebble

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snapstore/snapstore/store"
)

// TestReserveCache: a reservation shrinks the block cache at once, all of
// them together hold at most half of it, and once released the cache
// fills up again; a release after Close leaves the freed cache alone.
func TestReserveCache(t *testing.T) {
	// Memtables of 1 MiB: Pebble reserves each memtable's size from the
	// cache, and one of the default size would take all of it.
	const cacheSize, memTableSize = 16 << 20, 1 << 20
	dir := t.TempDir()
	s, err := Open(dir, Options{MemTableSize: memTableSize})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	val := make([]byte, 1024) // random: the blocks do not compress
	rnd := rand.NewChaCha8([32]byte{7})
	for batch := range 8 {
		b := &store.Batch{Table: "t"}
		for i := range 4096 {
			rnd.Read(val)
			b.Put(fmt.Appendf(nil, "r%02d%05d", batch, i), []byte("c"), 1, append([]byte(nil), val...))
		}
		if err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil { // the rows in SSTables, read through the cache
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if s, err = Open(dir, Options{CacheSize: cacheSize, MemTableSize: memTableSize, Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	scan := func() {
		t.Helper()
		it, err := s.Scan(ctx, "t", store.ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if n != 8*4096 {
			t.Fatalf("scanned %d cells, want %d", n, 8*4096)
		}
	}
	cached := func() int64 { return s.DB().Metrics().BlockCache.Size }
	scan() // 32 MiB of blocks through a cache of 16
	if c := cached(); c < cacheSize*3/4 {
		t.Fatalf("cache holds %d bytes after a whole scan, want about %d", c, cacheSize)
	}

	release := s.ReserveCache(64 << 20) // more than half: half is reserved
	if r := gather(t, reg)["snapstore_pebble_block_cache_reserved_bytes"]; r != cacheSize/2 {
		t.Errorf("reserved %v bytes, want %d (half the cache)", r, cacheSize/2)
	}
	if c := cached(); c > cacheSize/2 {
		t.Errorf("cache holds %d bytes right after reserving half of %d", c, cacheSize)
	}
	scan()
	if c := cached(); c > cacheSize/2 {
		t.Errorf("cache holds %d bytes after a scan with half of %d reserved", c, cacheSize)
	}
	second := s.ReserveCache(1 << 20) // nothing left to reserve
	if r := gather(t, reg)["snapstore_pebble_block_cache_reserved_bytes"]; r != cacheSize/2 {
		t.Errorf("reserved %v bytes after a second reservation, want %d", r, cacheSize/2)
	}
	second()
	release()
	release() // a second release does nothing
	if r := gather(t, reg)["snapstore_pebble_block_cache_reserved_bytes"]; r != 0 {
		t.Errorf("reserved %v bytes after the releases, want 0", r)
	}
	scan()
	if c := cached(); c < cacheSize*3/4 {
		t.Errorf("cache holds %d bytes after the release and a scan, want about %d", c, cacheSize)
	}

	late := s.ReserveCache(1 << 20)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	late() // the database freed the cache: the release must not touch it
	s.ReserveCache(1 << 20)()
}
