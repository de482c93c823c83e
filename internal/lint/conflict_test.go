package lint

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoConflictMarkers checks that no tracked text file holds a line a
// merge left unresolved ("<<<<<<< ", "=======" between them, ">>>>>>> "):
// Go files would not build, but a Markdown or YAML file would keep both
// sides and read as whole.
func TestNoConflictMarkers(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err) // a source archive has no merges to check
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		b, err := os.ReadFile("../../" + f)
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			continue // gone from the work tree, or binary
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, len(b)+1)
		for n := 1; sc.Scan(); n++ {
			l := sc.Text()
			if strings.HasPrefix(l, "<<<<<<< ") || strings.HasPrefix(l, ">>>>>>> ") {
				t.Errorf("%s:%d: an unresolved merge: %q", f, n, l)
			}
		}
	}
}
