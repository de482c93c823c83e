package snapshot

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/snapstore/snapstore/store"
)

// format1Fixture is testdata/format1/films.json: every cell a store of
// metadata format 1 held, and what that code read from it (README.md
// there).
type format1Fixture struct {
	Cells []struct {
		Table  string `json:"table"`
		Row    string `json:"row"`
		Column string `json:"column"`
		TS     int64  `json:"ts"`
		Kind   uint8  `json:"kind"`
		Value  string `json:"value"`
	} `json:"cells"`
	Versions map[string][]struct {
		Version int64    `json:"version"`
		Rows    []string `json:"rows"`
	} `json:"versions"`
	Current    map[string]int64            `json:"current"`
	Tags       map[string]map[string]int64 `json:"tags"`
	MaxID      int64                       `json:"max_id"`
	InProgress int64                       `json:"in_progress"`
	Invalid    []int64                     `json:"invalid"`
}

// writeFormat1 loads the fixture's cells into st and returns the fixture.
func writeFormat1(t *testing.T, st store.Store) format1Fixture {
	t.Helper()
	b, err := os.ReadFile("testdata/format1/films.json")
	if err != nil {
		t.Fatal(err)
	}
	var f format1Fixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	batches := map[string]*store.Batch{}
	for _, c := range f.Cells {
		row, err1 := hex.DecodeString(c.Row)
		val, err2 := hex.DecodeString(c.Value)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		bt := batches[c.Table]
		if bt == nil {
			bt = &store.Batch{Table: c.Table, Sync: true}
			batches[c.Table] = bt
		}
		m := store.Mutation{Op: store.OpPut, Cell: store.Cell{Row: row, Column: []byte(c.Column), Timestamp: c.TS, Kind: store.CellKind(c.Kind)}}
		if m.Cell.Kind == store.KindPut {
			m.Cell.Value = val
		}
		bt.Mutations = append(bt.Mutations, m)
	}
	for _, bt := range batches {
		if err := st.Apply(t.Context(), bt); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestOpenFormat1 opens a store written with metadata format 1 (one row
// per version, tag and transaction; a process-wide writer lease): Open
// moves it to format 2, and every kept version, tag and record reads as
// the old code read it; the transaction left in progress and the invalid
// ones stay invisible; ids go on above every id used; the old rows are
// gone; a second Open finds format 2.
func TestOpenFormat1(t *testing.T) {
	ctx := t.Context()
	st := newTestStore(t)
	f := writeFormat1(t, st)
	for open := range 2 {
		db := openTestDB(t, st, Options{})
		for ds, vs := range f.Versions {
			info, err := db.Dataset(ctx, ds)
			if err != nil {
				t.Fatalf("open %d: %s: %v", open, ds, err)
			}
			if info.Current != f.Current[ds] {
				t.Fatalf("open %d: %s current %d, want %d", open, ds, info.Current, f.Current[ds])
			}
			got, err := db.Versions(ctx, ds)
			if err != nil || len(got) != len(vs) {
				t.Fatalf("open %d: %s versions %+v, %v; want %d", open, ds, got, err, len(vs))
			}
			for _, v := range vs {
				r, err := db.Reader(ctx, ds, At{Version: v.Version})
				if err != nil {
					t.Fatalf("open %d: %s version %d: %v", open, ds, v.Version, err)
				}
				if rows := scanJSON(t, r); !slices.Equal(rows, v.Rows) {
					t.Fatalf("open %d: %s version %d reads %v, want %v", open, ds, v.Version, rows, v.Rows)
				}
				r.Close()
			}
			for tag, v := range f.Tags[ds] {
				r, err := db.Reader(ctx, ds, At{Tag: tag})
				if err != nil || r.Version().Version != v {
					t.Fatalf("open %d: %s tag %s: %v", open, ds, tag, err)
				}
				r.Close()
			}
		}
		if _, err := db.Reader(ctx, "films", At{Tag: "late"}); !errors.Is(err, ErrTagNotFound) {
			t.Fatalf("the tag the rollback of format 1 removed: %v", err)
		}
		if _, err := db.Dataset(ctx, "empty"); err != nil {
			t.Fatalf("dataset with no version: %v", err)
		}
		rec, err := db.GetRecord(ctx, "connection", "shop")
		if err != nil || string(rec) != `{"type":"sqlite"}` {
			t.Fatalf("record: %q %v", rec, err)
		}
		excluded := append(invalidIDs(db, "films"), inProgressIDs(db, "films")...)
		for _, id := range []int64{f.InProgress, 5} {
			if !slices.Contains(excluded, id) {
				t.Fatalf("open %d: txn %d not excluded: %v", open, id, excluded)
			}
		}
		db.Close()
	}
	// Nothing of format 1 is left.
	it, err := st.Scan(ctx, "meta", store.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		c := it.Cell()
		for _, old := range [][]byte{[]byte("s\x00tag\x00"), []byte("s\x00lease"), []byte("t\x00hwm"), []byte("t\x00ip\x00"), []byte("t\x00inv\x00")} {
			if bytes.HasPrefix(c.Row, old) {
				t.Errorf("a format-1 row is left: %q %s", c.Row, c.Column)
			}
		}
		if bytes.HasPrefix(c.Row, prefixDataset) && !bytes.Equal(c.Column, colState) {
			t.Errorf("a format-1 column is left: %q %s", c.Row, c.Column)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// A run goes on above every id used, and reads exactly its source.
	db := openTestDB(t, st, Options{})
	schema := Schema{Columns: []Column{{Name: "id", Kind: KindInt}, {Name: "title", Kind: KindString, Nullable: true}, {Name: "rating", Kind: KindInt, Nullable: true}}, Key: []string{"id"}}
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "films", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if r.TxnID() <= f.MaxID {
		t.Fatalf("first id after the migration %d, ids up to %d were used", r.TxnID(), f.MaxID)
	}
	for _, row := range [][]Value{{iv(1), sv("alien"), iv(5)}, {iv(10), sv("jaws"), iv(4)}} {
		if err := r.Put(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rd, err := db.Reader(ctx, "films", At{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	want := []string{`{"id":1,"title":"alien","rating":5}`, `{"id":10,"title":"jaws","rating":4}`}
	if got := scanJSON(t, rd); !slices.Equal(got, want) {
		t.Fatalf("the run after the migration reads %v, want %v", got, want)
	}
}

// TestReadOnlyRefusesFormat1: a read-only DB cannot migrate, and says so.
func TestReadOnlyRefusesFormat1(t *testing.T) {
	st := newTestStore(t)
	writeFormat1(t, st)
	if _, err := Open(t.Context(), st, Options{ReadOnly: true}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only open of format 1: %v", err)
	}
}
