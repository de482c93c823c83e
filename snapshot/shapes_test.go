package snapshot

import (
	"context"
	"testing"

	"github.com/snapstore/snapstore/store/pebble"
)

var shapeSchema = Schema{
	Columns: []Column{
		{Name: "id", Kind: KindInt},
		{Name: "price", Kind: KindDecimal, Nullable: true},
		{Name: "day", Kind: KindDate, Nullable: true},
		{Name: "at", Kind: KindDateTime, Nullable: true},
		{Name: "dur", Kind: KindTime, Nullable: true},
	},
	Key: []string{"id"},
}

func shapeRow(id int64, price, day, at, dur string) []Value {
	v := func(k Kind, s string) Value {
		if s == "" {
			return Value{Kind: KindNull}
		}
		return Value{Kind: k, Bytes: []byte(s)}
	}
	return []Value{iv(id), v(KindDecimal, price), v(KindDate, day), v(KindDateTime, at), v(KindTime, dur)}
}

// shapesOf returns the shapes of vi by column, failing when vi has none.
func shapesOf(t *testing.T, vi VersionInfo) map[string]ColumnShape {
	t.Helper()
	if vi.Shapes == nil {
		t.Fatalf("version %d has no value shapes", vi.Version)
	}
	out := map[string]ColumnShape{}
	for _, c := range vi.Shapes.Columns {
		out[c.Column] = c
	}
	return out
}

// TestValueShapes checks the value shapes a run records: a full run's of
// the rows it put, a run of changes' of the previous version's and its
// changes, each kept in the version read back after a reopen.
func TestValueShapes(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	db := openTestDB(t, st, Options{})
	cfg := DatasetConfig{Name: "s", Guard: Guard{MaxShrink: 1}}
	commit := func(changes bool, rows ...[]Value) VersionInfo {
		t.Helper()
		r, err := db.BeginRun(ctx, cfg, RunOptions{Schema: shapeSchema})
		if err != nil {
			t.Fatal(err)
		}
		if changes {
			if err := r.ApplyChanges(ctx); err != nil {
				t.Fatal(err)
			}
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

	v1 := commit(false,
		shapeRow(1, "-12.50", "2024-02-29", "2024-02-29 23:59:59.123456", "-838:59:59"),
		shapeRow(2, "007.5", "0001-01-01", "1970-01-01 00:00:00+00", "12:00:00.5"),
		shapeRow(3, "", "", "", ""))
	want := map[string]ColumnShape{
		"price": {Column: "price", IntDigits: 2, FracDigits: 2},
		"day":   {Column: "day"},
		"at":    {Column: "at"},
		"dur":   {Column: "dur"},
	}
	checkShapes(t, shapesOf(t, v1), want)

	v2 := commit(false,
		shapeRow(1, "NaN", "0000-00-00", "2024-02-30 00:00:00", "12:60:00"),
		shapeRow(2, "123.4567", "2024-01-01", "2024-01-01 00:00:00", "01:00:00"))
	checkShapes(t, shapesOf(t, v2), map[string]ColumnShape{
		"price": {Column: "price", Irregular: true}, // digits no longer counted
		"day":   {Column: "day", Irregular: true},
		"at":    {Column: "at", Irregular: true},
		"dur":   {Column: "dur", Irregular: true},
	})

	// A full run records only the rows it put: the irregular ones are gone.
	v3 := commit(false, shapeRow(1, "1.5", "2024-01-01", "2024-01-01 00:00:00", "01:00:00"))
	checkShapes(t, shapesOf(t, v3), map[string]ColumnShape{
		"price": {Column: "price", IntDigits: 1, FracDigits: 1},
		"day":   {Column: "day"}, "at": {Column: "at"}, "dur": {Column: "dur"},
	})

	// A run of changes keeps the previous version's rows it is not given,
	// so its record covers them and its changes.
	v4 := commit(true, shapeRow(5, "99999.1", "2024-13-01", "", ""))
	checkShapes(t, shapesOf(t, v4), map[string]ColumnShape{
		"price": {Column: "price", IntDigits: 5, FracDigits: 1},
		"day":   {Column: "day", Irregular: true}, "at": {Column: "at"}, "dur": {Column: "dur"},
	})

	// Live progress carries no shapes; the versions read back keep them.
	db.Close()
	db = openTestDB(t, st, Options{})
	vs, err := db.Versions(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, vi := range vs {
		if vi.Version == v4.Version {
			checkShapes(t, shapesOf(t, vi), shapesOf(t, v4))
		}
	}
}

func checkShapes(t *testing.T, got, want map[string]ColumnShape) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("shapes %+v, want %+v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("shape of %s %+v, want %+v", k, got[k], w)
		}
	}
}

// TestValueShapesUnknown checks that versions written before value shapes
// were recorded have none, that a run keeping rows of such a version
// without putting them (a run of changes) records none either, and that
// a run that puts every row (a rollback) records them again.
func TestValueShapesUnknown(t *testing.T) {
	ctx := context.Background()
	dir := untarDataDir(t, "format2")
	st, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err := Open(ctx, st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vs, err := db.Versions(ctx, "films")
	if err != nil {
		t.Fatal(err)
	}
	for _, vi := range vs {
		if vi.Shapes != nil {
			t.Fatalf("version %d of an earlier format has shapes %+v", vi.Version, vi.Shapes)
		}
	}
	var cur VersionInfo
	for _, vi := range vs {
		if vi.Current {
			cur = vi
		}
	}
	// A run of changes keeps every row of the version it starts from.
	r, err := db.BeginRun(ctx, DatasetConfig{Name: "films", Retention: Retention{MinVersions: 10}}, RunOptions{Schema: cur.Schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ApplyChanges(ctx); err != nil {
		t.Fatal(err)
	}
	vi, err := r.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if vi.Shapes != nil {
		t.Fatalf("a run of changes on a version without shapes: %+v", vi.Shapes)
	}
	// A rollback puts every row of the version it restores.
	vi, err = db.Rollback(ctx, "films", vs[0].Version)
	if err != nil {
		t.Fatal(err)
	}
	shapesOf(t, vi)
}
