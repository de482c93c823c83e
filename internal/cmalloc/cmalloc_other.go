//go:build !cgo || !linux

package cmalloc

// ArenaLimit is 0: this build sets no arena limit.
func ArenaLimit() int { return 0 }

// Trim does nothing.
func Trim() {}
