package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// carryChunk is the chunk size of the carry tests: keys 0, 2, 4, ...,
// chunk i holding the keys (200i-2, 200i+198].
const carryChunk = 100

// carriedRun commits next into dataset name (version prev, 4 partitions)
// as a partitioned run whose coordinator sends only the rows of the
// chunks changed, carrying the others over; the partitions are written
// through owners. spec edits each partition's spec and cheat the carried
// rows declared.
func carriedRun(t *testing.T, coord *DB, owners []*DB, name string, prev int64, next [][]Value, changed map[int]bool,
	spec func(*PartitionSpec), cheat int64) (VersionInfo, error) {
	t.Helper()
	return carriedRunOf(t, testSchema, coord, owners, name, prev, next, changed, spec, cheat)
}

// carriedRunOf is carriedRun of rows of schema, keyed by an integer id
// first.
func carriedRunOf(t *testing.T, schema Schema, coord *DB, owners []*DB, name string, prev int64, next [][]Value, changed map[int]bool,
	spec func(*PartitionSpec), cheat int64) (VersionInfo, error) {
	t.Helper()
	ctx := context.Background()
	const parts = 4
	pr, err := coord.BeginPartitionedRun(ctx, DatasetConfig{Name: name, Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: schema}, parts)
	if err != nil {
		t.Fatal(err)
	}
	key := func(id int64) []byte {
		k, err := AppendKey(nil, []Value{iv(id)})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	chunkOf := func(id int64) int { return max(0, int((id+1)/(2*carryChunk))) }
	const chunks = 5
	var carried []KeyRange
	var rows int64
	for c := range chunks {
		if changed[c] {
			continue
		}
		rows += carryChunk
		kr := KeyRange{Through: key(int64(c)*2*carryChunk + 2*carryChunk - 2)}
		if c > 0 {
			kr.After = key(int64(c)*2*carryChunk - 2)
		}
		if n := len(carried); n > 0 && slices.Equal(carried[n-1].Through, kr.After) {
			carried[n-1].Through = kr.Through
			continue
		}
		carried = append(carried, kr)
	}
	if err := pr.Carry(prev, rows+cheat); err != nil {
		t.Fatal(err)
	}
	rt, err := NewRouter(schema, parts, nil)
	if err != nil {
		t.Fatal(err)
	}
	byPart := make([][][]Value, parts)
	for _, row := range next {
		if c := chunkOf(row[0].Int); c < chunks-1 && !changed[c] || c >= chunks-1 && !changed[chunks-1] {
			continue
		}
		_, p, err := rt.Route(row)
		if err != nil {
			t.Fatal(err)
		}
		byPart[p] = append(byPart[p], row)
	}
	for p := range parts {
		ps := PartitionSpec{Dataset: name, Txn: pr.TxnID(), Version: pr.Version(), Schema: schema, Partitions: parts, Partition: p, Carried: carried}
		if spec != nil {
			spec(&ps)
		}
		w, err := owners[p%len(owners)].OpenPartition(ctx, ps)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range byPart[p] {
			if err := w.Put(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := w.Finish(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := pr.Add(rep); err != nil {
			return VersionInfo{}, errors.Join(err, pr.Abort(ctx, err.Error()))
		}
	}
	return pr.Commit(ctx)
}

// A partitioned run that carries the unchanged key ranges over, its
// coordinator sending only the rows of the changed ones (updated,
// inserted, deleted, and new rows past the last key), commits the rows,
// the counts and the checksum one Run of the whole source gives.
func TestPartitionedRunCarriesRanges(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	db1 := openTestDB(t, st, Options{})
	db2 := openTestDB(t, openSecondStore(t, dir, st), Options{})
	var first, next [][]Value
	for i := range 5 * carryChunk {
		first = append(first, []Value{iv(int64(2 * i)), sv(fmt.Sprintf("n%d", i))})
	}
	changed := map[int]bool{1: true, 4: true}
	for _, row := range first {
		id := row[0].Int
		switch {
		case id >= 200 && id < 400 && id%10 == 0: // deleted
		case id >= 200 && id < 400 && id%6 == 0:
			next = append(next, []Value{iv(id), sv("changed")})
		case id >= 800 && id%8 == 0:
			next = append(next, []Value{iv(id), {Kind: KindNull}})
			next = append(next, []Value{iv(id + 1), sv("inserted")})
		default:
			next = append(next, row)
		}
	}
	for i := range 30 { // past the last key
		next = append(next, []Value{iv(int64(1000 + i)), sv("new")})
	}
	singleRun(t, db1, "one", 4, first)
	v1, err := partitionedRun(t, db1, []*DB{db1, db2}, "spread", 4, nil, first)
	if err != nil {
		t.Fatal(err)
	}
	want := singleRun(t, db1, "one", 4, next)
	got, err := carriedRun(t, db1, []*DB{db1, db2}, "spread", v1.Version, next, changed, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, g := want.Stats, got.Stats
	w.BytesWritten, g.BytesWritten = 0, 0
	if g != w || g.Deleted == 0 || g.Updated == 0 || g.Inserted == 0 {
		t.Fatalf("carried stats %+v, one run's %+v", got.Stats, want.Stats)
	}
	if err := db2.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a, b := scanOf(t, db2, "spread"), scanOf(t, db1, "one"); !slices.Equal(a, b) {
		t.Fatalf("%d rows carried, %d by one run", len(a), len(b))
	}
}

// A carried run fails, leaving the current version as it was, when the
// rows its partitions left to carry are not what the ranges hold, or when
// a partition's writer did not carry the ranges over (it would have
// deleted their rows).
func TestPartitionedRunCarryRefusals(t *testing.T) {
	db := openTestDB(t, newTestStore(t), Options{})
	var rows [][]Value
	for i := range 5 * carryChunk {
		rows = append(rows, []Value{iv(int64(2 * i)), sv(fmt.Sprintf("n%d", i))})
	}
	v1, err := partitionedRun(t, db, []*DB{db}, "spread", 4, nil, rows)
	if err != nil {
		t.Fatal(err)
	}
	before := scanOf(t, db, "spread")
	changed := map[int]bool{2: true}
	if _, err := carriedRun(t, db, []*DB{db}, "spread", v1.Version, rows, changed, nil, 1); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a carry of one row more than the ranges leave: %v", err)
	}
	noCarry := func(ps *PartitionSpec) {
		if ps.Partition == 3 {
			ps.Carried = nil
		}
	}
	if _, err := carriedRun(t, db, []*DB{db}, "spread", v1.Version, rows, changed, noCarry, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a partition that carried nothing over: %v", err)
	}
	if d, err := db.Dataset(context.Background(), "spread"); err != nil || d.Current != v1.Version {
		t.Fatalf("after the failed runs: %+v, %v", d, err)
	}
	if after := scanOf(t, db, "spread"); !slices.Equal(after, before) {
		t.Fatalf("the failed runs changed the rows: %d before, %d after", len(before), len(after))
	}
	ctx := context.Background()
	pr, err := db.BeginPartitionedRun(ctx, DatasetConfig{Name: "spread", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema}, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Abort(ctx, "test")
	if err := pr.Carry(v1.Version-1, 0); !errors.Is(err, ErrRunClosed) {
		t.Errorf("a carry of another version: %v", err)
	}
	k := func(id int64) []byte { b, _ := AppendKey(nil, []Value{iv(id)}); return b }
	spec := PartitionSpec{Dataset: "spread", Txn: pr.TxnID(), Version: pr.Version(), Schema: testSchema, Partitions: 4,
		Carried: []KeyRange{{Through: k(10)}, {After: k(5), Through: k(20)}}}
	if _, err := db.OpenPartition(ctx, spec); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("overlapping ranges: %v", err)
	}
	spec.Carried = []KeyRange{{After: k(10), Through: k(20)}}
	w, err := db.OpenPartition(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Discard()
	rt, _ := NewRouter(testSchema, 4, nil)
	for id := int64(11); ; id++ {
		row := []Value{iv(id), sv("x")}
		if _, p, _ := rt.Route(row); p == 0 {
			if err := w.Put(ctx, row); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("a row of a carried range: %v", err)
			}
			break
		}
	}
}

// The value shapes of a carried run cover the rows of the carried ranges
// too: a zero date and a wide decimal the run did not send stay in the
// version, so its record must not call their columns regular.
func TestPartitionedRunCarriedShapes(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, openTestStore(t, dir), Options{})
	var first, next [][]Value
	for i := range 5 * carryChunk {
		id := int64(2 * i)
		row := shapeRow(id, "1.5", "2024-01-02", "2024-01-02 03:04:05", "01:02:03")
		if id == 10 { // chunk 0, carried over
			row = shapeRow(id, "123456789.25", "0000-00-00", "0000-00-00 00:00:00", "-838:59:59")
		}
		first = append(first, row)
	}
	for _, row := range first {
		if id := row[0].Int; id >= 200 && id < 400 && id%4 == 0 { // chunk 1 changed
			row = shapeRow(id, "2.5", "2024-03-04", "2024-03-04 05:06:07", "02:03:04")
		}
		next = append(next, row)
	}
	v1, _, err := partitionedRunWith(t, db, []*DB{db}, "shaped", 4, nil, RunOptions{Schema: shapeSchema}, first)
	if err != nil {
		t.Fatal(err)
	}
	want := shapesOf(t, v1)
	if !want["day"].Irregular || want["price"].IntDigits != 9 {
		t.Fatalf("first version's shapes %+v", want)
	}
	v2, err := carriedRunOf(t, shapeSchema, db, []*DB{db}, "shaped", v1.Version, next, map[int]bool{1: true}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if v2.Stats.Updated == 0 || v2.Stats.Unchanged == 0 {
		t.Fatalf("carried run's stats %+v", v2.Stats)
	}
	if v2.Shapes == nil {
		return // no record: readers look at the rows
	}
	got := shapesOf(t, v2)
	for _, col := range []string{"day", "at"} {
		if !got[col].Irregular {
			t.Errorf("column %s: carried run's shape %+v, the carried zero date is in the version", col, got[col])
		}
	}
	if got["price"].IntDigits < 9 {
		t.Errorf("price: carried run's shape %+v, the version holds 9 integer digits", got["price"])
	}
}

// A carried run at the edges of its ranges commits what one run of the
// whole source does: the last row of a changed range deleted (the next
// range, carried, begins after it), rows inserted below the first key,
// two rows swapping their values, and the last row of the last range
// deleted.
func TestPartitionedRunCarryEdges(t *testing.T) {
	base := func() [][]Value {
		var rows [][]Value
		for i := range 5 * carryChunk {
			rows = append(rows, []Value{iv(int64(2 * i)), sv(fmt.Sprintf("n%d", i))})
		}
		return rows
	}
	without := func(rows [][]Value, ids ...int64) [][]Value {
		return slices.DeleteFunc(rows, func(r []Value) bool { return slices.Contains(ids, r[0].Int) })
	}
	cases := []struct {
		name    string
		changed map[int]bool
		edit    func([][]Value) [][]Value
	}{
		{"last row of a changed range deleted", map[int]bool{0: true}, func(r [][]Value) [][]Value { return without(r, 198) }},
		{"last row of a middle range deleted", map[int]bool{2: true}, func(r [][]Value) [][]Value { return without(r, 598) }},
		{"inserted below the first key", map[int]bool{0: true}, func(r [][]Value) [][]Value {
			return append([][]Value{{iv(-7), sv("below")}, {iv(-1), sv("below")}}, r...)
		}},
		{"two rows swap values", map[int]bool{1: true}, func(r [][]Value) [][]Value {
			for _, row := range r {
				switch row[0].Int {
				case 200:
					row[1] = sv("n101")
				case 202:
					row[1] = sv("n100")
				}
			}
			return r
		}},
		{"last row of the last range deleted", map[int]bool{4: true}, func(r [][]Value) [][]Value { return without(r, 998) }},
		{"first row deleted", map[int]bool{0: true}, func(r [][]Value) [][]Value { return without(r, 0) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st := openTestStore(t, dir)
			db1 := openTestDB(t, st, Options{})
			db2 := openTestDB(t, openSecondStore(t, dir, st), Options{})
			v1, err := partitionedRun(t, db1, []*DB{db1, db2}, "spread", 4, nil, base())
			if err != nil {
				t.Fatal(err)
			}
			singleRun(t, db1, "one", 4, base())
			next := tc.edit(base())
			want := singleRun(t, db1, "one", 4, next)
			got, err := carriedRun(t, db1, []*DB{db1, db2}, "spread", v1.Version, next, tc.changed, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			w, g := want.Stats, got.Stats
			w.BytesWritten, g.BytesWritten = 0, 0
			if g != w {
				t.Errorf("carried stats %+v, one run's %+v", got.Stats, want.Stats)
			}
			if err := db2.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if a, b := scanOf(t, db2, "spread"), scanOf(t, db1, "one"); !slices.Equal(a, b) {
				t.Errorf("%d rows carried, %d by one run", len(a), len(b))
			}
		})
	}
}
