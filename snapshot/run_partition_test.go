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
	ctx := context.Background()
	pr, err := coord.BeginPartitionedRun(ctx, DatasetConfig{Name: name, Guard: Guard{MaxShrink: 1}, PartitionKey: pk}, RunOptions{Schema: testSchema}, parts)
	if err != nil {
		return VersionInfo{}, err
	}
	rt, err := NewRouter(testSchema, parts, pr.PartitionKey())
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
			Schema: testSchema, Partitions: parts, Partition: p, PartitionKey: pr.PartitionKey()})
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
	return pr.Commit(ctx)
}

// singleRun commits rows into dataset name with one Run.
func singleRun(t *testing.T, db *DB, name string, parts int, rows [][]Value) VersionInfo {
	t.Helper()
	ctx := context.Background()
	r, err := db.BeginRun(ctx, DatasetConfig{Name: name, Guard: Guard{MaxShrink: 1}, Partitions: parts}, RunOptions{Schema: testSchema})
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
