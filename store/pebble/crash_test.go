package pebble

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/snapstore/snapstore/store"
)

// crashDirEnv names the directory the child process of TestCrashDurable
// writes to.
const crashDirEnv = "SNAPSTORE_PEBBLE_CRASH_DIR"

// TestCrashDurable checks store.S2 against a real process crash: a child process
// applies Sync batches (and a NoSync batch followed by Sync), reports it,
// and is killed with SIGKILL while still open; the reopened store has every
// acknowledged batch.
func TestCrashDurable(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashDurable$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	acked := 0
	for sc.Scan() {
		if sc.Text() == "done" {
			break
		}
		acked++
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if acked != 21 {
		t.Fatalf("child acknowledged %d batches, want 21", acked)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range acked {
		row := fmt.Appendf(nil, "row%02d", i)
		cells, err := s.Get(t.Context(), "t", row, store.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) != 3 {
			t.Errorf("row %s after SIGKILL: %d cells, want 3", row, len(cells))
		}
	}
}

// crashChild writes 20 Sync batches and one NoSync batch made durable by
// Sync, printing a line after each, then "done", then waits to be killed.
func crashChild(dir string) {
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	for i := range 21 {
		b := &store.Batch{Table: "t", Sync: i < 20}
		row := fmt.Appendf(nil, "row%02d", i)
		for c := range 3 {
			b.Put(row, fmt.Appendf(nil, "c%d", c), 1, []byte("v"))
		}
		err := s.Apply(ctx, b)
		if err == nil && !b.Sync {
			err = s.Sync(ctx)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println("acked", i)
	}
	fmt.Println("done")
	select {} // killed here, the store still open
}

func TestScanStopsOnCancel(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := &store.Batch{Table: "t"}
	for i := range 2000 {
		b.Put(fmt.Appendf(nil, "r%04d", i), []byte("c"), 1, nil)
	}
	if err := s.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	it, err := s.Scan(ctx, "t", store.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		if n++; n == 10 {
			cancel()
		}
	}
	if !errors.Is(it.Close(), context.Canceled) || n >= 2000 {
		t.Errorf("scan after cancel: read %d of 2000 cells, err %v", n, it.Err())
	}
}

// TestMachineCrash checks store.S2 against a simulated machine crash: Pebble's
// crashable MemFS keeps only what was fsynced. Sync batches and batches
// followed by Store.Sync survive; a NoSync batch with no Sync after it is
// lost, which shows that the check can tell the two apart.
func TestMachineCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open("db", Options{fs: fs})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	apply := func(row string, sync bool) {
		b := &store.Batch{Table: "t", Sync: sync}
		b.Put([]byte(row), []byte("c"), 1, []byte("v"))
		if err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	apply("synced", true)
	afterSyncBatch := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	apply("nosync-then-sync", false)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	apply("nosync", false)
	afterSync := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(fs *vfs.MemFS, want map[string]int) {
		t.Helper()
		s2, err := Open("db", Options{fs: fs})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		for row, n := range want {
			cells, err := s2.Get(ctx, "t", []byte(row), store.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(cells) != n {
				t.Errorf("row %q after a machine crash: %d cells, want %d", row, len(cells), n)
			}
		}
	}
	check(afterSyncBatch, map[string]int{"synced": 1})
	check(afterSync, map[string]int{"synced": 1, "nosync-then-sync": 1, "nosync": 0})
}
