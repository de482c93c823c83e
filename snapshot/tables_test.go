package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
)

var (
	ordersSchema = Schema{
		Columns: []Column{{Name: "id", Kind: KindInt}, {Name: "customer", Kind: KindString, Nullable: true}},
		Key:     []string{"id"},
	}
	linesSchema = Schema{
		Columns: []Column{{Name: "order_id", Kind: KindInt}, {Name: "line", Kind: KindInt}, {Name: "sku", Kind: KindString}},
		Key:     []string{"order_id", "line"},
	}
	customersSchema = Schema{
		Columns: []Column{{Name: "name", Kind: KindString}, {Name: "email", Kind: KindString, Nullable: true}},
		Key:     []string{"name"},
	}
	tablesConfig = DatasetConfig{Name: "shop", Guard: Guard{MaxShrink: 1}, Retention: Retention{MinVersions: 100}}
)

// shopTable is one table of a run of the test dataset: its spec and rows.
type shopTable struct {
	spec TableSpec
	rows [][]Value
}

// shop returns the three tables of the test dataset at generation g:
// every order and line changes its text with g, customers never do.
func shop(g int) []shopTable {
	var orders, lines, customers [][]Value
	for i := int64(1); i <= 50; i++ {
		orders = append(orders, []Value{iv(i), sv(fmt.Sprintf("c%d-%d", i%7, g))})
		for l := int64(1); l <= 3; l++ {
			lines = append(lines, []Value{iv(i), iv(l), sv(fmt.Sprintf("sku%d-%d-%d", i, l, g))})
		}
	}
	for i := 0; i < 7; i++ {
		customers = append(customers, []Value{sv(fmt.Sprintf("c%d", i)), sv(fmt.Sprintf("c%d@example.org", i))})
	}
	return []shopTable{
		{TableSpec{Name: "public.orders", Schema: ordersSchema}, orders},
		{TableSpec{Name: "public.order_lines", Schema: linesSchema, Partitions: 3}, lines},
		{TableSpec{Name: "customers", Schema: customersSchema}, customers},
	}
}

// runTables begins a run of cfg writing tables, puts each table's rows
// from a goroutine of its own (as a source reading tables in parallel),
// and commits it. A Put error aborts the run and is returned.
func runTables(t *testing.T, db *DB, cfg DatasetConfig, opts TablesRunOptions, tables []shopTable) (VersionInfo, *TablesRun, error) {
	t.Helper()
	ctx := context.Background()
	opts.Tables = nil
	for _, tb := range tables {
		opts.Tables = append(opts.Tables, tb.spec)
	}
	tr, err := db.BeginTablesRun(ctx, cfg, opts)
	if err != nil {
		return VersionInfo{}, nil, err
	}
	errs := make([]error, len(tables))
	var wg sync.WaitGroup
	for i, tb := range tables {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := tr.Table(tb.spec.Name)
			for _, row := range tb.rows {
				if err := w.Put(ctx, row); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if aerr := tr.Abort(ctx, err.Error()); aerr != nil {
			t.Fatal(aerr)
		}
		return VersionInfo{}, tr, err
	}
	vi, err := tr.Commit(ctx)
	return vi, tr, err
}

func mustRunTables(t *testing.T, db *DB, tables []shopTable) VersionInfo {
	t.Helper()
	vi, _, err := runTables(t, db, tablesConfig, TablesRunOptions{}, tables)
	if err != nil {
		t.Fatal(err)
	}
	return vi
}

// mustDropTables is mustRunTables of a run that drops the tables of the
// current version it lacks (TablesRunOptions.DropMissing).
func mustDropTables(t *testing.T, db *DB, tables []shopTable) VersionInfo {
	t.Helper()
	vi, _, err := runTables(t, db, tablesConfig, TablesRunOptions{DropMissing: true}, tables)
	if err != nil {
		t.Fatal(err)
	}
	return vi
}

// readTable returns every row of table of the test dataset at version v,
// as JSON.
func readTable(t *testing.T, db *DB, table string, v int64) []string {
	t.Helper()
	r, err := db.TableReader(context.Background(), tablesConfig.Name, table, At{Version: v})
	if err != nil {
		t.Fatalf("table %s version %d: %v", table, v, err)
	}
	defer r.Close()
	return scanJSON(t, r)
}

// checkShop checks that every table of tables reads at version v as its
// rows, and that v holds no other table.
func checkShop(t *testing.T, db *DB, v int64, tables []shopTable) {
	t.Helper()
	ts, err := db.Tables(context.Background(), tablesConfig.Name, At{Version: v})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tb := range tables {
		want = append(want, tb.spec.Name)
		if got, exp := readTable(t, db, tb.spec.Name, v), sortedJSON(tb); !slices.Equal(got, exp) {
			t.Fatalf("table %s at %d: %d rows, want %d:\n%v\nwant\n%v", tb.spec.Name, v, len(got), len(exp), got, exp)
		}
	}
	slices.Sort(want)
	var got []string
	for _, ti := range ts {
		got = append(got, ti.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("version %d holds tables %v, want %v", v, got, want)
	}
}

// sortedJSON returns a table's rows as a Reader's Scan returns them.
func sortedJSON(tb shopTable) []string {
	type kr struct {
		key []byte
		js  string
	}
	var rs []kr
	for _, row := range tb.rows {
		var k []byte
		for _, i := range keyIndexes(tb.spec.Schema) {
			k, _ = appendKeyValue(k, row[i])
		}
		r := Row{Columns: columnNames(tb.spec.Schema), Values: row}
		b, _ := r.MarshalJSON()
		rs = append(rs, kr{k, string(b)})
	}
	slices.SortFunc(rs, func(a, b kr) int { return strings.Compare(string(a.key), string(b.key)) })
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.js
	}
	return out
}

// TestTablesRunCommitsOneVersion: a run of three tables written at once
// commits one version listing them, each with its stats; every table
// reads as written at that version and the older one; the unqualified
// calls answer ErrTableRequired naming the tables; diffs list each table.
func TestTablesRunCommitsOneVersion(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	v1 := mustRunTables(t, db, shop(1))
	if len(v1.Tables) != 3 || v1.Stats.Rows != 50+150+7 || v1.Stats.Inserted != v1.Stats.Rows {
		t.Fatalf("version 1: %+v", v1)
	}
	if ti, _ := v1.Table("public.order_lines"); ti.Stats.Rows != 150 || ti.Partitions != 3 || ti.Schema.Key[1] != "line" {
		t.Fatalf("order_lines at version 1: %+v", ti)
	}
	checkShop(t, db, v1.Version, shop(1))

	// The second version changes orders and lines, not customers.
	s2 := shop(2)
	s2[0].rows = s2[0].rows[:40] // ten orders deleted
	v2 := mustRunTables(t, db, s2)
	checkShop(t, db, v2.Version, s2)
	checkShop(t, db, v1.Version, shop(1))
	if ti, _ := v2.Table("customers"); ti.Stats.Unchanged != 7 || ti.Stats.Inserted+ti.Stats.Updated+ti.Stats.Deleted != 0 {
		t.Fatalf("customers at version 2: %+v", ti.Stats)
	}
	if ti, _ := v2.Table("public.orders"); ti.Stats.Deleted != 10 || ti.Stats.Updated != 40 {
		t.Fatalf("orders at version 2: %+v", ti.Stats)
	}
	// The same content commits the same checksums.
	c1, _ := v1.Table("customers")
	c2, _ := v2.Table("customers")
	if c1.Stats.Checksum != c2.Stats.Checksum {
		t.Fatalf("customers' checksum changed: %s, %s", c1.Stats.Checksum, c2.Stats.Checksum)
	}

	// A point read of a table, and the unqualified calls.
	r, err := db.TableReader(ctx, "shop", "public.order_lines", At{Version: v1.Version})
	if err != nil {
		t.Fatal(err)
	}
	row, err := r.Get(ctx, []Value{iv(3), iv(2)}, nil)
	if err != nil || string(row.Values[2].Bytes) != "sku3-2-1" {
		t.Fatalf("a line at version 1: %v %v", row, err)
	}
	if vi := r.Version(); vi.Schema.Key[0] != "order_id" || vi.Stats.Rows != 150 || r.Table() != "public.order_lines" {
		t.Fatalf("the table reader's version: %+v", vi)
	}
	r.Close()
	for what, err := range map[string]error{
		"Reader": func() error { _, err := db.Reader(ctx, "shop", At{}); return err }(),
		"Diff":   func() error { _, err := db.Diff(ctx, "shop", v1.Version, v2.Version); return err }(),
		"BeginRun": func() error {
			_, err := db.BeginRun(ctx, tablesConfig, RunOptions{Schema: ordersSchema})
			return err
		}(),
		"OpenPartition": func() error {
			_, err := db.OpenPartition(ctx, PartitionSpec{Dataset: "shop", Txn: v2.Version + 1, Version: v2.Version, Schema: ordersSchema, Partitions: 1})
			return err
		}(),
	} {
		if !errors.Is(err, ErrTableRequired) {
			t.Fatalf("%s: %v, want ErrTableRequired", what, err)
		}
		if !strings.Contains(err.Error(), "customers, public.order_lines, public.orders") {
			t.Fatalf("%s: %v does not name the tables", what, err)
		}
	}
	if _, err := db.TableReader(ctx, "shop", "nope", At{}); !errors.Is(err, ErrTableNotFound) || strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("an unknown table: %v", err)
	}
	// A table named without its schema: the one it could mean is named.
	if _, err := db.TableReader(ctx, "shop", "orders", At{}); !errors.Is(err, ErrTableNotFound) || !strings.Contains(err.Error(), "did you mean public.orders?") {
		t.Fatalf("a table without its schema: %v", err)
	}

	// Diffs: every table with its counts, then the rows of one.
	ds, err := db.DiffTables(ctx, "shop", v1.Version, v2.Version)
	if err != nil {
		t.Fatal(err)
	}
	want := []TableDiffStats{
		{Table: "customers", DiffStats: DiffStats{From: v1.Version, To: v2.Version}},
		{Table: "public.order_lines", DiffStats: DiffStats{From: v1.Version, To: v2.Version, Updated: 150}},
		{Table: "public.orders", DiffStats: DiffStats{From: v1.Version, To: v2.Version, Updated: 40, Deleted: 10}},
	}
	if !slices.Equal(ds, want) {
		t.Fatalf("DiffTables: %+v, want %+v", ds, want)
	}
	it, err := db.TableDiff(ctx, "shop", "public.orders", v1.Version, v2.Version)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		if c := it.Change(); c.Op == OpDelete && c.Key[0].Int <= 40 || c.Op == OpUpdate && !slices.Equal(c.Changed, []string{"customer"}) {
			t.Fatalf("change %+v", c)
		}
		n++
	}
	if err := it.Close(); err != nil || n != 50 {
		t.Fatalf("orders' diff: %d changes, %v", n, err)
	}

	// Nothing changed anywhere: one verification, no version.
	vv, tr, err := runTables(t, db, tablesConfig, TablesRunOptions{VerifyUnchanged: true}, s2)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Verified() || vv.Version != v2.Version || vv.VerifiedAt == nil {
		t.Fatalf("an unchanged run: verified %v, %+v", tr.Verified(), vv)
	}
	// One table changed: a version.
	s3 := shop(2)
	s3[0].rows = s3[0].rows[:40]
	s3[2].rows[0][1] = sv("new@example.org")
	v3, tr, err := runTables(t, db, tablesConfig, TablesRunOptions{VerifyUnchanged: true}, s3)
	if err != nil || tr.Verified() || v3.Version <= v2.Version || v3.Stats.Updated != 1 {
		t.Fatalf("a run changing one row: %+v %v", v3, err)
	}
	checkShop(t, db, v3.Version, s3)
}

// TestTablesRunFailureLeavesNothing: a table whose rows fail, or whose
// guard refuses at commit, fails the whole run: the previous version
// stays whole and current, no cell of the run is visible, and the next
// run succeeds.
func TestTablesRunFailureLeavesNothing(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	v1 := mustRunTables(t, db, shop(1))

	// A duplicate key in one table, the others written whole.
	bad := shop(2)
	bad[2].rows = append(bad[2].rows, bad[2].rows[0])
	if _, _, err := runTables(t, db, tablesConfig, TablesRunOptions{}, bad); !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), "customers") {
		t.Fatalf("a duplicate key: %v", err)
	}
	// A guard of one table refuses at commit (half of the lines gone).
	shrunk := shop(3)
	shrunk[1].rows = shrunk[1].rows[:60]
	cfg := tablesConfig
	cfg.Guard = Guard{MaxShrink: 0.5}
	if _, _, err := runTables(t, db, cfg, TablesRunOptions{}, shrunk); !errors.Is(err, ErrGuardRefused) || !strings.Contains(err.Error(), "public.order_lines") {
		t.Fatalf("a guard: %v", err)
	}
	info, err := db.Dataset(ctx, "shop")
	if err != nil || info.Current != v1.Version || info.Versions != 1 {
		t.Fatalf("after failed runs: %+v %v", info, err)
	}
	checkShop(t, db, v1.Version, shop(1))
	// The next run succeeds.
	v2 := mustRunTables(t, db, shop(4))
	checkShop(t, db, v2.Version, shop(4))
	checkShop(t, db, v1.Version, shop(1))
	// GC removes the failed runs' cells, in every table.
	rep, err := db.GC(ctx, "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	// Their ids are pruned after the store's grace (G6): at once on
	// Pebble.
	if rep.CellsOfInvalidTxns == 0 || db.grace == 0 && rep.InvalidTxnsPruned != 2 {
		t.Fatalf("GC: %+v", rep)
	}
	checkShop(t, db, v2.Version, shop(4))
}

// TestTablesDropGuard: max_shrink holds for the dataset as a whole, the
// rows of dropped tables counted as deleted: a run that drops the table
// of most rows is refused, naming it, and the version stays; one that
// drops a small table commits; force commits the large drop.
func TestTablesDropGuard(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	cfg := tablesConfig
	cfg.Guard = Guard{MaxShrink: 0.5}
	s := shop(1) // 50 orders, 150 lines, 7 customers
	v1, _, err := runTables(t, db, cfg, TablesRunOptions{}, s)
	if err != nil {
		t.Fatal(err)
	}
	drop := TablesRunOptions{DropMissing: true}
	_, _, err = runTables(t, db, cfg, drop, []shopTable{s[0], s[2]})
	if !errors.Is(err, ErrGuardRefused) || !strings.Contains(err.Error(), "public.order_lines") || !strings.Contains(err.Error(), "150 of the dataset's 207 rows") {
		t.Fatalf("a run dropping 150 of 207 rows with max_shrink 0.5: %v", err)
	}
	if info, err := db.Dataset(ctx, "shop"); err != nil || info.Current != v1.Version {
		t.Fatalf("after the refused run: %+v %v", info, err)
	}
	v2, _, err := runTables(t, db, cfg, drop, s[:2])
	if err != nil {
		t.Fatalf("a run dropping 7 of 207 rows: %v", err)
	}
	drop.Force = true
	v3, _, err := runTables(t, db, cfg, drop, s[:1])
	if err != nil || v3.Stats.Deleted != 150 || v3.Version <= v2.Version {
		t.Fatalf("a forced run dropping 150 rows: %+v %v", v3.Stats, err)
	}
}

// TestTablesAddedAndDropped: a table the run lacks fails it, naming it,
// unless it allows dropping tables; a dropped table stays readable at
// older versions; a table added, or added again, holds only its new rows.
func TestTablesAddedAndDropped(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	s := shop(1)
	v1 := mustRunTables(t, db, s[:2]) // orders and lines
	_, _, err := runTables(t, db, tablesConfig, TablesRunOptions{}, []shopTable{s[0], s[2]})
	if !errors.Is(err, ErrTableMissing) || !strings.Contains(err.Error(), "public.order_lines") {
		t.Fatalf("a table missing: %v", err)
	}
	v2, tr, err := runTables(t, db, tablesConfig, TablesRunOptions{DropMissing: true}, []shopTable{s[0], s[2]})
	if err != nil {
		t.Fatal(err)
	}
	// The dropped table's rows count as deleted, in the version's stats
	// as in the run's, and the version names it with its rows.
	lines := DroppedTable{Name: "public.order_lines", Rows: int64(len(s[1].rows))}
	if !slices.Equal(tr.Dropped(), []DroppedTable{lines}) || tr.Stats().Deleted != lines.Rows {
		t.Fatalf("dropped %v, run stats %+v", tr.Dropped(), tr.Stats())
	}
	if o2, _ := v2.Table("public.orders"); v2.Stats.Deleted != o2.Stats.Deleted+lines.Rows || !slices.Equal(v2.DroppedTables, []DroppedTable{lines}) {
		t.Fatalf("the version dropping a table: stats %+v, dropped %+v", v2.Stats, v2.DroppedTables)
	}
	if got, err := db.VersionInfo(ctx, "shop", v2.Version); err != nil || got.Stats != v2.Stats || !slices.Equal(got.DroppedTables, v2.DroppedTables) {
		t.Fatalf("the version read back: %+v, %v", got, err)
	}
	if d, err := db.DiffTables(ctx, "shop", v1.Version, v2.Version); err != nil || len(d) != 3 || d[1].Table != "public.order_lines" || d[1].Change != TableDropped || d[1].Deleted != lines.Rows {
		t.Fatalf("DiffTables across the drop: %+v, %v", d, err)
	}
	// The unqualified diff names the tables of both versions, either way:
	// the table added and the one dropped are among those to name.
	for _, c := range [][2]int64{{v1.Version, v2.Version}, {v2.Version, v1.Version}} {
		_, err := db.Diff(ctx, "shop", c[0], c[1])
		_, cerr := db.DiffCounts(ctx, "shop", c[0], c[1])
		for _, err := range []error{err, cerr} {
			if !errors.Is(err, ErrTableRequired) || !strings.Contains(err.Error(), ": customers, public.order_lines, public.orders") {
				t.Errorf("the unqualified diff %d to %d: %v, want the tables of both versions", c[0], c[1], err)
			}
		}
	}
	checkShop(t, db, v2.Version, []shopTable{s[0], s[2]})
	checkShop(t, db, v1.Version, s[:2])
	if _, err := db.TableReader(ctx, "shop", "public.order_lines", At{Version: v2.Version}); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("a dropped table at the new version: %v", err)
	}
	// Added again with other rows: none of the old rows shows.
	again := shop(2)
	again[1].rows = again[1].rows[:5]
	v3 := mustRunTables(t, db, again)
	checkShop(t, db, v3.Version, again)
	l1, _ := v1.Table("public.order_lines")
	l3, _ := v3.Table("public.order_lines")
	if l1.Number == l3.Number || l3.Stats.Inserted != 5 || l3.Stats.Deleted != 0 {
		t.Fatalf("lines added again: %+v (first %+v)", l3, l1)
	}
	ds, err := db.DiffTables(ctx, "shop", v1.Version, v3.Version)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 3 || ds[0].Change != TableAdded || ds[0].Inserted != 7 || ds[1].Change != TableReplaced || ds[1].Deleted != 150 || ds[1].Inserted != 5 ||
		ds[2].Change != "" || ds[2].Updated != 50 {
		t.Fatalf("DiffTables: %+v", ds)
	}
	// The table's own diff compares no rows of two tables: it says so,
	// either way, and so do its counts.
	for _, c := range [][2]int64{{v1.Version, v3.Version}, {v3.Version, v1.Version}} {
		_, err := db.TableDiff(ctx, "shop", "public.order_lines", c[0], c[1])
		_, cerr := db.TableDiffCounts(ctx, "shop", "public.order_lines", c[0], c[1])
		want := fmt.Sprintf(`"public.order_lines": version %d of shop holds a table of that name`, c[0])
		if !errors.Is(err, ErrTableReplaced) || errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), want) || !errors.Is(cerr, ErrTableReplaced) {
			t.Errorf("diff of a table added again, %d to %d: %v; counts: %v", c[0], c[1], err, cerr)
		}
	}
	// A table one version lacks has no diff; the error says which
	// version holds it, whichever way the diff goes.
	for _, c := range []struct {
		table           string
		from, to, holds int64
	}{
		{"customers", v1.Version, v3.Version, v3.Version},
		{"customers", v3.Version, v1.Version, v3.Version},
		{"public.order_lines", v1.Version, v2.Version, v1.Version},
	} {
		_, err := db.TableDiff(ctx, "shop", c.table, c.from, c.to)
		want := fmt.Sprintf("version %d of shop holds the table", c.holds)
		if !errors.Is(err, ErrTableNotFound) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("its rows at version %d are all its changes", c.holds)) {
			t.Errorf("diff of %s from %d to %d: %v", c.table, c.from, c.to, err)
		}
	}
	// A schema change of one table: a column added.
	s4 := shop(2)
	s4[1].rows = s4[1].rows[:5]
	s4[2].spec.Schema = Schema{Columns: append(slices.Clone(customersSchema.Columns), Column{Name: "vip", Kind: KindInt, Nullable: true}), Key: customersSchema.Key}
	for i := range s4[2].rows {
		s4[2].rows[i] = append(slices.Clone(s4[2].rows[i]), iv(int64(i%2)))
	}
	v4 := mustRunTables(t, db, s4)
	checkShop(t, db, v4.Version, s4)
	checkShop(t, db, v3.Version, again)
	if c, _ := v4.Table("customers"); c.Stats.Updated != 7 {
		t.Fatalf("customers with a new column: %+v", c.Stats)
	}
	// Another key for a table a version holds is refused.
	s5 := shop(2)
	s5[2].spec.Schema = Schema{Columns: customersSchema.Columns, Key: []string{"email"}}
	if _, _, err := runTables(t, db, tablesConfig, TablesRunOptions{}, s5); !errors.Is(err, ErrKeyChanged) {
		t.Fatalf("a key changed: %v", err)
	}
}

// TestTablesGCAndRollback: rollback, tags and retention act on the whole
// dataset; GC reclaims every table's old cells, a dropped table's all of
// them once no kept version holds it.
func TestTablesGCAndRollback(t *testing.T) {
	ctx := context.Background()
	// The clock, read by the DB's keeper too.
	var clock atomic.Int64
	clock.Store(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	st := newTestStore(t)
	db := openTestDB(t, st, Options{now: func() time.Time { return time.Unix(0, clock.Load()).UTC() }})
	cfg := tablesConfig
	cfg.Retention = Retention{TTL: time.Hour, MinVersions: 1}
	run := func(tables []shopTable, opts TablesRunOptions) VersionInfo {
		t.Helper()
		vi, _, err := runTables(t, db, cfg, opts, tables)
		if err != nil {
			t.Fatal(err)
		}
		clock.Add(int64(time.Minute))
		return vi
	}
	v1 := run(shop(1), TablesRunOptions{})
	v2 := run(shop(2), TablesRunOptions{})
	if err := db.Tag(ctx, "shop", "first", v1.Version); err != nil {
		t.Fatal(err)
	}
	// Rollback to v1: every table as it was.
	v3, err := db.Rollback(ctx, "shop", v1.Version)
	if err != nil {
		t.Fatal(err)
	}
	if v3.RestoredFrom != v1.Version || v3.Stats.Checksum != v1.Stats.Checksum {
		t.Fatalf("rollback: %+v", v3)
	}
	checkShop(t, db, v3.Version, shop(1))
	checkShop(t, db, v2.Version, shop(2))
	// v4 drops order_lines.
	s := shop(5)
	v4 := run([]shopTable{s[0], s[2]}, TablesRunOptions{DropMissing: true})
	lines, _ := v1.Table("public.order_lines")
	if n := tableCells(t, st, lines); n == 0 {
		t.Fatal("no cells of order_lines before GC")
	}
	// Two hours later only the current and the tagged versions are kept.
	clock.Add(int64(2 * time.Hour))
	rep, err := db.GC(ctx, "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.VersionsExpired, []int64{v2.Version, v3.Version}) {
		t.Fatalf("GC expired %v", rep.VersionsExpired)
	}
	checkShop(t, db, v4.Version, []shopTable{s[0], s[2]})
	checkShop(t, db, v1.Version, shop(1))
	// The tagged v1 holds the lines: their cells stay until it goes.
	if err := db.Untag(ctx, "shop", "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GC(ctx, "shop", false); err != nil {
		t.Fatal(err)
	}
	if n := tableCells(t, st, lines); n != 0 {
		t.Fatalf("%d cells of the dropped order_lines after GC", n)
	}
	// Orders changed every row's customer in every version: only v4's
	// cells remain, and v1's keys under them (G3).
	orders, _ := v4.Table("public.orders")
	if n, between := tableCells(t, st, orders), tableCellsIn(t, st, orders, v1.Version+1, v4.Version); n != 100 || between != 0 {
		t.Fatalf("orders after GC: %d cells, %d of versions 2 and 3", n, between)
	}
	checkShop(t, db, v4.Version, []shopTable{s[0], s[2]})
	// Drop removes every table's cells.
	if err := db.DropDataset(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	cust, _ := v4.Table("customers")
	if n := tableCells(t, st, orders) + tableCells(t, st, cust); n != 0 {
		t.Fatalf("%d cells after the drop", n)
	}
}

// TestTablesRollbackAcrossReplaced: a table dropped and added again since
// the target with its key rolls back as it was; one added again with
// another key refuses the rollback with ErrTableReplaced, naming it, and
// the current version stays.
func TestTablesRollbackAcrossReplaced(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	v1 := mustRunTables(t, db, shop(1))
	mustDropTables(t, db, shop(2)[:2])   // customers dropped
	v3 := mustDropTables(t, db, shop(3)) // and added again, same key
	c1, _ := v1.Table("customers")
	if c3, _ := v3.Table("customers"); c1.Number == c3.Number {
		t.Fatal("customers added again kept its number")
	}
	v4, err := db.Rollback(ctx, "shop", v1.Version)
	if err != nil {
		t.Fatalf("rollback across a table added again with its key: %v", err)
	}
	checkShop(t, db, v4.Version, shop(1))
	// Added again keyed by email.
	mustDropTables(t, db, shop(5)[:2])
	byEmail := shop(6)
	byEmail[2].spec.Schema = Schema{Columns: []Column{{Name: "name", Kind: KindString}, {Name: "email", Kind: KindString}}, Key: []string{"email"}}
	v6 := mustDropTables(t, db, byEmail)
	_, err = db.Rollback(ctx, "shop", v1.Version)
	if !errors.Is(err, ErrTableReplaced) || !strings.Contains(err.Error(), `"customers"`) || !strings.Contains(err.Error(), "keyed by email") {
		t.Fatalf("rollback across a table added again with another key: %v", err)
	}
	if info, err := db.Dataset(ctx, "shop"); err != nil || info.Current != v6.Version {
		t.Fatalf("after the refused rollback: %+v %v", info, err)
	}
}

// tableCells counts the store cells of every partition of table t of the
// test dataset.
func tableCells(t *testing.T, st store.Store, ti TableInfo) int {
	return tableCellsIn(t, st, ti, 0, store.MaxTimestamp)
}

// tableCellsIn counts the cells of ti whose timestamp is in [from, to).
func tableCellsIn(t *testing.T, st store.Store, ti TableInfo, from, to int64) int {
	t.Helper()
	n := 0
	for p := 0; p < ti.Partitions; p++ {
		it, err := st.Scan(context.Background(), tableDataTable(tablesConfig.Name, ti.Number, p), store.ScanOptions{ReadOptions: store.ReadOptions{TimeRange: store.TimeRange{Min: from, Max: to}}})
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// TestTablesOneTableUnchanged: a dataset of one table stores no trace of
// named tables (its row and version rows encode as before), reads with
// or without the table "", and refuses a run of named tables; a dataset
// of named tables refuses a run of one.
func TestTablesOneTableUnchanged(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	vi := runRows(t, db, [][]Value{{iv(1), sv("a")}, {iv(2), sv("b")}})
	ds, err := db.lookup(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	ds.mu.Lock()
	raw := string(ds.raw)
	ds.mu.Unlock()
	body, _ := json.Marshal(vi)
	for _, s := range []string{raw, string(body)} {
		if strings.Contains(s, `"tables"`) || strings.Contains(s, `"named"`) || strings.Contains(s, `"next_table"`) {
			t.Fatalf("a dataset of one table stores %s", s)
		}
	}
	r, err := db.TableReader(ctx, "t", "", At{})
	if err != nil {
		t.Fatal(err)
	}
	if got := scanJSON(t, r); len(got) != 2 {
		t.Fatalf("read as table \"\": %v", got)
	}
	r.Close()
	if _, err := db.TableReader(ctx, "t", "x", At{}); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("a named table of a dataset of one: %v", err)
	}
	if ts, err := db.Tables(ctx, "t", At{}); err != nil || ts != nil {
		t.Fatalf("Tables: %v %v", ts, err)
	}
	if d, err := db.DiffTables(ctx, "t", vi.Version, vi.Version); err != nil || len(d) != 1 || d[0].Table != "" {
		t.Fatalf("DiffTables: %+v %v", d, err)
	}
	_, err = db.BeginTablesRun(ctx, DatasetConfig{Name: "t"}, TablesRunOptions{Tables: []TableSpec{{Name: "a", Schema: testSchema}}})
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a run of named tables of a dataset of one: %v", err)
	}
	for _, bad := range [][]TableSpec{nil, {{Name: "", Schema: testSchema}}, {{Name: "a", Schema: testSchema}, {Name: "a", Schema: testSchema}}, {{Name: "a\n", Schema: testSchema}}} {
		if _, err := db.BeginTablesRun(ctx, DatasetConfig{Name: "u"}, TablesRunOptions{Tables: bad}); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("tables %v: %v", bad, err)
		}
	}
}

// TestTablesSourceDigests: each table's digest is stored with the version
// its run commits, and a verified run stores its new digests with the
// version it verifies.
func TestTablesSourceDigests(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	run := func(gen int, digest string) (VersionInfo, *TablesRun) {
		t.Helper()
		s := shop(gen)
		var opts TablesRunOptions
		for _, tb := range s {
			opts.Tables = append(opts.Tables, tb.spec)
		}
		opts.VerifyUnchanged = true
		tr, err := db.BeginTablesRun(ctx, tablesConfig, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range s {
			w := tr.Table(tb.spec.Name)
			for _, row := range tb.rows {
				if err := w.Put(ctx, row); err != nil {
					t.Fatal(err)
				}
			}
			if tb.spec.Name != "customers" {
				w.SetSourceDigest([]byte(digest + tb.spec.Name))
			}
		}
		vi, err := tr.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return vi, tr
	}
	digest := func(table string, v int64) string {
		t.Helper()
		d, err := db.TableSourceDigest(ctx, "shop", table, v)
		if err != nil {
			t.Fatal(err)
		}
		return string(d)
	}
	v1, _ := run(1, "one:")
	if got := digest("public.orders", v1.Version); got != "one:public.orders" {
		t.Fatalf("orders' digest %q", got)
	}
	if got := digest("customers", v1.Version); got != "" {
		t.Fatalf("customers' digest %q, none set", got)
	}
	vv, tr := run(1, "two:")
	if !tr.Verified() || vv.Version != v1.Version {
		t.Fatalf("an unchanged run: %+v", vv)
	}
	if got := digest("public.order_lines", v1.Version); got != "two:public.order_lines" {
		t.Fatalf("lines' digest after the verification %q", got)
	}
	if _, err := db.TableSourceDigest(ctx, "shop", "nope", v1.Version); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("the digest of an unknown table: %v", err)
	}
}

// TestSomeTables checks that an error names at most namedInErrors tables
// and counts the rest.
func TestSomeTables(t *testing.T) {
	var names []string
	for i := range 200 {
		names = append(names, fmt.Sprintf("t%03d", i))
	}
	if got := someTables(names[:3]); got != "t000, t001, t002" {
		t.Fatalf("3 tables: %q", got)
	}
	got := someTables(names)
	if !strings.HasPrefix(got, "t000, t001") || !strings.HasSuffix(got, "t019 and 180 more") || strings.Contains(got, "t020") {
		t.Fatalf("200 tables: %q", got)
	}
}

// TestTablesEmptyGuard: in a run of several tables the empty guard
// refuses a table that would lose every row, not a table new to the
// dataset or already empty; a run of 0 rows in every table is refused.
func TestTablesEmptyGuard(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	empty := func(tables []shopTable) []shopTable {
		out := slices.Clone(tables)
		for i := range out {
			out[i].rows = nil
		}
		return out
	}
	if _, _, err := runTables(t, db, tablesConfig, TablesRunOptions{}, empty(shop(1))); !errors.Is(err, ErrGuardRefused) || !strings.Contains(err.Error(), "every table") {
		t.Fatalf("a first run of empty tables: %v", err)
	}
	s := shop(1)
	audit := shopTable{TableSpec{Name: "public.audit", Schema: customersSchema}, nil}
	v1 := mustRunTables(t, db, append(slices.Clone(s), audit)) // a new table, empty
	if a, ok := v1.Table("public.audit"); !ok || a.Stats.Rows != 0 {
		t.Fatalf("the new empty table: %+v %v", a, ok)
	}
	v2 := mustRunTables(t, db, append(shop(2), audit)) // still empty
	checkShop(t, db, v2.Version, append(shop(2), audit))
	gone := append(shop(3), audit)
	gone[0].rows = nil // orders emptied at the source
	if _, _, err := runTables(t, db, tablesConfig, TablesRunOptions{}, gone); !errors.Is(err, ErrGuardRefused) || !strings.Contains(err.Error(), "public.orders") {
		t.Fatalf("a table that loses every row: %v", err)
	}
	if info, err := db.Dataset(ctx, "shop"); err != nil || info.Current != v2.Version {
		t.Fatalf("after the refused run: %+v %v", info, err)
	}
}

// TestTablesRollbackAcrossReplacedPartitionKey: a table dropped and added
// again since the target with its key but placed by other columns (its
// partition key) rolls back as one added again with its key does, its
// rows placed as the current table places them, not refused for a
// partition key the request never gave.
func TestTablesRollbackAcrossReplacedPartitionKey(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	byOrder := shop(1)
	byOrder[1].spec.PartitionKey = []string{"order_id"}
	v1 := mustRunTables(t, db, byOrder)
	mustDropTables(t, db, []shopTable{shop(2)[0], shop(2)[2]}) // order_lines dropped
	v3 := mustDropTables(t, db, shop(3))                       // and added again, placed by its key
	l1, _ := v1.Table("public.order_lines")
	if l3, _ := v3.Table("public.order_lines"); l1.Number == l3.Number {
		t.Fatal("order_lines added again kept its number")
	}
	v4, err := db.Rollback(ctx, "shop", v1.Version)
	if err != nil {
		t.Fatalf("rollback across a table added again placed by other columns: %v", err)
	}
	checkShop(t, db, v4.Version, byOrder)
}
