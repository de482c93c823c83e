package snapshot

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestDeltaRunReadAtVersions checks that a second run classifies its rows
// against the first (D5, D6) and that reads see each version (D2): the
// current one without the deleted row, the first with it.
func TestDeltaRunReadAtVersions(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	v1 := runRows(t, db, [][]Value{{iv(3), sv("c")}, {iv(1), sv("a")}, {iv(2), sv("b")}})
	if v1.Stats.Inserted != 3 || v1.Stats.Rows != 3 {
		t.Fatalf("stats %+v", v1.Stats)
	}
	v2 := runRows(t, db, [][]Value{{iv(1), sv("a")}, {iv(2), sv("B")}, {iv(4), {}}})
	if v2.Stats.Inserted != 1 || v2.Stats.Updated != 1 || v2.Stats.Unchanged != 1 || v2.Stats.Deleted != 1 {
		t.Fatalf("stats %+v", v2.Stats)
	}
	r, err := db.Reader(ctx, "t", At{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	row, err := r.Get(ctx, []Value{iv(2)}, nil)
	if err != nil || string(row.Values[1].Bytes) != "B" {
		t.Fatalf("get: %v %v", row, err)
	}
	if _, err := r.Get(ctx, []Value{iv(3)}, nil); !errors.Is(err, ErrRowNotFound) {
		t.Fatalf("deleted row: %v", err)
	}
	r1, err := db.Reader(ctx, "t", At{Version: v1.Version})
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	row, err = r1.Get(ctx, []Value{iv(3)}, nil)
	if err != nil || string(row.Values[1].Bytes) != "c" {
		t.Fatalf("get at v1: %v %v", row, err)
	}
	got := scanJSON(t, r)
	if want := []string{`{"id":1,"name":"a"}`, `{"id":2,"name":"B"}`, `{"id":4,"name":null}`}; !slices.Equal(got, want) {
		t.Fatalf("scan %v, want %v", got, want)
	}
}
