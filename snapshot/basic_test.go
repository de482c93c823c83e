package snapshot

import (
	"context"
	"errors"
	"testing"
)

var testSchema = Schema{
	Columns: []Column{{Name: "id", Kind: KindInt}, {Name: "name", Kind: KindString, Nullable: true}},
	Key:     []string{"id"},
}

func iv(i int64) Value  { return Value{Kind: KindInt, Int: i} }
func sv(s string) Value { return Value{Kind: KindString, Bytes: []byte(s)} }

func runRows(t *testing.T, db *DB, rows [][]Value) VersionInfo {
	t.Helper()
	ctx := context.Background()
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if err := r.Put(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	vi, err := r.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return vi
}

func TestBasicRunCommitRead(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	db := openTestDB(t, st, Options{})
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
	it, err := r.Scan(ctx, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it.Next() {
		b, _ := it.Row().MarshalJSON()
		got = append(got, string(b))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"id":1,"name":"a"}`, `{"id":2,"name":"B"}`, `{"id":4,"name":null}`}
	if len(got) != len(want) {
		t.Fatalf("scan %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("scan %v", got)
		}
	}
}
