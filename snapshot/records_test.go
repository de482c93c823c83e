package snapshot

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestRecords checks the Record methods.
func TestRecords(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	db := openTestDB(t, st, Options{})
	for _, n := range []string{"b", "a", "c"} {
		if err := db.PutRecord(ctx, "conn", n, []byte("v-"+n)); err != nil {
			t.Fatal(err)
		}
	}
	db.PutRecord(ctx, "connx", "z", []byte("other kind"))
	db.PutRecord(ctx, "conn", "e", nil)
	if err := db.DeleteRecord(ctx, "conn", "c"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRecord(ctx, "conn", "absent"); err != nil {
		t.Fatal(err)
	}
	recs, err := db.ListRecords(ctx, "conn")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range recs {
		names = append(names, r.Name+"="+string(r.Value))
	}
	if want := "a=v-a b=v-b e="; strings.Join(names, " ") != want {
		t.Fatalf("records %q, want %q", strings.Join(names, " "), want)
	}
	v, err := db.GetRecord(ctx, "conn", "e")
	if err != nil || v == nil || len(v) != 0 {
		t.Fatalf("empty record: %q %v", v, err)
	}
	// Records survive a reopen.
	db.Close()
	db2 := openTestDB(t, st, Options{})
	if v, err := db2.GetRecord(ctx, "conn", "b"); err != nil || string(v) != "v-b" {
		t.Fatalf("after reopen: %q %v", v, err)
	}
}

// TestRecords_Conditional checks CompareAndSetRecord and IncrementRecord
// (store.S7, store.S8 through records): a create over an existing record,
// a replace or a delete whose expected value is stale are refused; a
// counter hands out distinct values to concurrent increments and is not a
// record's value; both work on a read-only DB, which refuses PutRecord.
func TestRecords_Conditional(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	db := openTestDB(t, st, Options{})
	ok, err := db.CompareAndSetRecord(ctx, "node", "a", nil, []byte("v1"))
	if err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	if ok, _ := db.CompareAndSetRecord(ctx, "node", "a", nil, []byte("v0")); ok {
		t.Error("a second create applied")
	}
	if ok, _ := db.CompareAndSetRecord(ctx, "node", "a", []byte("stale"), []byte("v2")); ok {
		t.Error("a replace of a stale value applied")
	}
	if ok, _ := db.CompareAndSetRecord(ctx, "node", "a", []byte("v1"), []byte("v2")); !ok {
		t.Error("a replace of the current value refused")
	}
	if v, _ := db.GetRecord(ctx, "node", "a"); string(v) != "v2" {
		t.Errorf("after the replace: %q", v)
	}
	if ok, _ := db.CompareAndSetRecord(ctx, "node", "a", []byte("v1"), nil); ok {
		t.Error("a delete of a stale value applied")
	}
	if ok, _ := db.CompareAndSetRecord(ctx, "node", "a", []byte("v2"), nil); !ok {
		t.Error("a delete of the current value refused")
	}
	if _, err := db.GetRecord(ctx, "node", "a"); !errors.Is(err, ErrRecordNotFound) {
		t.Errorf("after the delete: %v", err)
	}
	if ok, _ := db.CompareAndSetRecord(ctx, "node", "a", nil, []byte("v3")); !ok {
		t.Error("a create after the delete refused")
	}

	const workers, each = 4, 25
	seen := make(chan int64, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				n, err := db.IncrementRecord(ctx, "rot", "x", 1)
				if err != nil {
					t.Error(err)
					return
				}
				seen <- n
			}
		}()
	}
	wg.Wait()
	close(seen)
	got := map[int64]bool{}
	for n := range seen {
		if got[n] {
			t.Errorf("value %d handed out twice", n)
		}
		got[n] = true
	}
	if n, _ := db.IncrementRecord(ctx, "rot", "x", 0); n != workers*each || len(got) != workers*each {
		t.Errorf("counter %d, %d distinct values, want %d", n, len(got), workers*each)
	}
	if recs, _ := db.ListRecords(ctx, "rot"); len(recs) != 0 {
		t.Errorf("a counter listed as a record: %+v", recs)
	}

	db.Close()
	ro := openTestDB(t, st, Options{ReadOnly: true})
	if err := ro.PutRecord(ctx, "node", "b", []byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("PutRecord on a read-only DB: %v", err)
	}
	if ok, err := ro.CompareAndSetRecord(ctx, "node", "a", []byte("v3"), []byte("v4")); err != nil || !ok {
		t.Errorf("CompareAndSetRecord on a read-only DB: %v %v", ok, err)
	}
	if n, err := ro.IncrementRecord(ctx, "rot", "x", 1); err != nil || n != workers*each+1 {
		t.Errorf("IncrementRecord on a read-only DB: %d %v", n, err)
	}
}
