//go:build cgo && linux

package daemon

/*
#include <malloc.h>

// snapstore_arena_max sets glibc's M_ARENA_MAX where the C library has it.
static int snapstore_arena_max(int n) {
#ifdef M_ARENA_MAX
	return mallopt(M_ARENA_MAX, n);
#else
	(void)n;
	return 0;
#endif
}
*/
import "C"

import (
	"log/slog"
	"os"
)

// mallocArenas is the most arenas glibc's malloc may use in a cgo build.
// Pebble then allocates its block cache with C's calloc (its
// internal/manual), from whichever thread reads a block, and frees a
// block when the cache evicts it; with glibc's default of eight arenas
// per core, a long scan that turns the whole cache over leaves freed
// blocks spread over many arenas, resident though unused. Two arenas
// keep that slack small (the MALLOC_ARENA_MAX=2 advice for servers that
// allocate from many threads).
const mallocArenas = 2

// limitMallocArenas sets mallocArenas as glibc's M_ARENA_MAX, before the
// store opens, unless the MALLOC_ARENA_MAX environment variable set it
// (the operator's choice wins).
func limitMallocArenas(log *slog.Logger) {
	if _, ok := os.LookupEnv("MALLOC_ARENA_MAX"); ok {
		return
	}
	if C.snapstore_arena_max(C.int(mallocArenas)) == 1 {
		log.Info("C malloc arenas limited", "arenas", mallocArenas)
	}
}
