package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestRunOfChanges checks that a run of changes gives the version a full
// run of the same rows gives: the same rows, counts and checksum, on two
// databases that start from the same version.
func TestRunOfChanges(t *testing.T) {
	ctx := context.Background()
	full := openTestDB(t, newTestStore(t), Options{})
	changed := openTestDB(t, newTestStore(t), Options{})
	var v1 [][]Value
	for i := int64(1); i <= 200; i++ {
		name := Value{}
		if i%7 != 0 {
			name = sv(fmt.Sprintf("row %d", i))
		}
		v1 = append(v1, []Value{iv(i), name})
	}
	runRows(t, full, v1)
	runRows(t, changed, v1)

	// Updates (one to NULL, one from NULL), deletes (one of a key the
	// version lacks), inserts between and after the version's keys.
	type change struct {
		key  int64
		name *Value // nil: delete
	}
	val := func(v Value) *Value { return &v }
	changes := []change{
		{1, nil}, {3, val(sv("three"))}, {14, val(sv("fourteen"))}, {15, val(Value{})}, {50, nil},
		{199, val(sv("row 199"))}, {200, nil}, {250, val(sv("new"))}, {251, nil},
	}
	v2 := slices.Clone(v1)
	for _, c := range changes {
		i := slices.IndexFunc(v2, func(r []Value) bool { return r[0].Int == c.key })
		switch {
		case c.name == nil && i >= 0:
			v2 = slices.Delete(v2, i, i+1)
		case c.name != nil && i >= 0:
			v2[i] = []Value{iv(c.key), *c.name}
		case c.name != nil:
			v2 = append(v2, []Value{iv(c.key), *c.name})
		}
	}
	want := runRows(t, full, v2)

	r, err := changed.BeginRun(ctx, DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 1}}, RunOptions{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ApplyChanges(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.name == nil {
			err = r.Delete(ctx, []Value{iv(c.key)})
		} else {
			err = r.Put(ctx, []Value{iv(c.key), *c.name})
		}
		if err != nil {
			t.Fatalf("change of key %d: %v", c.key, err)
		}
	}
	if err := r.Put(ctx, []Value{iv(5), sv("behind")}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a change below the last key: %v, want ErrInvalidArgument", err)
	}
	got, err := r.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, g := want.Stats, got.Stats
	w.BytesWritten, g.BytesWritten = 0, 0
	if g != w {
		t.Errorf("stats of the run of changes %+v, of the full run %+v", g, w)
	}
	rows := func(db *DB) []string {
		rd, err := db.Reader(ctx, "t", At{})
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		return scanJSON(t, rd)
	}
	if a, b := rows(changed), rows(full); !slices.Equal(a, b) {
		t.Errorf("rows after the run of changes:\n%v\nafter the full run:\n%v", a, b)
	}
}

// TestApplyChangesRefusals checks when a run cannot be one of changes.
func TestApplyChangesRefusals(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, newTestStore(t), Options{})
	r := putRows(t, db, nil)
	if err := r.ApplyChanges(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("without a previous version: %v, want ErrInvalidArgument", err)
	}
	if err := r.Delete(ctx, []Value{iv(1)}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Delete outside a run of changes: %v, want ErrInvalidArgument", err)
	}
	if err := r.Abort(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	runRows(t, db, [][]Value{{iv(1), sv("a")}, {iv(2), sv("b")}})
	r = putRows(t, db, [][]Value{{iv(1), sv("a")}})
	if err := r.ApplyChanges(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("after a Put: %v, want ErrInvalidArgument", err)
	}
	if err := r.Abort(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	r = putRows(t, db, nil)
	if err := r.ApplyChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Carry(ctx, nil, []Value{iv(1)}, 1, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Carry in a run of changes: %v, want ErrInvalidArgument", err)
	}
	if err := r.Abort(ctx, "test"); err != nil {
		t.Fatal(err)
	}
}

// TestTablesRunOfChanges checks a run of changes of one table of a run
// of several: the version it commits equals a full run of the same rows
// (rows, counts, checksum of each table), a table given no change keeps
// its rows, and a table of several partitions cannot be one.
func TestTablesRunOfChanges(t *testing.T) {
	ctx := context.Background()
	full := openTestDB(t, newTestStore(t), Options{})
	changed := openTestDB(t, newTestStore(t), Options{})
	mustRunTables(t, full, shop(1))
	mustRunTables(t, changed, shop(1))

	// orders: key 2 updated, key 3 deleted, key 60 inserted.
	next := shop(1)
	orders := slices.Clone(next[0].rows)
	orders[1] = []Value{iv(2), sv("changed")}
	orders = slices.Delete(orders, 2, 3)
	orders = append(orders, []Value{iv(60), sv("new")})
	next[0].rows = orders
	want := mustRunTables(t, full, next)

	opts := TablesRunOptions{}
	for _, tb := range next {
		opts.Tables = append(opts.Tables, tb.spec)
	}
	tr, err := changed.BeginTablesRun(ctx, tablesConfig, opts)
	if err != nil {
		t.Fatal(err)
	}
	o := tr.Table("public.orders")
	if err := o.ApplyChanges(ctx); err != nil {
		t.Fatal(err)
	}
	for _, step := range []error{o.Put(ctx, []Value{iv(2), sv("changed")}), o.Delete(ctx, []Value{iv(3)}), o.Put(ctx, []Value{iv(60), sv("new")})} {
		if step != nil {
			t.Fatal(step)
		}
	}
	if err := tr.Table("customers").ApplyChanges(ctx); err != nil {
		t.Fatal(err)
	}
	lines := tr.Table("public.order_lines")
	if err := lines.ApplyChanges(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a run of changes of a table of 3 partitions: %v, want ErrInvalidArgument", err)
	}
	for _, row := range next[1].rows {
		if err := lines.Put(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	got, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range next {
		wt, _ := want.Table(tb.spec.Name)
		gt, ok := got.Table(tb.spec.Name)
		if !ok || gt.Stats.Rows != wt.Stats.Rows || gt.Stats.Checksum != wt.Stats.Checksum {
			t.Errorf("table %s: %+v, want rows and checksum of %+v", tb.spec.Name, gt.Stats, wt.Stats)
		}
		if g, w := readTable(t, changed, tb.spec.Name, got.Version), readTable(t, full, tb.spec.Name, want.Version); !slices.Equal(g, w) {
			t.Errorf("table %s: rows\n%v\nwant\n%v", tb.spec.Name, g, w)
		}
	}
}
