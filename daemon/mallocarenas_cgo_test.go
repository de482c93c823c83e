//go:build cgo && linux

package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// TestLimitMallocArenas checks that glibc takes the arena limit, and that
// MALLOC_ARENA_MAX, the operator's, is left alone.
func TestLimitMallocArenas(t *testing.T) {
	t.Setenv("MALLOC_ARENA_MAX", "") // restored after the test
	os.Unsetenv("MALLOC_ARENA_MAX")
	var buf bytes.Buffer
	limitMallocArenas(slog.New(slog.NewTextHandler(&buf, nil)))
	if !strings.Contains(buf.String(), "C malloc arenas limited") {
		t.Fatalf("no limit set: %q", buf.String())
	}
	buf.Reset()
	t.Setenv("MALLOC_ARENA_MAX", "4")
	limitMallocArenas(slog.New(slog.NewTextHandler(&buf, nil)))
	if buf.Len() != 0 {
		t.Fatalf("a limit set over MALLOC_ARENA_MAX: %q", buf.String())
	}
}
