package snapshot

import (
	"context"
	"strings"
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
