package pebble

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/snapstore/snapstore/store"
)

// untarFormat1 unpacks testdata/format1 (a directory of storage format 1,
// SSTables and WAL, written by an earlier snapstore) into a new temporary
// directory and returns the database's path.
func untarFormat1(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("tar", "-C", dir, "-xzf", filepath.Join("testdata", "format1", "data.tar.gz")).CombinedOutput()
	if err != nil {
		t.Fatalf("untar: %v: %s", err, out)
	}
	return filepath.Join(dir, "data")
}

// checkFormat1Cells opens data and checks that every cell reads as the
// code that wrote testdata/format1 read it, and that the database is of
// the current format with no format 1 copy left.
func checkFormat1Cells(t *testing.T, data string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("testdata", "format1", "want.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
		t.Fatalf("the cells differ from testdata/format1/want.txt (%d bytes, want %d)", got.Len(), len(want))
	}
	cells, err := s.Get(context.Background(), "t", []byte("row\x000010"), store.ReadOptions{MaxVersions: 1})
	if err != nil || len(cells) != 3 {
		t.Fatalf("get: %v, %v", cells, err)
	}
	if name, err := dbComparer(vfs.Default, data); err != nil || name != comparerName {
		t.Fatalf("comparer %q, %v; want %q", name, err, comparerName)
	}
	if _, err := os.Stat(filepath.Join(data, format1Subdir)); !os.IsNotExist(err) {
		t.Fatalf("the format 1 copy is still there: %v", err)
	}
}

// TestOpenFormat1 opens a directory of storage format 1 (testdata/format1)
// and checks that every cell reads as the code that wrote it read it,
// after the upgrade and after a reopen.
func TestOpenFormat1(t *testing.T) {
	data := untarFormat1(t)
	checkFormat1Cells(t, data)
	checkFormat1Cells(t, data)
}

// TestOpenFormat1Interrupted checks the upgrade's recovery from a crash:
// after the old database was moved aside and a new one begun (the new one
// is thrown away and the copy made again), and after the copy was done but
// before the old database was deleted (it is deleted, and nothing is
// copied again).
func TestOpenFormat1Interrupted(t *testing.T) {
	t.Run("copy begun", func(t *testing.T) {
		data := untarFormat1(t)
		old := filepath.Join(data, format1Subdir)
		if err := os.Mkdir(old, 0o755); err != nil {
			t.Fatal(err)
		}
		names, _ := os.ReadDir(data)
		for _, e := range names {
			if pebbleFile(e.Name()) && e.Name() != "LOCK" {
				if err := os.Rename(filepath.Join(data, e.Name()), filepath.Join(old, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		// A new database with a key the copy never wrote.
		db, err := cpebble.Open(data, &cpebble.Options{Comparer: comparer})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Set([]byte("t\x00\x01stray\x00\x01c\x00\x01\xff\xff\xff\xff\xff\xff\xff\xfe"), []byte{1}, cpebble.Sync); err != nil {
			t.Fatal(err)
		}
		db.Close()
		checkFormat1Cells(t, data)
	})
	t.Run("copy done", func(t *testing.T) {
		data := untarFormat1(t)
		checkFormat1Cells(t, data)
		// Put a format 1 database back where the upgrade keeps it, with a
		// key that is not in the copy: the reopen must not copy again.
		old := filepath.Join(data, format1Subdir)
		spare := untarFormat1(t)
		if err := os.Rename(spare, old); err != nil {
			t.Fatal(err)
		}
		db, err := cpebble.Open(old, &cpebble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Set(append(appendTable(nil, "t"), []byte("zzz\x00\x01c\x00\x01\xff\xff\xff\xff\xff\xff\xff\xfe")...), []byte{1}, cpebble.Sync); err != nil {
			t.Fatal(err)
		}
		db.Close()
		checkFormat1Cells(t, data)
	})
}

// TestSplitRow checks the comparer's split against Pebble's rules
// (base.Split): a prefix alone sorts before its keys, prefixes order keys
// before suffixes, and suffixes order keys of one prefix.
func TestSplitRow(t *testing.T) {
	var keys [][]byte
	for _, table := range []string{"t", "t\x00", "ta", "d/films/0"} {
		tp := appendTable(nil, table)
		keys = append(keys, tp, prefixEnd(nil, tp))
		for _, row := range []string{"a", "a\x00", "a\x00b", "ab", "\x00", "\xff\x00\x01"} {
			rp := appendEscaped(bytes.Clone(tp), []byte(row))
			keys = append(keys, rp, prefixEnd(nil, rp))
			for _, col := range []string{"", "c", "c\x00", "d"} {
				for _, ts := range []int64{0, 7, 1 << 40, store.MaxTimestamp} {
					keys = append(keys, appendCellKey(nil, tp, []byte(row), []byte(col), ts))
				}
			}
		}
	}
	keys = append(keys, formatKey)
	for _, a := range keys {
		pa := a[:splitRow(a)]
		if len(pa) < len(a) && bytes.Compare(pa, a) >= 0 {
			t.Fatalf("prefix %x of %x does not sort first", pa, a)
		}
		for _, b := range keys {
			pb := b[:splitRow(b)]
			c, cp := bytes.Compare(a, b), bytes.Compare(pa, pb)
			if c <= 0 && cp > 0 || cp < 0 && c >= 0 {
				t.Fatalf("keys %x %x compare %d, their prefixes %d", a, b, c, cp)
			}
			if cp == 0 && c != bytes.Compare(a[len(pa):], b[len(pb):]) {
				t.Fatalf("keys %x %x of one prefix do not compare as their suffixes", a, b)
			}
		}
	}
}
