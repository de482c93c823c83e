package adapters

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// tablesSource is a source database a test of several tables changes.
type tablesSource struct {
	conn api.Connection
	exec func(stmts ...string)
}

// forEachTablesSource runs f on MariaDB, PostgreSQL and SQLite, each with
// a fresh database.
func forEachTablesSource(t *testing.T, f func(t *testing.T, src tablesSource)) {
	forEachSource(t, func(t *testing.T, e sourceEnv) {
		db := e.tempDatabase(t, "tables")
		f(t, tablesSource{conn: connSpec(t, e, "src", db, nil), exec: func(stmts ...string) { e.exec(t, db, stmts...) }})
	})
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "src.db")
		f(t, tablesSource{conn: api.Connection{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}},
			exec: func(stmts ...string) { sqliteExec(t, path, stmts...) }})
	})
}

// shortNames are the names of tables without their schema, sorted.
func shortNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n[strings.LastIndexByte(n, '.')+1:]
	}
	slices.Sort(out)
	return out
}

// tableRows reads table (named without its schema) of dataset at version
// v (0: the current one) as rows keyed by their key's text.
func tableRows(t *testing.T, db *snapshot.DB, dataset, table string, v int64) (snapshot.VersionInfo, map[string]snapshot.Row) {
	t.Helper()
	ctx := context.Background()
	vi, err := db.VersionAt(ctx, dataset, snapshot.At{Version: v})
	if err != nil {
		t.Fatal(err)
	}
	full := ""
	for _, n := range vi.TableNames() {
		if n == table || strings.HasSuffix(n, "."+table) {
			full = n
		}
	}
	if full == "" {
		t.Fatalf("version %d of %s has tables %v, not %s", vi.Version, dataset, vi.TableNames(), table)
	}
	r, err := db.TableReader(ctx, dataset, full, snapshot.At{Version: vi.Version})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it, err := r.Scan(ctx, snapshot.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string]snapshot.Row{}
	for it.Next() {
		row := it.Row()
		out[stringsOf(row.Key)] = row
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return r.Version(), out
}

// TestTablesRun runs an adapter of several tables selected by patterns:
// one version of every table, each table's rows; a table added, a
// column added to one table, nothing changed (verified), a table dropped
// (the run fails naming it unless allow_dropped_tables), and a table
// whose guard refuses: the run fails and the current version stays whole.
func TestTablesRun(t *testing.T) {
	forEachTablesSource(t, func(t *testing.T, src tablesSource) {
		ctx := context.Background()
		src.exec(
			"CREATE TABLE accounts (id INT PRIMARY KEY, amount INT NOT NULL)",
			"CREATE TABLE ledger (id INT PRIMARY KEY, amount INT NOT NULL)",
			"CREATE TABLE audit_log (id INT PRIMARY KEY, msg VARCHAR(20))",
			"INSERT INTO accounts VALUES (1, 100), (2, 200)",
			"INSERT INTO ledger VALUES (1, 5)",
			"INSERT INTO audit_log VALUES (1, 'x')",
		)
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, src.conn); err != nil {
			t.Fatal(noteErr(err))
		}
		spec := api.Adapter{Name: "bank", Connection: "src", Include: []string{"*"}, Exclude: []string{"audit_*"}}
		if a, err := ts.svc.CreateAdapter(ctx, spec); err != nil {
			t.Fatal(noteErr(err))
		} else if len(a.Warnings) != 0 {
			t.Errorf("warnings of an adapter whose tables all have a key: %q", a.Warnings)
		}
		first := ts.runWait(t, "bank")
		mustSucceed(t, first)
		if first.Point == nil || first.Point.Mode == "" || first.Point.Reason == "" && first.Point.Mode != "one_transaction" {
			t.Errorf("first run point %+v", first.Point)
		}
		if len(first.Tables) != 2 || first.RowsRead != 3 || first.Stats.Inserted != 3 {
			t.Errorf("first run: tables %+v, rows read %d, stats %+v", first.Tables, first.RowsRead, first.Stats)
		}
		vi, acc := tableRows(t, ts.db, "bank", "accounts", 0)
		if got := shortNames(mustVersion(t, ts.db, "bank", 0).TableNames()); !slices.Equal(got, []string{"accounts", "ledger"}) {
			t.Errorf("tables %v", got)
		}
		if len(acc) != 2 || vi.Stats.Rows != 2 {
			t.Errorf("accounts: %d rows, stats %+v", len(acc), vi.Stats)
		}

		// A table added, a column added to one table, a row changed.
		src.exec(
			"CREATE TABLE orders (id INT PRIMARY KEY, total INT)",
			"INSERT INTO orders VALUES (1, 10), (2, 20)",
			"ALTER TABLE ledger ADD COLUMN note VARCHAR(10)",
			"UPDATE accounts SET amount = 95 WHERE id = 1",
		)
		second := ts.runWait(t, "bank")
		mustSucceed(t, second)
		if got := shortNames(mustVersion(t, ts.db, "bank", 0).TableNames()); !slices.Equal(got, []string{"accounts", "ledger", "orders"}) {
			t.Errorf("tables after an added table %v", got)
		}
		lv, _ := tableRows(t, ts.db, "bank", "ledger", 0)
		if c := lv.Schema.Columns; len(c) != 3 || c[2].Name != "note" {
			t.Errorf("ledger columns %+v", c)
		}
		if second.Stats.Inserted != 2 || second.Stats.Updated != 2 {
			t.Errorf("second run stats %+v (2 orders inserted, 1 account and 1 ledger row updated)", second.Stats)
		}
		if ov, _ := tableRows(t, ts.db, "bank", "ledger", first.Version); len(ov.Schema.Columns) != 2 {
			t.Errorf("the first version's ledger has %d columns", len(ov.Schema.Columns))
		}

		// Nothing changed anywhere: the current version, verified.
		third := ts.runWait(t, "bank")
		mustSucceed(t, third)
		if !third.Verified || third.Version != second.Version {
			t.Errorf("unchanged run: verified %v, version %d (current %d)", third.Verified, third.Version, second.Version)
		}

		// A table dropped from the source fails the run, naming it.
		src.exec("DROP TABLE orders", "UPDATE accounts SET amount = 90 WHERE id = 1")
		fourth := ts.runWait(t, "bank")
		if fourth.Status != RunFailed || fourth.Code != "resource_not_found" || !strings.Contains(fourth.Error, "orders") {
			t.Errorf("run after a dropped table: %s %s: %s", fourth.Status, fourth.Code, fourth.Error)
		}
		if cur := mustVersion(t, ts.db, "bank", 0); cur.Version != second.Version {
			t.Errorf("current version %d after a failed run, want %d", cur.Version, second.Version)
		}
		spec.AllowDroppedTables = true
		if _, _, err := ts.svc.PutAdapter(ctx, spec); err != nil {
			t.Fatal(err)
		}
		fifth := ts.runWait(t, "bank")
		mustSucceed(t, fifth)
		if fifth.Stats.Deleted != 2 || fifth.Stats.Updated != 1 {
			t.Errorf("run dropping orders: stats %+v, want its 2 rows deleted, 1 account updated", fifth.Stats)
		}
		if got := shortNames(mustVersion(t, ts.db, "bank", 0).TableNames()); !slices.Equal(got, []string{"accounts", "ledger"}) {
			t.Errorf("tables after a dropped table %v", got)
		}
		if _, old := tableRows(t, ts.db, "bank", "orders", second.Version); len(old) != 2 {
			t.Errorf("the dropped table at an older version: %d rows", len(old))
		}

		// One table's guard refuses (it would be empty): nothing of the
		// run is visible, the other table's change neither.
		src.exec("DELETE FROM ledger", "UPDATE accounts SET amount = 1 WHERE id = 2")
		sixth := ts.runWait(t, "bank")
		if sixth.Status != RunFailed || sixth.Code != "guard_refused" || !strings.Contains(sixth.Error, "ledger") {
			t.Errorf("run emptying a table: %s %s: %s", sixth.Status, sixth.Code, sixth.Error)
		}
		cur := mustVersion(t, ts.db, "bank", 0)
		if cur.Version != fifth.Version {
			t.Errorf("current version %d after a refused run, want %d", cur.Version, fifth.Version)
		}
		if _, acc := tableRows(t, ts.db, "bank", "accounts", 0); col(byID(acc, 2), "amount").Int != 200 {
			t.Errorf("accounts 2 after a refused run: %s", fmtValue(col(byID(acc, 2), "amount")))
		}
		if _, led := tableRows(t, ts.db, "bank", "ledger", 0); len(led) != 1 {
			t.Errorf("ledger after a refused run: %d rows", len(led))
		}

		// A selected table without a key is a warning when the adapter
		// is saved, and fails the run, naming it.
		src.exec("CREATE TABLE nokey (a INT, b INT)")
		if a, _, err := ts.svc.PutAdapter(ctx, spec); err != nil {
			t.Fatal(noteErr(err))
		} else if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "no usable key in ") || !strings.Contains(a.Warnings[0], "nokey: every run fails with no_key until the selection excludes it (exclude)") {
			t.Errorf("warnings of an adapter with a table without a key: %q", a.Warnings)
		}
		// A selection that matches no table is refused, naming the
		// adapter once.
		none := spec
		none.Name, none.Dataset, none.Resources, none.Include, none.Exclude = "none", "none", nil, []string{"nomatch_*"}, nil
		if _, _, err := ts.svc.PutAdapter(ctx, none); !errors.Is(err, ErrResourceNotFound) || strings.Count(err.Error(), `adapter "none"`) != 1 ||
			!strings.Contains(err.Error(), `no table matches include ["nomatch_*"]`) {
			t.Errorf("an adapter whose include matches nothing: %v", err)
		}
		seventh := ts.runWait(t, "bank")
		if seventh.Status != RunFailed || seventh.Code != "no_key" || !strings.Contains(seventh.Error, "nokey") ||
			!strings.HasSuffix(seventh.Error, "; exclude the table, give it a primary key, or name its key columns in table_keys") ||
			strings.Contains(seventh.Error, "; set key_columns") {
			t.Errorf("run with a table without a key: %s %s: %s", seventh.Status, seventh.Code, seventh.Error)
		}
		if cur := mustVersion(t, ts.db, "bank", 0); cur.Version != fifth.Version {
			t.Errorf("current version %d after a run with a table without a key, want %d", cur.Version, fifth.Version)
		}
	})
}

// TestTablesRunUnmatchedInclude: an include pattern that matches no
// table beside one that does is a warning when the adapter is saved and
// in each run's record, naming the pattern; an include that matches
// nothing at all is refused blaming include, and so is a run once the
// source no longer holds a table it matches.
func TestTablesRunUnmatchedInclude(t *testing.T) {
	forEachTablesSource(t, func(t *testing.T, src tablesSource) {
		ctx := context.Background()
		src.exec(
			"CREATE TABLE acct_one (id INT PRIMARY KEY, amount INT NOT NULL)",
			"INSERT INTO acct_one VALUES (1, 100)",
		)
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, src.conn); err != nil {
			t.Fatal(noteErr(err))
		}
		const want = `include[1] "ledgr" matches no table of data connection "src"`
		spec := api.Adapter{Name: "pats", Connection: "src", Include: []string{"acct_*", "ledgr"}}
		a, err := ts.svc.CreateAdapter(ctx, spec)
		if err != nil {
			t.Fatal(noteErr(err))
		}
		if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], want) {
			t.Errorf("warnings of an adapter with a pattern of no table: %q", a.Warnings)
		}
		run := ts.runWait(t, "pats")
		mustSucceed(t, run)
		if len(run.Warnings) != 1 || !strings.Contains(run.Warnings[0], want) || len(run.Tables) != 1 {
			t.Errorf("run with a pattern of no table: warnings %q, tables %+v", run.Warnings, run.Tables)
		}
		if got, err := ts.svc.GetRun(ctx, run.ID); err != nil || !slices.Equal(got.Warnings, run.Warnings) {
			t.Errorf("stored run record: warnings %q, %v", got.Warnings, err)
		}

		none := api.Adapter{Name: "none", Connection: "src", Include: []string{"acct-*", "ledgr"}}
		_, err = ts.svc.CreateAdapter(ctx, none)
		var oe *OptionError
		if !errors.Is(err, ErrResourceNotFound) || !errors.Is(err, source.ErrIncludeMatchesNothing) || !errors.As(err, &oe) || oe.Key != "include" ||
			!strings.Contains(err.Error(), `no table matches include ["acct-*" "ledgr"]`) {
			t.Errorf("an adapter whose include matches nothing: %v (option %+v)", err, oe)
		}

		src.exec("DROP TABLE acct_one")
		gone := ts.runWait(t, "pats")
		if gone.Status != RunFailed || gone.Code != "resource_not_found" || !strings.Contains(gone.Error, `no table matches include ["acct_*" "ledgr"]`) {
			t.Errorf("run whose include matches nothing: %s %s: %s", gone.Status, gone.Code, gone.Error)
		}
	})
}

// TestTablesRunOnlyExcludedLeft: once the tables an include pattern
// selects beside excluded ones are dropped at the source, a run fails
// resource_not_found, as it does when the pattern matches nothing, with
// allow_dropped_tables too (a version of no table is none); such an
// adapter is refused the same, blaming exclude.
func TestTablesRunOnlyExcludedLeft(t *testing.T) {
	forEachTablesSource(t, func(t *testing.T, src tablesSource) {
		ctx := context.Background()
		src.exec(
			"CREATE TABLE acct_old (id INT PRIMARY KEY)",
			"CREATE TABLE acct_new (id INT PRIMARY KEY)",
			"INSERT INTO acct_new VALUES (1)",
		)
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, src.conn); err != nil {
			t.Fatal(noteErr(err))
		}
		spec := api.Adapter{Name: "accts", Connection: "src", Include: []string{"acct_*"}, Exclude: []string{"acct_old"}, AllowDroppedTables: true}
		if _, err := ts.svc.CreateAdapter(ctx, spec); err != nil {
			t.Fatal(noteErr(err))
		}
		mustSucceed(t, ts.runWait(t, "accts"))
		src.exec("DROP TABLE acct_new")
		var oe *OptionError
		_, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "olds", Connection: "src", Include: []string{"acct_*"}, Exclude: []string{"acct_old"}})
		if !errors.Is(err, ErrResourceNotFound) || !errors.As(err, &oe) || oe.Key != "exclude" {
			t.Errorf("an adapter whose include matches only excluded tables: %v (option %+v)", err, oe)
		}
		gone := ts.runWait(t, "accts")
		if gone.Status != RunFailed || gone.Code != "resource_not_found" || !strings.Contains(gone.Error, `every table include ["acct_*"] matches is excluded by ["acct_old"]`) {
			t.Errorf("run whose include matches only excluded tables: %s %s: %s", gone.Status, gone.Code, gone.Error)
		}
	})
}

// TestTablesRunNamesClash: a table that appears at the source with the
// name another selected table has in the dataset ("public"."we.ird" and
// "public.we"."ird" are both public.we.ird) fails the run with code
// bad_selection, naming both, and commits nothing. On PostgreSQL, whose
// schemas live in the connection's database.
func TestTablesRunNamesClash(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "clash")
	e.exec(t, db, `CREATE TABLE "we.ird" (id INT PRIMARY KEY)`, `INSERT INTO "we.ird" VALUES (1)`)
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "src", db, nil)); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "birds", Connection: "src", Include: []string{"*ird"}}); err != nil {
		t.Fatal(noteErr(err))
	}
	first := ts.runWait(t, "birds")
	mustSucceed(t, first)
	e.exec(t, db, `CREATE SCHEMA "public.we"`, `CREATE TABLE "public.we".ird (id INT PRIMARY KEY)`)
	r := ts.runWait(t, "birds")
	if r.Status != RunFailed || r.Code != "bad_selection" || !strings.Contains(r.Error, `would both be "public.we.ird"`) {
		t.Errorf("run whose tables would share a name: %s %s: %s", r.Status, r.Code, r.Error)
	}
	if cur := mustVersion(t, ts.db, "birds", 0); cur.Version != first.Version {
		t.Errorf("current version %d after the failed run, want %d", cur.Version, first.Version)
	}
}

// TestTablesRunNameNoDatasetHolds: a table that appears at the source
// under a name no dataset can hold (a line break in it, or more than 200
// bytes) fails the run with code bad_selection naming it, not an
// unclassified error of the run's start, and is refused with bad_option
// when an adapter is saved; excluded, the rest is read. On PostgreSQL,
// whose quoted names take any character but NUL.
func TestTablesRunNameNoDatasetHolds(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "badname")
	e.exec(t, db, `CREATE TABLE good (id INT PRIMARY KEY)`, `INSERT INTO good VALUES (1)`)
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "src", db, nil)); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "all", Connection: "src", Include: []string{"*"}}); err != nil {
		t.Fatal(noteErr(err))
	}
	first := ts.runWait(t, "all")
	mustSucceed(t, first)
	e.exec(t, db, "CREATE TABLE \"bad\nname\" (id INT PRIMARY KEY)")
	r := ts.runWait(t, "all")
	if r.Status != RunFailed || r.Code != "bad_selection" || !strings.Contains(r.Error, `"public.bad\nname"`) || !strings.Contains(r.Error, "control character") {
		t.Errorf("run selecting a table no dataset can hold: %s %s: %s", r.Status, r.Code, r.Error)
	}
	if cur := mustVersion(t, ts.db, "all", 0); cur.Version != first.Version {
		t.Errorf("current version %d after the failed run, want %d", cur.Version, first.Version)
	}
	var oe *OptionError
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "all2", Connection: "src", Include: []string{"*"}}); !errors.Is(err, ErrBadOption) || !errors.As(err, &oe) || oe.Key != "resources" {
		t.Errorf("an adapter selecting a table no dataset can hold: %v (option %+v)", err, oe)
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "all3", Connection: "src", Include: []string{"*"}, Exclude: []string{"bad*"}}); err != nil {
		t.Fatal(noteErr(err))
	}
	mustSucceed(t, ts.runWait(t, "all3"))
}

// TestTablesResourcesDefaultSchema: on PostgreSQL a resource named
// without a schema means the table of the user's current schema, in
// resources as in resource, though another schema holds the name too; a
// name only another schema holds is found there.
func TestTablesResourcesDefaultSchema(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "defschema")
	e.exec(t, db, `CREATE SCHEMA other`,
		`CREATE TABLE public.plain (id INT PRIMARY KEY)`, `INSERT INTO public.plain VALUES (1)`,
		`CREATE TABLE other.plain (id INT PRIMARY KEY)`, `INSERT INTO other.plain VALUES (1), (2)`,
		`CREATE TABLE other.only_here (id INT PRIMARY KEY)`, `INSERT INTO other.only_here VALUES (7)`)
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "src", db, nil)); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "two", Connection: "src", Resources: []string{"plain", "only_here"}}); err != nil {
		t.Fatal(noteErr(err))
	}
	mustSucceed(t, ts.runWait(t, "two"))
	vi := mustVersion(t, ts.db, "two", 0)
	var got []string
	for _, tb := range vi.Tables {
		got = append(got, fmt.Sprintf("%s:%d", tb.Name, tb.Stats.Rows))
	}
	if strings.Join(got, " ") != "other.only_here:1 public.plain:1" {
		t.Fatalf("tables of the version: %v, want other.only_here and public.plain", got)
	}
}

// TestTablesAdapterOfOtherKind: an adapter replaced by one of the other
// kind (one resource, several tables) on the dataset it wrote is refused
// with bad_option naming dataset, since the snapshot layer refuses every
// run of one kind on a dataset of the other; on a dataset of its own, or
// once the old one is dropped, it is saved and runs.
func TestTablesAdapterOfOtherKind(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "kind")
	e.exec(t, db, `CREATE TABLE orders (id INT PRIMARY KEY)`, `INSERT INTO orders VALUES (1)`)
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "src", db, nil)); err != nil {
		t.Fatal(noteErr(err))
	}
	for _, c := range []struct{ first, second api.Adapter }{
		{api.Adapter{Name: "one", Connection: "src", Resource: "orders"}, api.Adapter{Name: "one", Connection: "src", Resources: []string{"orders"}}},
		{api.Adapter{Name: "many", Connection: "src", Include: []string{"*"}}, api.Adapter{Name: "many", Connection: "src", Resource: "orders"}},
	} {
		if _, err := ts.svc.CreateAdapter(ctx, c.first); err != nil {
			t.Fatal(noteErr(err))
		}
		mustSucceed(t, ts.runWait(t, c.first.Name))
		var oe *OptionError
		_, _, err := ts.svc.PutAdapter(ctx, c.second)
		if !errors.Is(err, ErrBadOption) || !errors.As(err, &oe) || oe.Key != "dataset" || !strings.Contains(err.Error(), "needs a dataset of its own") {
			t.Errorf("%s replaced by an adapter of the other kind: %v (option %+v)", c.first.Name, err, oe)
		}
		if got := ts.runWait(t, c.first.Name); got.Status != RunSucceeded {
			t.Errorf("%s after the refused replace: %s %s: %s", c.first.Name, got.Status, got.Code, got.Error)
		}
		other := c.second
		other.Dataset = c.first.Name + "_2"
		if _, _, err := ts.svc.PutAdapter(ctx, other); err != nil {
			t.Fatalf("%s on a dataset of its own: %v", c.first.Name, noteErr(err))
		}
		mustSucceed(t, ts.runWait(t, c.first.Name))
	}
}

// mustVersion returns version v (0: the current one) of dataset.
func mustVersion(t *testing.T, db *snapshot.DB, dataset string, v int64) snapshot.VersionInfo {
	t.Helper()
	vi, err := db.VersionAt(context.Background(), dataset, snapshot.At{Version: v})
	if err != nil {
		t.Fatal(err)
	}
	return vi
}

// TestTablesAdapterDefinition: the fields of several tables are checked,
// every offending key named.
func TestTablesAdapterDefinition(t *testing.T) {
	_, err := parseAdapter("adapters[0].", api.Adapter{Name: "a", Connection: "c", Resource: "t", Include: []string{"["},
		Resources: []string{"x", "x"}, KeyColumns: []string{"id"}, Parallelism: -1, Strategy: "partition-by-key", PartitionKey: []string{"region"}})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, key := range []string{"adapters[0].resource", "adapters[0].include[0]", "adapters[0].resources[1]", "adapters[0].key_columns",
		"adapters[0].parallelism", "adapters[0].partition_key"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error does not name %s: %v", key, err)
		}
	}
	if _, err := parseAdapter("", api.Adapter{Name: "a", Connection: "c", Resource: "t", AllowDroppedTables: true}); err == nil || !strings.Contains(err.Error(), "allow_dropped_tables") {
		t.Errorf("allow_dropped_tables with one resource: %v", err)
	}
	if _, err := parseAdapter("", api.Adapter{Name: "a", Connection: "c", Resources: []string{"a", "b"}, Parallelism: 8}); err != nil {
		t.Errorf("several tables: %v", err)
	}
	if _, err := parseAdapter("", api.Adapter{Name: "a", Connection: "c", Include: []string{"*"}, Strategy: "partition-by-key"}); err != nil {
		t.Errorf("several tables partitioned by key: %v", err)
	}
	if _, err := parseAdapter("", api.Adapter{Name: "a", Connection: "c", Resource: "t", Parallelism: 4}); err != nil {
		t.Errorf("one table's checksums over 4 connections: %v", err)
	}
}

// byID returns the row of rows whose one key column is the integer id.
func byID(rows map[string]snapshot.Row, id int64) snapshot.Row {
	for _, r := range rows {
		if len(r.Key) == 1 && r.Key[0].Int == id {
			return r
		}
	}
	return snapshot.Row{}
}

// TestTablesRunChunks: each table of a run of several tables is compared
// by its key ranges' checksums as a table of its own: unchanged tables
// are carried over unread (a run that changes nothing is verified), and a
// table with one row changed reads one range of its three.
func TestTablesRunChunks(t *testing.T) {
	forEachTablesSource(t, func(t *testing.T, src tablesSource) {
		ctx := context.Background()
		src.exec("CREATE TABLE big (id INT PRIMARY KEY, v INT NOT NULL)", "CREATE TABLE small (id INT PRIMARY KEY, v INT NOT NULL)",
			"INSERT INTO small VALUES (1, 1), (2, 2)")
		for lo := 0; lo < 12000; lo += 500 {
			var vals []string
			for i := lo + 1; i <= lo+500; i++ {
				vals = append(vals, fmt.Sprintf("(%d, %d)", i, i))
			}
			src.exec("INSERT INTO big VALUES " + strings.Join(vals, ", "))
		}
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, src.conn); err != nil {
			t.Fatal(noteErr(err))
		}
		if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "two", Connection: "src", Resources: []string{"big", "small"}}); err != nil {
			t.Fatal(noteErr(err))
		}
		first := ts.runWait(t, "two")
		mustSucceed(t, first)
		second := ts.runWait(t, "two") // read in full, verified; the digest gets its checksums
		mustSucceed(t, second)
		third := ts.runWait(t, "two")
		mustSucceed(t, third)
		table := func(rec RunRecord, name string) RunTable {
			t.Helper()
			for _, tb := range rec.Tables {
				if strings.HasSuffix(tb.Name, name) {
					return tb
				}
			}
			t.Fatalf("run %s lists no table %s: %+v", rec.ID, name, rec.Tables)
			return RunTable{}
		}
		big := func(rec RunRecord) RunTable { return table(rec, "big") }
		// Read in full although the source has checksums, and why.
		for _, c := range []struct {
			rec    RunRecord
			reason string
		}{
			{first, "no checksums recorded yet: the table is new to the dataset"},
			{second, "no range checksums recorded yet: the last run inserted every row"},
		} {
			if b := big(c.rec); b.Mode != ModeFull || b.ModeReason != c.reason {
				t.Errorf("run %s: big read %s, because %q; want full, because %q", c.rec.ID, b.Mode, b.ModeReason, c.reason)
			}
		}
		if b := big(third); !third.Verified || third.Version != first.Version || third.Mode != ModeVerify || b.Mode != ModeChunks || b.Chunks != 3 || b.ChunksSkipped != 3 || b.RowsRead != 0 {
			t.Errorf("unchanged run: verified %v, version %d (first %d), mode %s, big %+v", third.Verified, third.Version, first.Version, third.Mode, b)
		}
		src.exec("UPDATE big SET v = 0 WHERE id = 7000")
		fourth := ts.runWait(t, "two")
		mustSucceed(t, fourth)
		if b := big(fourth); fourth.Verified || b.Mode != ModeChunks || b.Chunks != 3 || b.ChunksSkipped != 2 || b.RowsRead != 5000 || b.Stats.Updated != 1 || b.Stats.Rows != 12000 {
			t.Errorf("run after one row changed: verified %v, big %+v", fourth.Verified, b)
		}
		if _, rows := tableRows(t, ts.db, "two", "big", 0); len(rows) != 12000 || col(byID(rows, 7000), "v").Int != 0 || col(byID(rows, 6999), "v").Int != 6999 {
			t.Errorf("big after the chunked run: %d rows, 7000 -> %s", len(rows), fmtValue(col(byID(rows, 7000), "v")))
		}
		if b := big(fourth); b.ModeReason != "" {
			t.Errorf("big read by its ranges, with a reason: %+v", b)
		}
		// A table of one range that changed is read by that range, and the
		// next run reads it in full: its one range is all of it.
		src.exec("UPDATE small SET v = 0 WHERE id = 1")
		fifth := ts.runWait(t, "two")
		mustSucceed(t, fifth)
		src.exec("UPDATE small SET v = 1 WHERE id = 1")
		sixth := ts.runWait(t, "two")
		mustSucceed(t, sixth)
		if sm := table(sixth, "small"); sm.Mode != ModeFull || sm.ModeReason != "a one-range table: its range changed at the last run" {
			t.Errorf("small after its range changed: %+v", sm)
		}
		src.exec("ALTER TABLE small ADD COLUMN w INT")
		seventh := ts.runWait(t, "two")
		mustSucceed(t, seventh)
		if sm, b := table(seventh, "small"), big(seventh); sm.Mode != ModeFull || sm.ModeReason != "its schema changed since the current version" || b.Mode != ModeChunks {
			t.Errorf("after a column added to small: small %+v, big %+v", sm, b)
		}
	})
}

// TestTablesRunCancelled: a run of several tables cancelled (Close) while
// it reads its second table, the first one written, commits nothing: the
// current version holds every table as before, and a run after a restart
// succeeds.
func TestTablesRunCancelled(t *testing.T) {
	forEachTablesSource(t, func(t *testing.T, src tablesSource) {
		ctx := context.Background()
		src.exec("CREATE TABLE a (id INT PRIMARY KEY, v INT NOT NULL)", "CREATE TABLE b (id INT PRIMARY KEY, v INT NOT NULL)",
			"INSERT INTO a VALUES (1, 1), (2, 2)", "INSERT INTO b VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)")
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, src.conn); err != nil {
			t.Fatal(noteErr(err))
		}
		if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "ab", Connection: "src", Include: []string{"a", "b"}, Parallelism: 1}); err != nil {
			t.Fatal(noteErr(err))
		}
		first := ts.runWait(t, "ab")
		mustSucceed(t, first)
		src.exec("UPDATE a SET v = 10", "UPDATE b SET v = 10")
		blk := newBlock(ts, "ab", 3) // table a has 2 rows: the pause is in b
		rec, err := ts.svc.StartRun(ctx, "ab", RunOptions{Trigger: "api"})
		if err != nil {
			t.Fatal(err)
		}
		<-blk.reached
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := ts.svc.Close(cctx); err != nil {
			t.Fatal(err)
		}
		got, err := ts.svc.GetRun(ctx, rec.ID)
		if err != nil || got.Status != RunAborted {
			t.Fatalf("cancelled run %+v %v", got, err)
		}
		if cur := mustVersion(t, ts.db, "ab", 0); cur.Version != first.Version {
			t.Errorf("current version %d after a cancelled run, want %d", cur.Version, first.Version)
		}
		for _, tb := range []string{"a", "b"} {
			if _, rows := tableRows(t, ts.db, "ab", tb, 0); col(byID(rows, 1), "v").Int != 1 {
				t.Errorf("%s after a cancelled run: row 1 v %s", tb, fmtValue(col(byID(rows, 1), "v")))
			}
		}
		ts.close()
		ts = openStack(t, ts.dir, Options{})
		next := ts.runWait(t, "ab")
		mustSucceed(t, next)
		for _, tb := range []string{"a", "b"} {
			if _, rows := tableRows(t, ts.db, "ab", tb, 0); col(byID(rows, 1), "v").Int != 10 {
				t.Errorf("%s after the next run: row 1 v %s", tb, fmtValue(col(byID(rows, 1), "v")))
			}
		}
	})
}

// TestTablesRunSchemaChanged: a column added on MariaDB to a table the
// run has not read yet (information_schema is not part of the run's
// snapshot) fails the run with code table_changed and an error naming the
// table and saying its schema changed, committing nothing; the next run
// reads the new column.
func TestTablesRunSchemaChanged(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "tables")
	e.exec(t, db, "CREATE TABLE a (id INT PRIMARY KEY, v INT NOT NULL)", "CREATE TABLE b (id INT PRIMARY KEY, v INT NOT NULL)",
		"INSERT INTO a VALUES (1, 1), (2, 2)", "INSERT INTO b VALUES (1, 1), (2, 2)")
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "src", db, nil)); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "ab", Connection: "src", Include: []string{"a", "b"}, Parallelism: 1}); err != nil {
		t.Fatal(noteErr(err))
	}
	first := ts.runWait(t, "ab")
	mustSucceed(t, first)
	e.exec(t, db, "UPDATE a SET v = 10")
	blk := newBlock(ts, "ab", 1) // one connection, a before b: the pause is in a
	rec, err := ts.svc.StartRun(ctx, "ab", RunOptions{Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	<-blk.reached
	e.exec(t, db, "ALTER TABLE b ADD COLUMN w INT NOT NULL DEFAULT 7")
	close(blk.release)
	got, err := ts.svc.WaitRun(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != RunFailed || got.Code != "table_changed" ||
		!strings.Contains(got.Error, "table "+db+".b: source table changed under the run (its schema changed while the run read the source: columns id int(11), v int(11), then id int(11), v int(11), w int(11))") {
		t.Fatalf("run over a schema change: %s %s %q, want failed with table_changed naming table b", got.Status, got.Code, got.Error)
	}
	if cur := mustVersion(t, ts.db, "ab", 0); cur.Version != first.Version {
		t.Errorf("current version %d after the failed run, want %d", cur.Version, first.Version)
	}
	next := ts.runWait(t, "ab")
	mustSucceed(t, next)
	if _, rows := tableRows(t, ts.db, "ab", "b", 0); col(byID(rows, 1), "w").Int != 7 {
		t.Errorf("b after the next run: row 1 w %s", fmtValue(col(byID(rows, 1), "w")))
	}
}

// TestTablesRunTruncated: a TRUNCATE on MariaDB of a table the run has
// not read yet makes the run's snapshot unable to read it (error 1412);
// the run fails with table_changed, naming the table and saying the next
// run reads it, and commits nothing; the next run reads the empty table.
func TestTablesRunTruncated(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "tables")
	e.exec(t, db, "CREATE TABLE a (id INT PRIMARY KEY, v INT NOT NULL)", "CREATE TABLE b (id INT PRIMARY KEY, v INT NOT NULL)",
		"INSERT INTO a VALUES (1, 1), (2, 2)", "INSERT INTO b VALUES (1, 1), (2, 2)")
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, connSpec(t, e, "src", db, nil)); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "ab", Connection: "src", Include: []string{"a", "b"}, Parallelism: 1, Guard: api.Guard{AllowEmpty: true, MaxShrink: 1}}); err != nil {
		t.Fatal(noteErr(err))
	}
	first := ts.runWait(t, "ab")
	mustSucceed(t, first)
	e.exec(t, db, "UPDATE a SET v = 10")
	blk := newBlock(ts, "ab", 1) // one connection, a before b: the pause is in a
	rec, err := ts.svc.StartRun(ctx, "ab", RunOptions{Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	<-blk.reached
	e.exec(t, db, "TRUNCATE TABLE b")
	close(blk.release)
	got, err := ts.svc.WaitRun(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != RunFailed || got.Code != "table_changed" || !strings.Contains(got.Error, "table "+db+".b: ") ||
		!strings.Contains(got.Error, "source table changed under the run (truncated or altered since the run's snapshot began); nothing is committed, the next run reads it as it is then") {
		t.Fatalf("run over a TRUNCATE: %s %s %q, want failed with table_changed naming table b", got.Status, got.Code, got.Error)
	}
	if cur := mustVersion(t, ts.db, "ab", 0); cur.Version != first.Version {
		t.Errorf("current version %d after the failed run, want %d", cur.Version, first.Version)
	}
	next := ts.runWait(t, "ab")
	mustSucceed(t, next)
	if _, rows := tableRows(t, ts.db, "ab", "b", 0); len(rows) != 0 {
		t.Errorf("b after the next run: %d rows, want none", len(rows))
	}
}

// TestTablesRunKeyChanged: a table whose key changed fails the run with
// key_changed, and the error says what keeps the rest of the dataset: a
// run without the table (allow_dropped_tables), after which the table
// comes back as a new table with its new key.
func TestTablesRunKeyChanged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "src.db")
	sqliteExec(t, path,
		"CREATE TABLE a (id INT PRIMARY KEY, v INT)", "CREATE TABLE b (id INT PRIMARY KEY, x INT NOT NULL)",
		"INSERT INTO a VALUES (1, 1)", "INSERT INTO b VALUES (1, 1), (1000, 2)")
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
		t.Fatal(noteErr(err))
	}
	spec := api.Adapter{Name: "ds", Connection: "src", Include: []string{"*"}}
	if _, err := ts.svc.CreateAdapter(ctx, spec); err != nil {
		t.Fatal(noteErr(err))
	}
	first := ts.runWait(t, "ds")
	mustSucceed(t, first)
	sqliteExec(t, path, "DROP TABLE b", "CREATE TABLE b (id INT NOT NULL, x INT NOT NULL, PRIMARY KEY (id, x))", "INSERT INTO b VALUES (1, 1), (1000, 2)")
	second := ts.runWait(t, "ds")
	if second.Status != RunFailed || second.Code != "key_changed" || !strings.Contains(second.Error, "allow_dropped_tables") {
		t.Fatalf("run after a key change: %s %s: %s", second.Status, second.Code, second.Error)
	}
	// What the error says: a run without the table, then with it again.
	// b holds most of the dataset's rows: dropping it takes max_shrink
	// (or a forced run), as the guard's refusal would say.
	spec.Exclude, spec.AllowDroppedTables, spec.Guard.MaxShrink = []string{"b"}, true, 1
	if _, _, err := ts.svc.PutAdapter(ctx, spec); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, ts.runWait(t, "ds"))
	spec.Exclude = nil
	if _, _, err := ts.svc.PutAdapter(ctx, spec); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, ts.runWait(t, "ds"))
	if vi, rows := tableRows(t, ts.db, "ds", "b", 0); len(rows) != 2 || !slices.Equal(vi.Schema.Key, []string{"id", "x"}) {
		t.Errorf("b after it came back: %d rows, key %v", len(rows), vi.Schema.Key)
	}
}

// TestTablesRunDroppedCounted: a run that drops a table (gone from the
// source, allow_dropped_tables) counts its rows as deleted: in the run's
// stats, in its record's tables (the table marked dropped), in the
// version's stats and dropped_tables, and in the diff's counts of the
// two versions. The table created again under its name, with another
// key, is a new table: the dataset's diff counts it replaced, and the
// table's own diff says why it compares no rows.
func TestTablesRunDroppedCounted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "src.db")
	sqliteExec(t, path,
		"CREATE TABLE a (id INT PRIMARY KEY, v INT)", "CREATE TABLE b (id INT PRIMARY KEY, x INT NOT NULL)",
		"INSERT INTO a VALUES (1, 1), (2, 2)", "INSERT INTO b VALUES (1, 1), (2, 2), (3, 3)")
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "ds", Connection: "src", Include: []string{"*"}, AllowDroppedTables: true, Guard: api.Guard{MaxShrink: 1}}); err != nil {
		t.Fatal(noteErr(err))
	}
	first := ts.runWait(t, "ds")
	mustSucceed(t, first)

	// b dropped, one row of a deleted: 3 + 1 rows deleted (of 5: past the
	// default max_shrink, which this adapter lifts).
	sqliteExec(t, path, "DROP TABLE b", "DELETE FROM a WHERE id = 2")
	second := ts.runWait(t, "ds")
	mustSucceed(t, second)
	if second.Stats.Deleted != 4 || second.Stats.Rows != 1 {
		t.Errorf("run dropping a table: stats %+v, want 4 deleted, 1 row", second.Stats)
	}
	var b *RunTable
	for i, rt := range second.Tables {
		if rt.Name == "b" {
			b = &second.Tables[i]
		}
	}
	if len(second.Tables) != 2 || b == nil || !b.Dropped || b.Stats.Deleted != 3 || b.RowsRead != 0 || b.Mode != "" {
		t.Errorf("run record's tables %+v, want a and b dropped with 3 rows deleted", second.Tables)
	}
	vi := mustVersion(t, ts.db, "ds", second.Version)
	if vi.Stats.Deleted != 4 || !slices.Equal(vi.DroppedTables, []snapshot.DroppedTable{{Name: "b", Rows: 3}}) {
		t.Errorf("version dropping a table: stats %+v, dropped %+v", vi.Stats, vi.DroppedTables)
	}
	d, err := ts.db.DiffTables(ctx, "ds", first.Version, second.Version)
	if err != nil || len(d) != 2 || d[1].Table != "b" || d[1].Change != snapshot.TableDropped || d[1].Deleted != 3 || d[0].Deleted != 1 {
		t.Errorf("diff counts across the drop: %+v, %v", d, err)
	}

	// b again, keyed otherwise: a new table.
	sqliteExec(t, path, "CREATE TABLE b (id INT NOT NULL, x INT NOT NULL, PRIMARY KEY (id, x))", "INSERT INTO b VALUES (1, 1), (9, 9)")
	third := ts.runWait(t, "ds")
	mustSucceed(t, third)
	if third.Stats.Inserted != 2 || third.Stats.Deleted != 0 {
		t.Errorf("run adding the table again: stats %+v", third.Stats)
	}
	d, err = ts.db.DiffTables(ctx, "ds", first.Version, third.Version)
	if err != nil || len(d) != 2 || d[1].Change != snapshot.TableReplaced || d[1].Deleted != 3 || d[1].Inserted != 2 {
		t.Errorf("diff counts across the drop and the add: %+v, %v", d, err)
	}
	if _, err := ts.db.TableDiff(ctx, "ds", "b", first.Version, third.Version); !errors.Is(err, snapshot.ErrTableReplaced) ||
		!strings.Contains(err.Error(), "(3 rows keyed by id)") || !strings.Contains(err.Error(), "(2 rows keyed by id, x)") {
		t.Errorf("diff of the table added again: %v", err)
	}
}
