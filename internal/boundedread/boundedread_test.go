package boundedread

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFile: a file up to the bound is read whole; one byte more, or a
// device without end (/dev/zero), is ErrTooLarge saying the bound; a
// missing file is os.Open's error.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	at := filepath.Join(dir, "at")
	over := filepath.Join(dir, "over")
	os.WriteFile(at, []byte(strings.Repeat("k", 16)), 0o600)
	os.WriteFile(over, []byte(strings.Repeat("k", 17)), 0o600)
	if b, err := File(at, 16); err != nil || len(b) != 16 {
		t.Errorf("a file of the bound: %d bytes, %v", len(b), err)
	}
	for _, p := range []string{over, "/dev/zero"} {
		if _, err := File(p, 16); !errors.Is(err, ErrTooLarge) || err.Error() != "larger than 16 bytes" {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := File(filepath.Join(dir, "missing"), 16); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
