//go:build cgo && linux

package cmalloc

/*
#include <malloc.h>
#include <stdlib.h>

// snapstore_arena_limit is the M_ARENA_MAX snapstore_limit_arenas set, 0
// when it set none.
static int snapstore_arena_limit;

// snapstore_limit_arenas runs when the binary is loaded, before the Go
// runtime starts its threads: an arena a thread has once allocated from
// stays in use, so a limit set later would leave the arenas of the threads
// started before it. MALLOC_ARENA_MAX in the environment is the
// operator's, which glibc applies itself.
__attribute__((constructor)) static void snapstore_limit_arenas(void) {
#ifdef M_ARENA_MAX
	if (getenv("MALLOC_ARENA_MAX") != NULL) {
		return;
	}
	if (mallopt(M_ARENA_MAX, 1) == 1) {
		snapstore_arena_limit = 1;
	}
#endif
}

static int snapstore_arena_limit_set(void) { return snapstore_arena_limit; }
*/
import "C"

// ArenaLimit is the most arenas glibc's malloc may use, as this package
// set it when the binary was loaded: 1, or 0 when it set none (the
// MALLOC_ARENA_MAX environment variable was set, or the C library has no
// such setting).
//
// One arena: Pebble allocates each block of its cache with C's calloc,
// from whichever thread reads the block, and frees it when the cache
// evicts it; each arena keeps the blocks freed into it for its own next
// allocations, so over a long scan that turns the cache over, every arena
// grows to about the size of the whole cache (glibc's default is eight
// arenas per core; MALLOC_ARENA_MAX=2 is the usual advice for servers).
// Measured on a full export of 4M rows with a 64 MiB cache: 141 MiB of C
// memory with two arenas, 71 MiB with one, and a first run no slower (the
// block reads that allocate are few beside their decompression).
func ArenaLimit() int { return int(C.snapstore_arena_limit_set()) }

// Trim returns the free memory of every arena to the system (glibc's
// malloc_trim, which since glibc 2.8 releases whole free pages anywhere in
// an arena, not only at its top): memory C code freed stays resident
// otherwise, ready for its next allocation.
func Trim() { C.malloc_trim(0) }
