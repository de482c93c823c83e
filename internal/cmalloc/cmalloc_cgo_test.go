//go:build cgo && linux

package cmalloc

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestArenaLimit checks that loading the package limits glibc to one
// arena, and that a MALLOC_ARENA_MAX in the environment, the operator's,
// is left to glibc: the test binary runs itself again with one set.
func TestArenaLimit(t *testing.T) {
	if v, ok := os.LookupEnv("MALLOC_ARENA_MAX"); ok {
		if got := ArenaLimit(); got != 0 {
			t.Fatalf("MALLOC_ARENA_MAX=%s: ArenaLimit %d, want 0 (glibc's)", v, got)
		}
		return
	}
	if got := ArenaLimit(); got != 1 {
		t.Fatalf("ArenaLimit %d, want 1", got)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestArenaLimit$", "-test.v")
	cmd.Env = append(os.Environ(), "MALLOC_ARENA_MAX=4")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestArenaLimit") {
		t.Fatalf("with MALLOC_ARENA_MAX=4: %v\n%s", err, out)
	}
}
