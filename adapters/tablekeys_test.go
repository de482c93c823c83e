package adapters

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/api"
)

// TestTablesRunTableKeys: a selected table without a key is kept by an
// adapter of several tables once table_keys names its key columns. The
// entry is checked when the adapter is saved (a column the table lacks is
// refused, blaming the entry), an entry of no selected table is a warning,
// the run keys the table by the entry, and a key that is not unique fails
// the run with duplicate_key, naming the table, the current version kept.
func TestTablesRunTableKeys(t *testing.T) {
	forEachTablesSource(t, func(t *testing.T, src tablesSource) {
		ctx := context.Background()
		src.exec(
			"CREATE TABLE orders (id INT PRIMARY KEY, n INT NOT NULL)",
			"CREATE TABLE events (at INT NOT NULL, kind VARCHAR(10) NOT NULL, n INT)",
			"CREATE TABLE eventz (at INT NOT NULL, n INT)",
			"INSERT INTO orders VALUES (1, 10), (2, 20)",
			"INSERT INTO events VALUES (1, 'a', 5), (1, 'b', 6), (2, 'a', 7)",
		)
		ts := newStack(t, Options{})
		if _, err := ts.svc.CreateConnection(ctx, src.conn); err != nil {
			t.Fatal(noteErr(err))
		}
		res, err := ts.svc.Resources(ctx, "src")
		if err != nil {
			t.Fatal(noteErr(err))
		}
		var events, eventz string
		for _, r := range res {
			switch r.Name {
			case "events":
				events = tableName(r)
			case "eventz":
				eventz = tableName(r)
			}
		}
		if events == "" {
			t.Fatalf("events not among the resources %+v", res)
		}

		// Two keyless tables: the run names both (the first one's error,
		// then the other), so that one run tells every fix needed.
		spec := api.Adapter{Name: "keys", Connection: "src", Resources: []string{"orders", "events", "eventz"}}
		a, err := ts.svc.CreateAdapter(ctx, spec)
		if err != nil {
			t.Fatal(noteErr(err))
		}
		if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], events+", "+eventz+": every run fails with no_key until the selection excludes them (exclude), table_keys names their key columns") {
			t.Errorf("warnings of an adapter with keyless tables: %q", a.Warnings)
		}
		first := ts.runWait(t, "keys")
		if first.Status != RunFailed || first.Code != "no_key" || !strings.Contains(first.Error, "table "+events+": ") ||
			!strings.HasSuffix(first.Error, "; exclude the table, give it a primary key, or name its key columns in table_keys; table "+eventz+" has no usable key either") {
			t.Errorf("run with keyless tables: %s %s: %s", first.Status, first.Code, first.Error)
		}
		spec.Resources = []string{"orders", "events"}
		if _, _, err := ts.svc.PutAdapter(ctx, spec); err != nil {
			t.Fatal(noteErr(err))
		}

		// A key column the table lacks: refused when saved, blaming the
		// entry; the adapter as it was.
		bad := spec
		bad.TableKeys = map[string][]string{events: {"at", "nope"}}
		var oe *OptionError
		if _, _, err := ts.svc.PutAdapter(ctx, bad); !errors.As(err, &oe) || oe.Key != "table_keys."+events || !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("an entry of table_keys naming a column the table lacks: %v", err)
		}
		if got, err := ts.svc.GetAdapter(ctx, "keys"); err != nil || len(got.TableKeys) != 0 {
			t.Errorf("the adapter after a refused change: %+v, %v", got.TableKeys, err)
		}

		// The key named: the run keys events by (at, kind). An entry of
		// a table the selection does not hold is a warning.
		spec.TableKeys = map[string][]string{events: {"at", "kind"}, "no_such_table": {"id"}}
		a, _, err = ts.svc.PutAdapter(ctx, spec)
		if err != nil {
			t.Fatal(noteErr(err))
		}
		const unused = "table_keys.no_such_table names no selected table"
		if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], unused) {
			t.Errorf("warnings of an adapter with an entry of no table: %q", a.Warnings)
		}
		if !slices.Equal(a.TableKeys[events], []string{"at", "kind"}) {
			t.Errorf("the adapter's table_keys: %v", a.TableKeys)
		}
		second := ts.runWait(t, "keys")
		mustSucceed(t, second)
		if len(second.Warnings) != 1 || !strings.Contains(second.Warnings[0], unused) {
			t.Errorf("warnings of the run: %q", second.Warnings)
		}
		vi, rows := tableRows(t, ts.db, "keys", "events", 0)
		if len(rows) != 3 {
			t.Errorf("events: %d rows, want 3: %v", len(rows), rows)
		}
		for _, tb := range vi.Tables {
			if tb.Name == events && !slices.Equal(tb.Schema.Key, []string{"at", "kind"}) {
				t.Errorf("events keyed by %v, want [at kind]", tb.Schema.Key)
			}
		}
		if _, o := tableRows(t, ts.db, "keys", "orders", 0); len(o) != 2 {
			t.Errorf("orders: %d rows, want 2", len(o))
		}

		// The key stops being unique: the run fails naming the table, the
		// version stays.
		src.exec("INSERT INTO events VALUES (2, 'a', 8)", "UPDATE orders SET n = 11 WHERE id = 1")
		third := ts.runWait(t, "keys")
		if third.Status != RunFailed || third.Code != "duplicate_key" || !strings.Contains(third.Error, "table "+events+": ") || !strings.Contains(third.Error, "not unique") {
			t.Errorf("run with a key no longer unique: %s %s: %s", third.Status, third.Code, third.Error)
		}
		// Its record says what each table read, the failed one too, and
		// the run's rows_read is their sum.
		var sum int64
		for _, tb := range third.Tables {
			sum += tb.RowsRead
			if tb.Name == events && (tb.RowsRead == 0 || tb.RowsRead < tb.Stats.Rows) {
				t.Errorf("the failed table's entry: rows_read %d, stats %+v", tb.RowsRead, tb.Stats)
			}
		}
		if sum != third.RowsRead {
			t.Errorf("run rows_read %d, its tables' sum %d: %+v", third.RowsRead, sum, third.Tables)
		}
		if cur := mustVersion(t, ts.db, "keys", 0); cur.Version != second.Version {
			t.Errorf("current version %d after a failed run, want %d", cur.Version, second.Version)
		}
	})
}

// TestUnusedTableKeys: an entry of table_keys naming no selected table is
// a warning; one naming a selected table without its schema, or in
// another case, is told the name to write; one named as the selected
// tables are, of a table not among them, is told that, not how to name
// tables.
func TestUnusedTableKeys(t *testing.T) {
	sel := []source.Resource{{Schema: "shop", Name: "events"}, {Schema: "shop", Name: "orders"}, {Name: "log"}}
	spec := api.Adapter{TableKeys: map[string][]string{
		"shop.events": {"at"}, "log": {"at"}, // selected
		"events": {"at"}, "SHOP.Orders": {"id"}, "nope": {"id"}, "shop.gone": {"id"},
	}}
	got := unusedTableKeys(spec, sel)
	want := []string{
		"table_keys.SHOP.Orders names no selected table: did you mean shop.orders?",
		"table_keys.events names no selected table: did you mean shop.events?",
		"table_keys.nope names no selected table (tables are named",
		"table_keys.shop.gone names no selected table: the source has no such table now, or the adapter's selection leaves it out",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %d", got, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("warning %d: %q, want it to start %q", i, got[i], w)
		}
	}
}
