package records

import (
	"context"
	"errors"
	"testing"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/pebble"
)

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := pebble.Open(t.TempDir(), pebble.Options{MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestStore_Layout checks that a record is the row and columns
// docs/storage-format.md gives, so that stores written before read the
// same: a cell written there is the record, and a record written is there.
func TestStore_Layout(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	s := New(st, "meta")
	b := &store.Batch{Table: "meta", Sync: true}
	b.Put([]byte("s\x00rec\x00cluster.node\x00n1"), []byte("v"), 0, []byte(`{"id":"n1"}`))
	if err := st.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "cluster.node", "n1"); err != nil || string(v) != `{"id":"n1"}` {
		t.Fatalf("record from the stored row: %q %v", v, err)
	}
	if ok, err := s.CompareAndSet(ctx, "cluster", "partitions", nil, []byte("t1")); err != nil || !ok {
		t.Fatalf("first write of a record: %v %v", ok, err)
	}
	cells, err := st.Get(ctx, "meta", []byte("s\x00rec\x00cluster\x00partitions"), store.ReadOptions{MaxVersions: 1})
	if err != nil || len(cells) != 1 || string(cells[0].Column) != "v" || string(cells[0].Value) != "t1" {
		t.Fatalf("stored row of a record: %+v %v", cells, err)
	}
	if n, err := s.Increment(ctx, "cluster", "partitions", 2); err != nil || n != 2 {
		t.Fatalf("increment: %d %v", n, err)
	}
	if n, err := st.Increment(ctx, "meta", []byte("s\x00rec\x00cluster\x00partitions"), []byte("n"), 0); err != nil || n != 2 {
		t.Fatalf("stored counter of a record: %d %v", n, err)
	}
}

// TestStore_Conditions checks compare-and-set against the value read, the
// delete by a nil value, List in name order within one kind, and the
// errors: ErrNotFound, and a NameError for a name that cannot be a row.
func TestStore_Conditions(t *testing.T) {
	ctx := context.Background()
	s := New(openStore(t), "meta")
	if ok, _ := s.CompareAndSet(ctx, "k", "a", nil, []byte("1")); !ok {
		t.Fatal("create refused")
	}
	if ok, _ := s.CompareAndSet(ctx, "k", "a", nil, []byte("2")); ok {
		t.Error("create over an existing record")
	}
	if ok, _ := s.CompareAndSet(ctx, "k", "a", []byte("0"), []byte("2")); ok {
		t.Error("write from a stale value")
	}
	if ok, _ := s.CompareAndSet(ctx, "k", "a", []byte("1"), []byte("2")); !ok {
		t.Error("write from the value read refused")
	}
	s.Put(ctx, "k", "c", []byte("3"))
	s.Put(ctx, "k", "b", []byte("4"))
	s.Put(ctx, "kk", "a", []byte("other kind"))
	recs, err := s.List(ctx, "k")
	if err != nil || len(recs) != 3 || recs[0].Name != "a" || recs[1].Name != "b" || recs[2].Name != "c" || string(recs[0].Value) != "2" {
		t.Fatalf("list: %+v %v", recs, err)
	}
	if ok, _ := s.CompareAndSet(ctx, "k", "a", []byte("2"), nil); !ok {
		t.Error("delete from the value read refused")
	}
	if _, err := s.Get(ctx, "k", "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("get of a deleted record: %v", err)
	}
	var ne *NameError
	if _, err := s.Get(ctx, "k", "a\x00b"); !errors.As(err, &ne) {
		t.Errorf("name with NUL: %v", err)
	}
	if err := s.Put(ctx, "", "a", nil); !errors.As(err, &ne) {
		t.Errorf("empty kind: %v", err)
	}
}
