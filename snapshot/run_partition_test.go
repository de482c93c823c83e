package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// partitionedRun commits rows into dataset name as a partitioned run of
// parts partitions: coordinated by coord, partition p written through
// owners[p%len(owners)] (DBs on one store, as nodes on one HBase table).
// Rows are placed by the partition key pk (nil: the row key). It returns
// the version, or the commit's error.
func partitionedRun(t *testing.T, coord *DB, owners []*DB, name string, parts int, pk []string, rows [][]Value) (VersionInfo, error) {
	t.Helper()
	vi, _, err := partitionedRunWith(t, coord, owners, name, parts, pk, RunOptions{Schema: testSchema}, rows)
	return vi, err
}

// partitionedRunWith is partitionedRun with the run's options (schema
// among them); it returns the run too, for what Commit recorded.
func partitionedRunWith(t *testing.T, coord *DB, owners []*DB, name string, parts int, pk []string, opts RunOptions, rows [][]Value) (VersionInfo, *PartitionedRun, error) {
	t.Helper()
	ctx := context.Background()
	pr, err := coord.BeginPartitionedRun(ctx, DatasetConfig{Name: name, Guard: Guard{MaxShrink: 1}, PartitionKey: pk}, opts, parts)
	if err != nil {
		return VersionInfo{}, nil, err
	}
	rt, err := NewRouter(opts.Schema, parts, pr.PartitionKey())
	if err != nil {
		t.Fatal(err)
	}
	byPart := make([][][]Value, parts)
	for _, row := range rows {
		_, p, err := rt.Route(row)
		if err != nil {
			t.Fatal(err)
		}
		byPart[p] = append(byPart[p], row)
	}
	for p := range parts {
		w, err := owners[p%len(owners)].OpenPartition(ctx, PartitionSpec{Dataset: name, Txn: pr.TxnID(), Version: pr.Version(),
			Schema: opts.Schema, Partitions: parts, Partition: p, PartitionKey: pr.PartitionKey()})
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
			t.Fatal(err)
		}
	}
	vi, err := pr.Commit(ctx)
	return vi, pr, err
}

// singleRun commits rows into dataset name with one Run.
func singleRun(t *testing.T, db *DB, name string, parts int, rows [][]Value) VersionInfo {
	t.Helper()
	return singleRunWith(t, db, name, parts, RunOptions{Schema: testSchema}, rows)
}

// singleRunWith is singleRun with the run's options.
func singleRunWith(t *testing.T, db *DB, name string, parts int, opts RunOptions, rows [][]Value) VersionInfo {
	t.Helper()
	ctx := context.Background()
	r, err := db.BeginRun(ctx, DatasetConfig{Name: name, Guard: Guard{MaxShrink: 1}, Partitions: parts}, opts)
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

func scanOf(t *testing.T, db *DB, name string) []string {
	t.Helper()
	r, err := db.Reader(context.Background(), name, At{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return scanJSON(t, r)
}

// A partitioned run, its partitions written by two DBs, gives the rows,
// the counts and the checksum one Run of the same rows gives: on a first
// run, and on a second with updates, deletes, inserts and rows out of
// key order (phase B in some partitions).
func TestPartitionedRunEqualsOneRun(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	db1 := openTestDB(t, st, Options{})
	db2 := openTestDB(t, openSecondStore(t, dir, st), Options{})
	const parts = 4
	var first, second [][]Value
	for i := range 500 {
		first = append(first, []Value{iv(int64(i)), sv(fmt.Sprintf("n%d", i))})
	}
	for i := 499; i >= 0; i-- { // descending: phase B
		switch {
		case i%7 == 0: // deleted
		case i%5 == 0:
			second = append(second, []Value{iv(int64(i)), sv("changed")})
		default:
			second = append(second, []Value{iv(int64(i)), sv(fmt.Sprintf("n%d", i))})
		}
	}
	for i := 500; i < 530; i++ {
		second = append(second, []Value{iv(int64(i)), {Kind: KindNull}})
	}
	for round, rows := range [][][]Value{first, second} {
		want := singleRun(t, db1, "one", parts, rows)
		got, err := partitionedRun(t, db1, []*DB{db1, db2}, "spread", parts, nil, rows)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		w, g := want.Stats, got.Stats
		w.BytesWritten, g.BytesWritten = 0, 0 // the phase-B writes differ with the order each partition saw
		if g != w {
			t.Fatalf("round %d: partitioned stats %+v, one run's %+v", round, got.Stats, want.Stats)
		}
		if err := db2.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		if a, b := scanOf(t, db2, "spread"), scanOf(t, db1, "one"); !slices.Equal(a, b) || len(a) == 0 {
			t.Fatalf("round %d: %d rows partitioned, %d by one run", round, len(a), len(b))
		}
	}
	if d, err := db1.Dataset(context.Background(), "spread"); err != nil || d.Partitions != parts {
		t.Fatalf("dataset: %+v, %v", d, err)
	}
}

// A partitioned run commits only with every partition's report, refuses
// a dataset of another partition count, and a writer refuses a row of
// another partition and a run that is not in progress.
func TestPartitionedRunRefusals(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	singleRun(t, db, "p2", 2, [][]Value{{iv(1), sv("a")}})
	if _, err := db.BeginPartitionedRun(ctx, DatasetConfig{Name: "p2"}, RunOptions{Schema: testSchema}, 4); !errors.Is(err, ErrPartitionCount) {
		t.Fatalf("another count: %v", err)
	}
	if ids := inProgressIDs(db, "p2"); len(ids) != 0 {
		t.Fatalf("the refused run stays in progress: %v", ids)
	}

	pr, err := db.BeginPartitionedRun(ctx, DatasetConfig{Name: "p2", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema}, 2)
	if err != nil {
		t.Fatal(err)
	}
	spec := PartitionSpec{Dataset: "p2", Txn: pr.TxnID(), Version: pr.Version(), Schema: testSchema, Partitions: 2}
	w, err := db.OpenPartition(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := NewRouter(testSchema, 2, nil)
	var other []Value
	for i := int64(0); other == nil; i++ {
		if _, p, _ := rt.Route([]Value{iv(i), sv("x")}); p == 1 {
			other = []Value{iv(i), sv("x")}
		}
	}
	if err := w.Put(ctx, other); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a row of partition 1 to partition 0's writer: %v", err)
	}
	rep, err := w.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pr.Add(rep); err != nil {
		t.Fatal(err)
	}
	if err := pr.Add(rep); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a partition reported twice: %v", err)
	}
	if _, err := pr.Commit(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("commit with partition 1 missing: %v", err)
	}
	if rows := scanOf(t, db, "p2"); !slices.Equal(rows, []string{`{"id":1,"name":"a"}`}) {
		t.Fatalf("after the refused commit: %v", rows)
	}
	if _, err := db.OpenPartition(ctx, spec); !errors.Is(err, ErrRunClosed) {
		t.Fatalf("a partition of an aborted run: %v", err)
	}
}

// A partitioned run whose schema adds a column and reorders the others
// packs every row version with the dataset's dictionary, which the
// coordinator's begin extended before the partitions opened: the rows,
// counts and checksum equal those of one Run, and a second partitioned
// run of the same rows finds every row unchanged.
func TestPartitionedRunNewColumn(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	db1 := openTestDB(t, st, Options{})
	db2 := openTestDB(t, openSecondStore(t, dir, st), Options{})
	const parts = 3
	var first [][]Value
	for i := range 200 {
		first = append(first, []Value{iv(int64(i)), sv(fmt.Sprintf("n%d", i))})
	}
	wide := Schema{Columns: []Column{{Name: "zone", Kind: KindString, Nullable: true}, {Name: "id", Kind: KindInt}, {Name: "name", Kind: KindString, Nullable: true}}, Key: []string{"id"}}
	var second [][]Value
	for i := range 200 {
		name := sv(fmt.Sprintf("n%d", i))
		if i%3 == 0 {
			name = sv("renamed")
		}
		second = append(second, []Value{sv(fmt.Sprintf("z%d", i%4)), iv(int64(i)), name})
	}
	ctx := context.Background()
	singleRun(t, db1, "one", parts, first)
	if _, err := partitionedRun(t, db1, []*DB{db1, db2}, "spread", parts, nil, first); err != nil {
		t.Fatal(err)
	}
	want := singleRunWith(t, db1, "one", parts, RunOptions{Schema: wide}, second)
	got, _, err := partitionedRunWith(t, db1, []*DB{db2, db1}, "spread", parts, nil, RunOptions{Schema: wide}, second)
	if err != nil {
		t.Fatal(err)
	}
	w, g := want.Stats, got.Stats
	w.BytesWritten, g.BytesWritten = 0, 0
	if g != w || g.Updated != 200 {
		t.Fatalf("partitioned stats %+v, one run's %+v", got.Stats, want.Stats)
	}
	if err := db2.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	a, b := scanOf(t, db2, "spread"), scanOf(t, db1, "one")
	if !slices.Equal(a, b) || len(a) != 200 || a[0] != `{"zone":"z0","id":0,"name":"renamed"}` {
		t.Fatalf("partitioned %v\none run %v", a[:min(3, len(a))], b[:min(3, len(b))])
	}
	again, _, err := partitionedRunWith(t, db1, []*DB{db1, db2}, "spread", parts, nil, RunOptions{Schema: wide}, second)
	if err != nil {
		t.Fatal(err)
	}
	if again.Stats.Unchanged != 200 || again.Stats.Checksum != got.Stats.Checksum {
		t.Fatalf("the same rows again: %+v (checksum before %s)", again.Stats, got.Stats.Checksum)
	}
}

// A partitioned run that changes nothing in any partition, with
// VerifyUnchanged, records the current version verified on the
// coordinator instead of committing a copy; one that changes a row
// commits as usual.
func TestPartitionedRunVerifiesUnchanged(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	db1 := openTestDB(t, st, Options{})
	db2 := openTestDB(t, openSecondStore(t, dir, st), Options{})
	const parts = 4
	var rows [][]Value
	for i := range 100 {
		rows = append(rows, []Value{iv(int64(i)), sv(fmt.Sprintf("n%d", i))})
	}
	opts := RunOptions{Schema: testSchema, VerifyUnchanged: true}
	first, _, err := partitionedRunWith(t, db1, []*DB{db1, db2}, "v", parts, nil, opts, rows)
	if err != nil {
		t.Fatal(err)
	}
	vi, pr, err := partitionedRunWith(t, db1, []*DB{db1, db2}, "v", parts, nil, opts, rows)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Verified() || vi.Version != first.Version || vi.VerifiedAt == nil {
		t.Fatalf("nothing changed: verified %v, version %d (first %d), verified at %v", pr.Verified(), vi.Version, first.Version, vi.VerifiedAt)
	}
	d, err := db1.Dataset(context.Background(), "v")
	if err != nil || d.Current != first.Version {
		t.Fatalf("current after the verification: %+v, %v", d, err)
	}
	if ids := inProgressIDs(db1, "v"); len(ids) != 0 {
		t.Fatalf("the verified run's transaction stays in progress: %v", ids)
	}
	rows[42] = []Value{iv(42), sv("changed")}
	vi, pr, err = partitionedRunWith(t, db1, []*DB{db2, db1}, "v", parts, nil, opts, rows)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Verified() || vi.Version <= first.Version || vi.Stats.Updated != 1 {
		t.Fatalf("one row changed: verified %v, %+v", pr.Verified(), vi)
	}
}

// A first run's partition written twice (the coordinator sent its stream
// again after the first writer was discarded mid-way, with part of its
// rows loaded) gives the rows one Run gives: the discarded attempt's
// load is dropped, and what it flushed is the same cells at the same id.
func TestPartitionedRunPartitionWrittenAgain(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	const parts = 2
	var rows [][]Value
	for i := range 300 {
		rows = append(rows, []Value{iv(int64(i)), sv(fmt.Sprintf("n%d", i))})
	}
	want := singleRun(t, db, "one", parts, rows)
	pr, err := db.BeginPartitionedRun(ctx, DatasetConfig{Name: "again", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema}, parts)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := NewRouter(testSchema, parts, nil)
	byPart := make([][][]Value, parts)
	for _, row := range rows {
		_, p, _ := rt.Route(row)
		byPart[p] = append(byPart[p], row)
	}
	spec := PartitionSpec{Dataset: "again", Txn: pr.TxnID(), Version: pr.Version(), Schema: testSchema, Partitions: parts}
	for p := range parts {
		spec.Partition = p
		w, err := db.OpenPartition(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		// The first attempt: half the rows, then one out of order (the
		// load flushes at the switch to phase B), then discarded.
		half := byPart[p][:len(byPart[p])/2]
		for _, row := range half {
			if err := w.Put(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Put(ctx, byPart[p][0]); err == nil {
			t.Fatal("a key given twice in phase A: no error")
		}
		w.Discard()
		if w, err = db.OpenPartition(ctx, spec); err != nil {
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
			t.Fatal(err)
		}
	}
	got, err := pr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, g := want.Stats, got.Stats
	w.BytesWritten, g.BytesWritten = 0, 0
	if g != w {
		t.Fatalf("partitioned stats %+v, one run's %+v", got.Stats, want.Stats)
	}
	if a, b := scanOf(t, db, "again"), scanOf(t, db, "one"); !slices.Equal(a, b) || len(a) != 300 {
		t.Fatalf("%d rows partitioned, %d by one run", len(a), len(b))
	}
}
