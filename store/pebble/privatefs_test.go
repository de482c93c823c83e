package pebble

import (
	"context"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/snapstore/snapstore/store"
)

// TestOpen_PrivateFiles: a fresh data directory is 0700 and every file
// Pebble writes in it (WAL, MANIFEST, OPTIONS, tables, the lock) is 0600,
// under the usual umask 022 that would leave them world-readable.
func TestOpen_PrivateFiles(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(dir, Options{MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b := &store.Batch{Table: "t", Sync: true}
	b.Put([]byte("row"), []byte("password"), 1, []byte("hunter2"))
	if err := s.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil { // an SSTable too
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		files := 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			want := privateFileMode
			if d.IsDir() {
				want = privateDirMode
			} else {
				files++
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if files < 4 {
			t.Errorf("%d files in %s, want Pebble's WAL, MANIFEST, OPTIONS and more", files, dir)
		}
	}
	check()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening writes new MANIFEST, OPTIONS and WAL files: private too.
	if s, err = Open(dir, Options{MemTableSize: 4 << 20, CacheSize: 8 << 20}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check()
}
