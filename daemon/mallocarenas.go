package daemon

import (
	"log/slog"

	"github.com/snapstore/snapstore/internal/cmalloc"
)

// logMallocArenas logs the limit of glibc's malloc arenas that package
// cmalloc set when the binary was loaded, if it set one (a cgo build on
// Linux without MALLOC_ARENA_MAX in the environment).
func logMallocArenas(log *slog.Logger) {
	if n := cmalloc.ArenaLimit(); n > 0 {
		log.Info("C malloc arenas limited", "arenas", n)
	}
}
