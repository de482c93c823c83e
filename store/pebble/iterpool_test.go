package pebble

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/snapstore/snapstore/store"
)

// TestIterPoolSeesWrites checks store.S3 across pooled iterators: a read after a
// write (Apply or DeleteRange) sees it, although the reads before left idle
// iterators in the pool.
func TestIterPoolSeesWrites(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	row := []byte("r")
	for ts := int64(1); ts <= 50; ts++ {
		b := &store.Batch{Table: "t"}
		b.Put(row, []byte("c"), ts, fmt.Appendf(nil, "v%d", ts))
		if err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			cells, err := s.Get(ctx, "t", row, store.ReadOptions{MaxVersions: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(cells) != 1 || cells[0].Timestamp != ts {
				t.Fatalf("after write %d: got %v", ts, cells)
			}
		}
		it, err := s.Scan(ctx, "t", store.ScanOptions{ReadOptions: store.ReadOptions{MaxVersions: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if !it.Next() || it.Cell().Timestamp != ts {
			t.Fatalf("scan after write %d: %v", ts, it.Cell())
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteRange(ctx, "t", nil, nil); err != nil {
		t.Fatal(err)
	}
	if cells, err := s.Get(ctx, "t", row, store.ReadOptions{}); err != nil || cells != nil {
		t.Fatalf("after DeleteRange: %v, %v", cells, err)
	}
}

// TestIterPoolConcurrent reads while a writer writes and flushes: every
// reader sees a version at least as new as the last one the writer had
// applied before the read began. Run with -race.
func TestIterPoolConcurrent(t *testing.T) {
	s, err := Open(t.TempDir(), Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	row := []byte("r")
	var mu sync.Mutex
	applied := int64(0)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		val := make([]byte, 1000)
		for ts := int64(1); ts <= 2000; ts++ {
			b := &store.Batch{Table: "t"}
			b.Put(row, []byte("c"), ts, val)
			b.Put([]byte(fmt.Sprintf("x%d", ts)), []byte("c"), ts, val)
			if err := s.Apply(ctx, b); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			applied = ts
			mu.Unlock()
		}
	}()
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				mu.Lock()
				want := applied
				mu.Unlock()
				cells, err := s.Get(ctx, "t", row, store.ReadOptions{MaxVersions: 1})
				if err != nil {
					t.Error(err)
					return
				}
				if want > 0 && (len(cells) != 1 || cells[0].Timestamp < want) {
					t.Errorf("read after version %d applied: %v", want, cells)
					return
				}
			}
		}()
	}
	wg.Wait()
}
