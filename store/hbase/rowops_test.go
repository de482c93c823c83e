package hbase

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/snapstore/snapstore/store"
)

// TestApplyCallsMatchesApply: ApplyCalls names the Thrift calls Apply
// makes, in order (a row with puts and deletions as a mutateRow when it is
// reached, the rest in putMultiple and deleteMultiple calls of at most
// MaxCellsPerCall cells), and applying the parts one by one writes what
// Apply writes.
func TestApplyCallsMatchesApply(t *testing.T) {
	opts := testOptions(t)
	opts.MaxCellsPerCall = 3
	s := openTest(t, opts)
	ctx := t.Context()
	b := &store.Batch{Table: "t"}
	for i := range 5 {
		b.Put([]byte(fmt.Sprint("p", i)), []byte("c"), 1, []byte("v"))
		b.DeleteVersion([]byte(fmt.Sprint("d", i)), []byte("c"), 1)
	}
	b.Put([]byte("mixed"), []byte("c"), 2, []byte("v"))
	b.DeleteVersion([]byte("mixed"), []byte("c"), 1)
	b.Put([]byte("p0"), []byte("c"), 1, []byte("last wins")) // collapses with the first put (M5)
	var methods []string
	s.afterCall = func(method string, err error) { methods = append(methods, method) }
	if err := s.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	s.afterCall = nil
	parts, err := s.ApplyCalls(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != len(methods) {
		t.Fatalf("ApplyCalls gives %d parts, Apply made the calls %v", len(parts), methods)
	}
	// Rows in the order of their last kept mutation's first appearance
	// (p0 moved to the end by its collapse): d0 p1 d1 | p2 d2 p3 | d3 p4 d4
	// fill three pairs of calls of 3 cells, mixed goes at once, p0 last.
	want := []string{methodPutMultiple, methodDeleteMultiple, methodPutMultiple, methodDeleteMultiple,
		methodPutMultiple, methodDeleteMultiple, methodMutateRow, methodPutMultiple}
	if !slices.Equal(methods, want) {
		t.Errorf("Apply's calls %v, want %v", methods, want)
	}
	n := 0
	for _, p := range parts {
		n += len(p.Mutations)
	}
	if n != len(b.Mutations)-1 {
		t.Errorf("parts hold %d mutations, want %d (one collapsed)", n, len(b.Mutations)-1)
	}
	// The parts applied to another table write the same cells.
	for _, p := range parts {
		p.Table = "u"
		if err := s.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	all := func(table string) []string {
		it, err := s.Scan(ctx, table, store.ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for it.Next() {
			c := it.Cell()
			out = append(out, fmt.Sprintf("%s/%s@%d=%s", c.Row, c.Column, c.Timestamp, c.Value))
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := all("u"), all("t"); !slices.Equal(got, want) {
		t.Errorf("parts applied one by one: %v, Apply: %v", got, want)
	}
}

// TestIncrementKeepsOneVersion: HBase writes each increment as a new
// version (M6), and Increment removes the older ones; a read (delta 0)
// writes none.
func TestIncrementKeepsOneVersion(t *testing.T) {
	s := openTest(t, testOptions(t))
	ctx := t.Context()
	for _, d := range []int64{5, 0, 3, 0, 0, 7} {
		if _, err := s.Increment(ctx, "meta", []byte("ids"), []byte("next"), d); err != nil {
			t.Fatal(err)
		}
	}
	g := tGet{row: rowKey(tablePrefix("meta"), []byte("ids")), timeRange: tTimeRange{min: 0, max: 1 << 62}, maxVersions: 1000}
	var r tResult
	res := &callResult{success: expect(thrift.STRUCT, func(ctx context.Context, p thrift.TProtocol) error { return r.read(ctx, p) })}
	if err := s.call(ctx, "reading raw", "get", func(e *enc) { e.binary(1, s.table); e.structure(2, g.write) }, res); err != nil {
		t.Fatal(err)
	}
	if len(r.cells) != 1 || string(r.cells[0].qualifier) != "#next" {
		var got []string
		for _, c := range r.cells {
			got = append(got, fmt.Sprintf("%q@%d=%x", c.qualifier, c.timestamp, c.value))
		}
		t.Fatalf("raw cells of the counter's row: %v, want one version of #next", got)
	}
	if n, err := s.Increment(ctx, "meta", []byte("ids"), []byte("next"), 0); err != nil || n != 15 {
		t.Fatalf("counter %d, %v; want 15", n, err)
	}
}
