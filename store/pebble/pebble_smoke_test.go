package pebble

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/snapstore/snapstore/store"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &store.Batch{Table: "t"}
	b.Put([]byte("r\x00"), []byte("c"), 5, []byte("v5"))
	b.Put([]byte("r\x00"), []byte("c"), 7, []byte("v7"))
	b.DeleteRow([]byte("r\x00"), 6)
	b.Put([]byte("r"), []byte("c"), 1, []byte{})
	if err := s.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	cells, err := s.Get(ctx, "t", []byte("r\x00"), store.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 3 || cells[0].Kind != store.KindDeleteRow || cells[1].Timestamp != 7 || !bytes.Equal(cells[2].Value, []byte("v5")) {
		t.Fatalf("got %+v", cells)
	}
	it, err := s.Scan(ctx, "t", store.ScanOptions{ReadOptions: store.ReadOptions{MaxVersions: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for it.Next() {
		n++
	}
	if n != 3 {
		t.Fatalf("scan got %d cells", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if it.Next() || !errors.Is(it.Err(), store.ErrClosed) {
		t.Fatalf("iterator after close: %v", it.Err())
	}
	if err := s.Apply(ctx, b); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("apply after close: %v", err)
	}
}
