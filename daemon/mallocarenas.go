//go:build !cgo || !linux

package daemon

import "log/slog"

// limitMallocArenas does nothing without cgo, where Pebble's block cache
// is Go memory, or outside Linux (mallocarenas_cgo.go).
func limitMallocArenas(*slog.Logger) {}
