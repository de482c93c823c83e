package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestScanRowsOwnTheirMemory keeps every Row a scan and a diff return and
// checks them all at the end: the rows carved from one slab (rowAlloc)
// never share a value, whether their bytes fit a slab or not.
func TestScanRowsOwnTheirMemory(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	text := func(i, gen int) string {
		// Lengths from 0 to 20k bytes: most rows share slabs, some need
		// their own buffer.
		n := (i * 7919) % 300
		if i%97 == 0 {
			n = 20_000
		}
		return fmt.Sprintf("g%d-%d-", gen, i) + strings.Repeat(string(rune('a'+i%26)), n)
	}
	rowsOf := func(gen int) [][]Value {
		var rows [][]Value
		for i := range 3000 {
			rows = append(rows, []Value{iv(int64(i)), sv(text(i, gen))})
		}
		return rows
	}
	v1 := singleRun(t, db, "t", 1, rowsOf(1))
	v2 := singleRun(t, db, "t", 1, rowsOf(2))

	r, err := db.Reader(ctx, "t", At{Version: v2.Version})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it, err := r.Scan(ctx, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var kept []Row
	for it.Next() {
		kept = append(kept, it.Row())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if len(kept) != 3000 {
		t.Fatalf("scan: %d rows, want 3000", len(kept))
	}
	for i, row := range kept {
		if row.Key[0].Int != int64(i) || string(row.Values[1].Bytes) != text(i, 2) || row.Values[0].Int != int64(i) {
			t.Fatalf("row %d kept from the scan reads key %v, %.20q", i, row.Key[0].Int, row.Values[1].Bytes)
		}
	}

	d, err := db.Diff(ctx, "t", v1.Version, v2.Version)
	if err != nil {
		t.Fatal(err)
	}
	var changes []Change
	for d.Next() {
		changes = append(changes, d.Change())
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if len(changes) != 3000 {
		t.Fatalf("diff: %d changes, want 3000", len(changes))
	}
	for i, c := range changes {
		if string(c.Before.Values[1].Bytes) != text(i, 1) || string(c.After.Values[1].Bytes) != text(i, 2) || c.Key[0].Int != int64(i) {
			t.Fatalf("change %d kept from the diff reads %.20q -> %.20q", i, c.Before.Values[1].Bytes, c.After.Values[1].Bytes)
		}
	}
}

// TestScanAppendValuesMatchRow reads every row of scans both ways, values
// borrowed from the scan and the built Row, over rows whose newest
// version is whole, a change on top of an older one, or NULL, in two
// partitions, with every column and with a selection.
func TestScanAppendValuesMatchRow(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	rowsOf := func(gen int) [][]Value {
		var rows [][]Value
		for i := range 2000 {
			name := sv(fmt.Sprintf("row %d", i))
			switch {
			case gen == 2 && i%3 == 0:
				name = sv(fmt.Sprintf("row %d changed %s", i, strings.Repeat("x", i%50)))
			case gen == 2 && i%7 == 0:
				name = Value{}
			}
			rows = append(rows, []Value{iv(int64(i)), name})
		}
		return rows
	}
	singleRun(t, db, "t", 2, rowsOf(1))
	v2 := singleRun(t, db, "t", 2, rowsOf(2))
	want := rowsOf(2)

	r, err := db.Reader(ctx, "t", At{Version: v2.Version})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, sel := range [][]string{nil, {"name"}} {
		it, err := r.Scan(ctx, ScanOptions{Columns: sel})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		var vals []Value
		for it.Next() {
			if vals, err = it.AppendValues(vals[:0]); err != nil {
				t.Fatal(err)
			}
			row := it.Row()
			if !slices.Equal(it.Columns(), row.Columns) || len(vals) != len(row.Values) {
				t.Fatalf("columns %v: values of columns %v, %d of them; the row's %v, %d", sel, it.Columns(), len(vals), row.Columns, len(row.Values))
			}
			for j, v := range vals {
				if !v.Equal(row.Values[j]) || !v.Equal(want[n][len(want[n])-len(vals)+j]) {
					t.Fatalf("columns %v, row %d, column %s: value %v, the row's %v", sel, n, row.Columns[j], v, row.Values[j])
				}
			}
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if n != len(want) {
			t.Fatalf("columns %v: %d rows, want %d", sel, n, len(want))
		}
	}

	it, err := r.Scan(ctx, ScanOptions{Start: []Value{iv(5)}, End: []Value{iv(5)}, Columns: []string{"name"}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.Next() || !slices.Equal(it.Columns(), []string{"name"}) {
		t.Fatalf("an empty range names columns %v, want [name]", it.Columns())
	}
}
