package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/snapstore/snapstore/store"
)

// partitionsOfRows returns, per encoded row key, the partitions of
// dataset name whose table holds a row of that key visible at version v.
func partitionsOfRows(t *testing.T, db *DB, name string, parts int, v int64) map[string][]int {
	t.Helper()
	ctx := context.Background()
	r, err := db.Reader(ctx, name, At{Version: v})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string][]int{}
	for p := range parts {
		it, err := db.st.Scan(ctx, dataTable(name, p), store.ScanOptions{ReadOptions: r.opts})
		if err != nil {
			t.Fatal(err)
		}
		rr := newRowReader(it)
		var st resolvedRow
		for rr.next() {
			if err := st.resolveCells(rr.cells, r.vis, r.n); err != nil {
				t.Fatal(err)
			}
			if st.present() {
				out[string(rr.cur)] = append(out[string(rr.cur)], p)
			}
		}
		if err := rr.close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// rowKeyOf encodes row's key (testSchema: id).
func rowKeyOf(t *testing.T, row []Value) []byte {
	t.Helper()
	k, err := appendKeyValue(nil, row[0])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// diffOps lists a diff's changes as "op key" strings.
func diffOps(t *testing.T, db *DB, name string, from, to int64) []string {
	t.Helper()
	d, err := db.Diff(context.Background(), name, from, to)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for d.Next() {
		c := d.Change()
		out = append(out, fmt.Sprintf("%s %v %v", c.Op, FormatKey(testSchema.Key, c.Key), c.Changed))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A partitioned run placing rows by a nullable column that is not the
// key ("name"): rows of one name, and every row whose name is NULL, are
// in one partition; rows, reads and diffs equal those of one Run of the
// same rows into one partition, and so does the checksum. On a second run
// rows whose name changed move to their new partition, and each is
// counted as a delete in the old partition and an insert in the new one;
// the diff reports it as an update, point reads find it at both versions.
func TestPartitionKeyOtherThanRowKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	db1 := openTestDB(t, st, Options{})
	db2 := openTestDB(t, openSecondStore(t, dir, st), Options{})
	const parts = 4
	pk := []string{"name"}
	nameOf := func(i int) Value {
		if i%7 == 0 {
			return Value{Kind: KindNull}
		}
		return sv(fmt.Sprintf("r%d", i%5))
	}
	var first, second [][]Value
	for i := range 300 {
		first = append(first, []Value{iv(int64(i)), nameOf(i)})
	}
	moved := map[int64]bool{}
	pl, err := newPlacer(testSchema, pk, parts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 299; i >= 0; i-- { // descending: phase B in every partition
		row := []Value{iv(int64(i)), nameOf(i)}
		switch {
		case i%11 == 0: // deleted
			continue
		case i%6 == 0: // a new name, NULL for some
			row[1] = nameOf(i + 3)
			a, _ := pl.partition(rowKeyOf(t, row), []Value{row[0], nameOf(i)})
			pl.last = nil // the same row key again
			b, _ := pl.partition(rowKeyOf(t, row), row)
			moved[int64(i)] = a != b
		}
		second = append(second, row)
	}
	for i := 300; i < 320; i++ {
		second = append(second, []Value{iv(int64(i)), nameOf(i)})
	}
	nMoved := 0
	for _, m := range moved {
		if m {
			nMoved++
		}
	}
	if nMoved == 0 {
		t.Fatal("the second run moves no row: the test tests nothing")
	}

	var versions, localVersions []int64
	for round, rows := range [][][]Value{first, second} {
		want := singleRun(t, db1, "one", 1, rows)
		got, err := partitionedRun(t, db1, []*DB{db1, db2}, "spread", parts, pk, rows)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		versions, localVersions = append(versions, got.Version), append(localVersions, want.Version)
		w, g := want.Stats, got.Stats
		w.BytesWritten, g.BytesWritten = 0, 0
		if round == 1 {
			// A moved row: a delete in its old partition, an insert in
			// its new one, where one Run counts an update.
			w.Updated -= int64(nMoved)
			w.Inserted += int64(nMoved)
			w.Deleted += int64(nMoved)
		}
		if g != w {
			t.Fatalf("round %d: partitioned stats %+v, one run's %+v (moved %d)", round, got.Stats, want.Stats, nMoved)
		}
		if err := db2.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if a, b := scanOf(t, db2, "spread"), scanOf(t, db1, "one"); !slices.Equal(a, b) || len(a) == 0 {
			t.Fatalf("round %d: %d rows partitioned, %d by one run", round, len(a), len(b))
		}

		// Placement: by name, NULL a value of its own.
		where := partitionsOfRows(t, db1, "spread", parts, got.Version)
		byName := map[string]map[int]bool{}
		used := map[int]bool{}
		for _, row := range rows {
			ps := where[string(rowKeyOf(t, row))]
			if len(ps) != 1 {
				t.Fatalf("round %d: row %v visible in partitions %v", round, row, ps)
			}
			n := "NULL"
			if row[1].Kind != KindNull {
				n = string(row[1].Bytes)
			}
			if byName[n] == nil {
				byName[n] = map[int]bool{}
			}
			byName[n][ps[0]] = true
			used[ps[0]] = true
		}
		for n, ps := range byName {
			if len(ps) != 1 {
				t.Fatalf("round %d: rows of name %s in partitions %v", round, n, ps)
			}
		}
		if len(used) < 2 {
			t.Fatalf("round %d: every row in one partition: %v", round, used)
		}
	}

	// Reads at both versions, and the diff across the moves.
	for i, v := range versions {
		r, err := db2.Reader(ctx, "spread", At{Version: v})
		if err != nil {
			t.Fatal(err)
		}
		l, err := db1.Reader(ctx, "one", At{Version: localVersions[i]})
		if err != nil {
			t.Fatal(err)
		}
		for id := int64(0); id < 320; id += 3 {
			a, aerr := r.Get(ctx, []Value{iv(id)}, nil)
			b, berr := l.Get(ctx, []Value{iv(id)}, nil)
			if fmt.Sprint(a, aerr != nil) != fmt.Sprint(b, berr != nil) {
				t.Fatalf("version %d, id %d: got %v %v, one run %v %v", v, id, a, aerr, b, berr)
			}
		}
		r.Close()
		l.Close()
	}
	got, want := diffOps(t, db2, "spread", versions[0], versions[1]), diffOps(t, db1, "one", localVersions[0], localVersions[1])
	if !slices.Equal(got, want) {
		t.Fatalf("diff:\n%v\none run's:\n%v", got, want)
	}
	back := diffOps(t, db2, "spread", versions[1], versions[0])
	if wantBack := diffOps(t, db1, "one", localVersions[1], localVersions[0]); !slices.Equal(back, wantBack) {
		t.Fatalf("reverse diff:\n%v\none run's:\n%v", back, wantBack)
	}
	for i := range versions {
		a, _ := db2.Reader(ctx, "spread", At{Version: versions[i]})
		b, _ := db1.Reader(ctx, "one", At{Version: localVersions[i]})
		if a.info.Stats.Checksum != b.info.Stats.Checksum {
			t.Fatalf("version %d: checksum %s, one run's %s", versions[i], a.info.Stats.Checksum, b.info.Stats.Checksum)
		}
		a.Close()
		b.Close()
	}

	// A local run of the dataset keeps its partition key.
	third := append(slices.Clone(second), []Value{iv(1000), Value{Kind: KindNull}})
	vi := singleRun(t, db1, "spread", 0, third)
	where := partitionsOfRows(t, db1, "spread", parts, vi.Version)
	nullPart := where[string(rowKeyOf(t, []Value{iv(7)}))] // id 7: NULL name, kept
	if got := where[string(rowKeyOf(t, third[len(third)-1]))]; !slices.Equal(got, nullPart) || len(got) != 1 {
		t.Fatalf("a NULL-named row of a local run in %v, the others in %v", got, nullPart)
	}
	if d, err := db1.Dataset(ctx, "spread"); err != nil || !slices.Equal(d.PartitionKey, pk) {
		t.Fatalf("dataset: %+v, %v", d, err)
	}

	// A rollback to the first version moves the rows back.
	rb, err := db1.Rollback(ctx, "spread", versions[0])
	if err != nil {
		t.Fatal(err)
	}
	one, _ := db1.Reader(ctx, "one", At{Version: localVersions[0]})
	defer one.Close()
	if a, b := scanOf(t, db1, "spread"), scanJSON(t, one); !slices.Equal(a, b) {
		t.Fatalf("after the rollback: %d rows, the first version %d", len(a), len(b))
	}
	where = partitionsOfRows(t, db1, "spread", parts, rb.Version)
	for _, row := range first {
		pl.last = nil
		p, _ := pl.partition(rowKeyOf(t, row), row)
		if got := where[string(rowKeyOf(t, row))]; !slices.Equal(got, []int{p}) {
			t.Fatalf("after the rollback row %v is in %v, its partition key places it in %d", row, got, p)
		}
	}
}

// A row key given twice, not in a row, with two partition key values
// lands in two partitions, where no comparison sees both: reads then
// fail with ErrCorrupt rather than show the row twice (partition_key.go).
func TestPartitionKeyRepeatedKeyInTwoPartitions(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	pl, _ := newPlacer(testSchema, []string{"name"}, 4)
	var a, b string
	for i := 0; b == ""; i++ { // two names of two partitions
		n := fmt.Sprintf("n%d", i)
		pl.last = nil
		p, _ := pl.partition([]byte{0}, []Value{iv(1), sv(n)})
		switch {
		case a == "" && p == 0:
			a = n
		case a != "" && p != 0:
			b = n
		}
	}
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "dup", Partitions: 4, PartitionKey: []string{"name"}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range [][]Value{{iv(5), sv(a)}, {iv(6), sv(a)}, {iv(5), sv(b)}} {
		if err := r.Put(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rd, err := db.Reader(ctx, "dup", At{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	it, err := rd.Scan(ctx, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
	}
	if err := it.Close(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a key visible in two partitions: %v", err)
	}
}

// The partition key is fixed once a version is committed, must name
// columns of the source, and a row key given twice in a row is refused
// before it could land in two partitions.
func TestPartitionKeyRefusals(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	if _, err := partitionedRun(t, db, []*DB{db}, "byname", 2, []string{"name"}, [][]Value{{iv(1), sv("a")}, {iv(2), {Kind: KindNull}}}); err != nil {
		t.Fatal(err)
	}
	for _, pk := range [][]string{{"id"}, {"name", "id"}, {"zone"}} {
		_, err := db.BeginPartitionedRun(ctx, DatasetConfig{Name: "byname", PartitionKey: pk}, RunOptions{Schema: testSchema}, 2)
		if !errors.Is(err, ErrPartitionKey) {
			t.Fatalf("partition key %v: %v", pk, err)
		}
	}
	if ids := inProgressIDs(db, "byname"); len(ids) != 0 {
		t.Fatalf("a refused run stays in progress: %v", ids)
	}
	if _, err := db.BeginPartitionedRun(ctx, DatasetConfig{Name: "fresh", PartitionKey: []string{"zone"}}, RunOptions{Schema: testSchema}, 2); !errors.Is(err, ErrPartitionKey) {
		t.Fatalf("a column the source lacks: %v", err)
	}
	// The key as partition key is the row key: a dataset of it takes a
	// run that names none.
	if _, err := partitionedRun(t, db, []*DB{db}, "bykey", 2, []string{"id"}, [][]Value{{iv(1), sv("a")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := partitionedRun(t, db, []*DB{db}, "bykey", 2, nil, [][]Value{{iv(1), sv("b")}}); err != nil {
		t.Fatalf("the row key, named or not: %v", err)
	}

	rt, err := NewRouter(testSchema, 4, []string{"name"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rt.Route([]Value{iv(5), sv("a")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rt.Route([]Value{iv(5), sv("b")}); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("a key given twice: %v", err)
	}
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "byname", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Put(ctx, []Value{iv(1), sv("a")}); err != nil {
		t.Fatal(err)
	}
	if err := r.Put(ctx, []Value{iv(1), sv("b")}); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("a key given twice to a local run: %v", err)
	}
	if err := r.Abort(ctx, "test"); err != nil {
		t.Fatal(err)
	}
}
