package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/snapstore/snapstore/store"
)

// testTimeBoundScan checks scans whose time range has a lower bound, which
// a backend may serve by skipping storage that holds no cell of the range
// (store.TimeRange): the cells written in a few generations (each made
// durable apart with reopen, when the suite has the hook, so that a
// backend holds them in separate files), with markers and versions removed
// by DeleteVersion after their generation, must come back exactly, from a
// full scan, a row range and after SeekRow.
func testTimeBoundScan(t *testing.T, s store.Store, reopen func(t *testing.T, closed store.Store) store.Store) {
	defer func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("closing store: %v", err)
		}
	}()
	m := newModel()
	apply := func(ms ...store.Mutation) {
		t.Helper()
		mustApply(t, s, "t", ms...)
		m.apply(&store.Batch{Table: "t", Mutations: ms})
	}
	const rows, gens = 60, 6
	row := func(i int) string { return fmt.Sprintf("r%02d", i) }
	for g := int64(1); g <= gens; g++ {
		var ms []store.Mutation
		for i := range rows {
			switch {
			case (i+int(g))%4 == 0:
				ms = append(ms, put(row(i), "a", g, fmt.Sprint("a", g)), put(row(i), "b", g, fmt.Sprint("b", g)))
			case i%7 == int(g):
				ms = append(ms, delRow(row(i), g))
			case i%11 == int(g):
				ms = append(ms, delCol(row(i), "a", g))
			}
		}
		if g > 2 {
			// Versions of an older generation removed now: a newer file
			// holds the removal than the one holding the version.
			ms = append(ms, delVersion(row(int(g)), "a", g-2), delVersion(row(int(g)+20), "b", g-1))
		}
		apply(ms...)
		if reopen != nil && g%2 == 0 {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = reopen(t, s)
		}
	}
	for _, tr := range []store.TimeRange{{Min: 3, Max: 4}, {Min: 2, Max: 5}, {Min: 5, Max: store.MaxTimestamp}, {Min: gens + 1, Max: store.MaxTimestamp}, {Min: 1, Max: 2}} {
		ro := store.ReadOptions{TimeRange: tr}
		what := fmt.Sprintf("[%d, %d)", tr.Min, tr.Max)
		expectCells(t, "scan "+what, scanAll(t, s, "t", store.ScanOptions{ReadOptions: ro}), m.read(nil, nil, ro))
		expectCells(t, "scan r10..r30 "+what, scanAll(t, s, "t", store.ScanOptions{ReadOptions: ro, Start: []byte("r10"), End: []byte("r30")}), m.read([]byte("r10"), []byte("r30"), ro))

		// Read one row in five, seeking over the rest.
		it, err := s.Scan(t.Context(), "t", store.ScanOptions{ReadOptions: ro})
		if err != nil {
			t.Fatal(err)
		}
		var got, want []store.Cell
		for i := 0; i < rows; i += 5 {
			it.SeekRow([]byte(row(i)))
			want = append(want, m.read([]byte(row(i)), []byte(row(i+1)), ro)...)
			for it.Next() {
				c := it.Cell()
				if string(c.Row) != row(i) {
					break
				}
				got = append(got, cloneCell(c))
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		expectCells(t, "seeking scan "+what, got, want)
	}
}
