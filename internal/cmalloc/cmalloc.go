// Package cmalloc tunes the C library's malloc of a binary built with cgo,
// where Pebble allocates its block cache and memtables with C's calloc
// (Pebble's internal/manual) rather than as Go memory. Built without cgo,
// or outside Linux (glibc's mallopt and malloc_trim), its functions do
// nothing: the cache is then Go memory, which the Go runtime returns to the
// system itself.
package cmalloc
