package pebble

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/store"
)

// TestOpenFormat1 opens a directory written by storage format 1
// (testdata/format1, made by an earlier snapstore: SSTables and WAL) and
// checks that every cell reads as that code read it, before and after a
// reopen.
func TestOpenFormat1(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command("tar", "-C", dir, "-xzf", filepath.Join("testdata", "format1", "data.tar.gz")).CombinedOutput()
	if err != nil {
		t.Fatalf("untar: %v: %s", err, out)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "format1", "want.txt"))
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	for round := 0; round < 2; round++ {
		s, err := Open(data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for _, table := range []string{"t", "t\x00x", "ta", "d/films/0"} {
			it, err := s.Scan(context.Background(), table, store.ScanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for it.Next() {
				c := it.Cell()
				fmt.Fprintf(&got, "%q %q %q %d %s %q\n", table, c.Row, c.Column, c.Timestamp, c.Kind, c.Value)
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if got.String() != string(want) {
			t.Fatalf("round %d: the cells differ from testdata/format1/want.txt (%d bytes, want %d)", round, got.Len(), len(want))
		}
		cells, err := s.Get(context.Background(), "t", []byte("row\x000010"), store.ReadOptions{MaxVersions: 1})
		if err != nil || len(cells) != 3 {
			t.Fatalf("round %d: get: %v, %v", round, cells, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
