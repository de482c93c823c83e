package snapshot

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// partitionedTables runs tables into the test dataset through coord:
// the tables named in spread are written partition by partition through
// owners[p%len(owners)] (DBs on one store, as nodes on one HBase), the
// others by coord's TableWriter; the partitions of the table skip are
// opened and written but their reports not added. It returns the commit's
// outcome.
func partitionedTables(t *testing.T, coord *DB, owners []*DB, tables []shopTable, spread []string, skip string) (VersionInfo, error) {
	t.Helper()
	vi, _, err := partitionedTablesWith(t, coord, owners, TablesRunOptions{}, tables, spread, skip)
	return vi, err
}

// partitionedTablesWith is partitionedTables with the run's options; it
// returns the run too.
func partitionedTablesWith(t *testing.T, coord *DB, owners []*DB, opts TablesRunOptions, tables []shopTable, spread []string, skip string) (VersionInfo, *TablesRun, error) {
	t.Helper()
	ctx := context.Background()
	for _, tb := range tables {
		opts.Tables = append(opts.Tables, tb.spec)
	}
	tr, err := coord.BeginTablesRun(ctx, tablesConfig, opts)
	if err != nil {
		return VersionInfo{}, nil, err
	}
	for _, tb := range tables {
		w := tr.Table(tb.spec.Name)
		if !slices.Contains(spread, tb.spec.Name) {
			for _, row := range tb.rows {
				if err := w.Put(ctx, row); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		spec0, err := w.PartitionSpec(0)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := NewRouter(w.Schema(), w.Partitions(), spec0.PartitionKey)
		if err != nil {
			t.Fatal(err)
		}
		byPart := make([][][]Value, w.Partitions())
		for _, row := range tb.rows {
			_, p, err := rt.Route(row)
			if err != nil {
				t.Fatal(err)
			}
			byPart[p] = append(byPart[p], row)
		}
		for p := range w.Partitions() {
			spec, err := w.PartitionSpec(p)
			if err != nil {
				t.Fatal(err)
			}
			pw, err := owners[p%len(owners)].OpenPartition(ctx, spec)
			if err != nil {
				t.Fatalf("table %s partition %d: %v", tb.spec.Name, p, err)
			}
			for _, row := range byPart[p] {
				if err := pw.Put(ctx, row); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := pw.Finish(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tb.spec.Name == skip {
				continue
			}
			if err := w.AddPartition(rep); err != nil {
				t.Fatal(err)
			}
		}
	}
	vi, err := tr.Commit(ctx)
	return vi, tr, err
}

// TestTablesRunPartitioned: a run of named tables some of whose tables
// are written partition by partition by two DBs commits one version whose
// tables read as their rows, with the counts and checksums a run of the
// same rows written in one process gives: on a first run, and on runs
// that update, delete and insert.
func TestTablesRunPartitioned(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	db1 := openTestDB(t, st, Options{Partitions: 2})
	db2 := openTestDB(t, openSecondStore(t, dir, st), Options{Partitions: 2})
	ref := openTestDB(t, newTestStore(t), Options{Partitions: 2})
	spread := []string{"public.order_lines", "public.orders"}
	for g := 1; g <= 3; g++ {
		tables := shop(g)
		if g == 3 { // rows deleted, and added
			tables[0].rows = append(tables[0].rows[10:], []Value{iv(100), sv("new")})
			tables[1].rows = tables[1].rows[:len(tables[1].rows)-20]
		}
		got, err := partitionedTables(t, db1, []*DB{db1, db2}, tables, spread, "")
		if err != nil {
			t.Fatalf("generation %d: %v", g, err)
		}
		want := mustRunTables(t, ref, tables)
		if len(got.Tables) != len(want.Tables) {
			t.Fatalf("generation %d: tables %v, want %v", g, got.TableNames(), want.TableNames())
		}
		for i, gt := range got.Tables {
			wt := want.Tables[i]
			gs, ws := gt.Stats, wt.Stats
			gs.BytesWritten, ws.BytesWritten = 0, 0 // phase-B writes differ with the order each partition saw
			if gt.Name != wt.Name || gs != ws || gt.Partitions != wt.Partitions {
				t.Fatalf("generation %d table %s: %+v (%d partitions), one process's %+v (%d)", g, gt.Name, gt.Stats, gt.Partitions, wt.Stats, wt.Partitions)
			}
		}
		if g, w := got.Stats.Checksum, want.Stats.Checksum; g != w {
			t.Fatalf("version checksum %s, one process's %s", g, w)
		}
		checkShop(t, db1, got.Version, tables)
		if err := db2.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkShop(t, db2, got.Version, tables)
	}
}

// TestTablesRunPartitionedFailure: a table with a partition that did not
// report fails the commit, naming the table, and leaves the current
// version as it was; a writer of the aborted run's partition is refused;
// a partitioned table takes no Put, and a table that took rows gives no
// PartitionSpec.
func TestTablesRunPartitionedFailure(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	db1 := openTestDB(t, st, Options{Partitions: 2})
	db2 := openTestDB(t, openSecondStore(t, dir, st), Options{Partitions: 2})
	spread := []string{"public.order_lines", "public.orders"}
	v1, err := partitionedTables(t, db1, []*DB{db1, db2}, shop(1), spread, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = partitionedTables(t, db1, []*DB{db1, db2}, shop(2), spread, "public.order_lines")
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "public.order_lines") {
		t.Fatalf("a partition not reported: %v", err)
	}
	info, err := db1.Dataset(ctx, tablesConfig.Name)
	if err != nil || info.Current != v1.Version || info.Versions != 1 {
		t.Fatalf("after the failed run: %+v %v", info, err)
	}
	checkShop(t, db1, v1.Version, shop(1))
	if ids := inProgressIDs(db1, tablesConfig.Name); len(ids) != 0 {
		t.Fatalf("the failed run stays in progress: %v", ids)
	}

	var opts TablesRunOptions
	for _, tb := range shop(3) {
		opts.Tables = append(opts.Tables, tb.spec)
	}
	tr, err := db1.BeginTablesRun(ctx, tablesConfig, opts)
	if err != nil {
		t.Fatal(err)
	}
	w := tr.Table("public.orders")
	spec, err := w.PartitionSpec(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(ctx, shop(3)[0].rows[0]); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a Put to a partitioned table: %v", err)
	}
	c := tr.Table("customers")
	if err := c.Put(ctx, shop(3)[2].rows[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PartitionSpec(0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a PartitionSpec of a table that took rows: %v", err)
	}
	bad := spec
	bad.TableNumber++
	if _, err := db2.OpenPartition(ctx, bad); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("a partition of another table number: %v", err)
	}
	unnamed := spec
	unnamed.Table = ""
	if _, err := db2.OpenPartition(ctx, unnamed); !errors.Is(err, ErrTableRequired) {
		t.Fatalf("a partition of no table: %v", err)
	}
	if err := tr.Abort(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	if err := db2.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db2.OpenPartition(ctx, spec); !errors.Is(err, ErrRunClosed) {
		t.Fatalf("a partition of an aborted run: %v", err)
	}
	checkShop(t, db1, v1.Version, shop(1))
}

// TestTablesRunPartitionedVerifies: with VerifyUnchanged, a run whose
// partitioned and local tables all changed nothing records the current
// version verified; one changed row in one partition commits a version.
func TestTablesRunPartitionedVerifies(t *testing.T) {
	dir := t.TempDir()
	st := openTestStore(t, dir)
	db1 := openTestDB(t, st, Options{Partitions: 2})
	db2 := openTestDB(t, openSecondStore(t, dir, st), Options{Partitions: 2})
	spread := []string{"public.order_lines", "public.orders"}
	opts := TablesRunOptions{VerifyUnchanged: true}
	v1, _, err := partitionedTablesWith(t, db1, []*DB{db1, db2}, opts, shop(1), spread, "")
	if err != nil {
		t.Fatal(err)
	}
	vi, tr, err := partitionedTablesWith(t, db1, []*DB{db1, db2}, opts, shop(1), spread, "")
	if err != nil || !tr.Verified() || vi.Version != v1.Version || vi.VerifiedAt == nil {
		t.Fatalf("the same rows again: %v, verified %v, version %d (first %d)", err, tr != nil && tr.Verified(), vi.Version, v1.Version)
	}
	changed := shop(1)
	changed[1].rows[7] = []Value{changed[1].rows[7][0], changed[1].rows[7][1], sv("other")}
	vi, tr, err = partitionedTablesWith(t, db1, []*DB{db1, db2}, opts, changed, spread, "")
	if err != nil || tr.Verified() || vi.Version == v1.Version || vi.Stats.Updated != 1 {
		t.Fatalf("one row changed: %v, verified %v, version %d, stats %+v", err, tr != nil && tr.Verified(), vi.Version, vi.Stats)
	}
	checkShop(t, db1, vi.Version, changed)
}
