package pebble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snapstore/snapstore/store"
)

func TestFormatVersion(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DB().Set(formatKey, []byte("99"), cpebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrIncompatibleFormat) {
		t.Fatalf("open with format 99: %v, want ErrIncompatibleFormat", err)
	}
	// The failed Open released the directory lock.
	s2, err := cpebble.Open(dir, &cpebble.Options{Comparer: comparer, Logger: slogBridge{slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatalf("directory still locked after a refused Open: %v", err)
	}
	s2.Close()
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	dir := t.TempDir()
	s, err := Open(dir, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	b := &store.Batch{Table: "t", Sync: true}
	val := make([]byte, 4096)
	rand.NewChaCha8([32]byte{1}).Read(val)
	b.Put([]byte("r"), []byte("c"), 1, val)
	if err := s.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().Flush(); err != nil {
		t.Fatal(err)
	}
	values := gather(t, reg)
	for _, name := range []string{
		"snapstore_pebble_disk_usage_bytes", "snapstore_pebble_memtable_bytes", "snapstore_pebble_read_amplification",
		"snapstore_pebble_block_cache_bytes", "snapstore_pebble_block_cache_reserved_bytes", "snapstore_pebble_block_cache_hits_total", "snapstore_pebble_block_cache_misses_total",
		"snapstore_pebble_compactions_total", "snapstore_pebble_flushes_total",
	} {
		if _, ok := values[name]; !ok {
			t.Errorf("metric %s not registered", name)
		}
	}
	if v := values["snapstore_pebble_disk_usage_bytes"]; v < 4096 {
		t.Errorf("disk usage %v bytes after flushing 4 KiB of random bytes", v)
	}
	if v := values["snapstore_pebble_flushes_total"]; v < 1 {
		t.Errorf("flushes %v after a flush", v)
	}
	// A second store on the same registry is refused while the first is open.
	if _, err := Open(t.TempDir(), Options{Registerer: reg}); err == nil {
		t.Error("second store registered the same metric names")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(gather(t, reg)); n != 0 {
		t.Errorf("%d metrics left registered after Close", n)
	}
	s, err = Open(dir, Options{Registerer: reg})
	if err != nil {
		t.Fatalf("reopen with the same registry: %v", err)
	}
	s.Close()
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		switch {
		case m.GetGauge() != nil:
			out[mf.GetName()] = m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			out[mf.GetName()] = m.GetCounter().GetValue()
		}
	}
	return out
}

func TestLoggerBridge(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := slogBridge{l}
	b.Infof("opened %d tables", 3)
	b.Errorf("background error: %s", "disk full")
	out := buf.String()
	if !strings.Contains(out, "level=DEBUG msg=\"opened 3 tables\" component=pebble") || !strings.Contains(out, "level=ERROR msg=\"background error: disk full\"") {
		t.Errorf("bridged log:\n%s", out)
	}
	// At info, snapstore's default level, Pebble's own Infof lines stay out
	// of the log; its errors do not.
	buf.Reset()
	b = slogBridge{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	b.Infof("Found %d WALs", 0)
	b.Errorf("background error: %s", "disk full")
	if out := buf.String(); strings.Contains(out, "WALs") || !strings.Contains(out, "disk full") {
		t.Errorf("bridged log at info:\n%s", out)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("Fatalf returned")
		}
	}()
	b.Fatalf("corruption in %s", "000001.sst")
}

// TestCorruptKey writes a key that does not parse inside a table's range:
// reads fail with an error, nothing panics.
func TestCorruptKey(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp := appendTable(nil, "t")
	if err := s.DB().Set(append(tp, "row-without-terminator"...), []byte{1}, cpebble.Sync); err != nil {
		t.Fatal(err)
	}
	it, err := s.Scan(t.Context(), "t", store.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if it.Next() {
		t.Error("Next over a corrupt key returned a cell")
	}
	if err := it.Close(); err == nil || !strings.Contains(err.Error(), "corrupt key") {
		t.Errorf("scan over a corrupt key: %v", err)
	}
	// A valid key with an empty value (no kind byte).
	if err := s.DB().Set(appendCellKey(nil, tp, []byte("r"), []byte("c"), 1), nil, cpebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "t", []byte("r"), store.ReadOptions{}); err == nil {
		t.Error("get of a cell without a kind byte: no error")
	}
}

// TestApplyAllocations checks that Apply allocates per batch, not per
// mutation: a reused 1000-mutation batch costs a bounded number of
// allocations.
func TestApplyAllocations(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := &store.Batch{Table: "d/films/0"}
	rows := make([][]byte, 100)
	for i := range rows {
		rows[i] = fmt.Appendf(nil, "row%05d", i)
	}
	cols := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e"), []byte("f"), []byte("g"), []byte("h"), []byte("i"), []byte("j")}
	val := []byte("some value of a column")
	ts := int64(1)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(20, func() {
		b.Reset()
		for _, r := range rows {
			for _, c := range cols {
				b.Put(r, c, ts, val)
			}
		}
		ts++
		if err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 20 {
		t.Errorf("Apply of 1000 mutations: %.0f allocations, want <= 20", allocs)
	}
}

// TestIteratorCloseOrder checks that closing an iterator after the store,
// and the store after some iterators were closed, is fine.
func TestIteratorCloseOrder(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &store.Batch{Table: "t"}
	b.Put([]byte("r"), []byte("c"), 1, []byte("v"))
	if err := s.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	var its []store.Iterator
	for range 4 {
		it, err := s.Scan(t.Context(), "t", store.ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		its = append(its, it)
	}
	if err := its[0].Close(); err != nil {
		t.Fatal(err)
	}
	if err := its[0].Close(); err != nil {
		t.Errorf("second iterator Close: %v", err)
	}
	if !its[1].Next() {
		t.Fatal(its[1].Err())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, it := range its[1:] {
		if it.Next() {
			t.Error("Next after store Close returned a cell")
		}
		if c := it.Cell(); c.Row != nil {
			t.Errorf("Cell after store Close: %+v", c)
		}
		if err := it.Close(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("iterator Close after store Close: %v", err)
		}
	}
}

func TestOpenBadOptions(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, Options{MemTableSize: 8 << 30}); err == nil {
		t.Fatal("open with an 8 GiB memtable: no error")
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("open after a refused open: %v", err)
	}
	s.Close()
}

// TestOpen_LockedDirectory: a second Open of a directory that a Store
// holds fails and leaves nothing running (TestMain's goleak check): no
// disk-health goroutine of the failed Open.
func TestOpen_LockedDirectory(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s2, err := Open(dir, Options{}); err == nil {
		s2.Close()
		t.Fatal("a second Open of a held directory succeeded")
	}
}
