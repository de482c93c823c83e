//go:build cgo

package daemon

// pebbleMemoryInGoHeap reports whether Pebble's block cache and memtables
// are Go heap: in a cgo build its internal/manual allocates them with C's
// calloc, outside the Go runtime's accounting.
const pebbleMemoryInGoHeap = false
