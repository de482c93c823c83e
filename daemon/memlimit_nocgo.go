//go:build !cgo

package daemon

// pebbleMemoryInGoHeap reports whether Pebble's block cache and memtables
// are Go heap: without cgo its internal/manual allocates them with make.
const pebbleMemoryInGoHeap = true
