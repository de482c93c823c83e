package snapshot

import (
	"context"
	"errors"
	"flag"
	"maps"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

var (
	tablesModelSteps = flag.Int("tables.steps", 120, "steps of TestTablesModel")
	tablesModelSeed  = flag.Uint64("tables.seed", 0, "seed of TestTablesModel; 0 picks one")
)

// tmTable is the model of one table at one version: its incarnation (a
// table dropped and added again is a new one), schema and rows (key ->
// values).
type tmTable struct {
	inc    int
	schema Schema
	rows   map[int64][]Value
}

// json returns the JSON of row k, as a scan returns it.
func (tb *tmTable) json(k int64) string {
	b, _ := Row{Columns: columnNames(tb.schema), Values: tb.rows[k]}.MarshalJSON()
	return string(b)
}

// tmVersion is the model of one committed version of a dataset of named
// tables.
type tmVersion struct {
	id     int64
	tables map[string]*tmTable
}

var tmPool = []string{"a", "s.b", "c", "d"}

// TestTablesModel runs random runs of named tables (tables added, dropped
// and added again, schema changes, failed tables, verified runs),
// rollbacks, GC and restarts of the DB against an in-memory model: after
// every step every kept version lists the model's tables, each reading
// as the model's rows, and DiffTables between kept versions counts what
// the model does.
func TestTablesModel(t *testing.T) {
	ctx := context.Background()
	seed := *tablesModelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-tables.seed)", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	// The clock, read by the DB's keeper too.
	var clock atomic.Int64
	clock.Store(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	st := newTestStore(t)
	db := openTestDB(t, st, Options{now: now, Partitions: 2})
	cfg := DatasetConfig{Name: "m", Guard: Guard{MaxShrink: 1, AllowEmpty: true}, Retention: Retention{TTL: time.Nanosecond, MinVersions: 3}}
	var kept []*tmVersion
	incs := 0
	current := func() *tmVersion {
		if len(kept) == 0 {
			return nil
		}
		return kept[len(kept)-1]
	}
	// newTables makes random content for names, keeping the
	// incarnation of the tables the current version holds.
	newTables := func(names []string) map[string]*tmTable {
		out := map[string]*tmTable{}
		for _, n := range names {
			cols := []Column{{Name: "k", Kind: KindInt}}
			if rng.IntN(4) > 0 {
				cols = append(cols, Column{Name: "x", Kind: KindString, Nullable: true})
			}
			if rng.IntN(3) == 0 {
				cols = append(cols, Column{Name: "y", Kind: KindInt, Nullable: true})
			}
			tb := &tmTable{schema: Schema{Columns: cols, Key: []string{"k"}}, rows: map[int64][]Value{}}
			if cur := current(); cur != nil && cur.tables[n] != nil {
				tb.inc = cur.tables[n].inc
			} else {
				incs++
				tb.inc = incs
			}
			for k := range int64(12) {
				if rng.IntN(3) == 0 {
					continue
				}
				vals := []Value{iv(k)}
				for _, c := range cols[1:] {
					if c.Kind == KindString {
						vals = append(vals, sv([]string{"p", "q", "r"}[rng.IntN(3)]))
					} else {
						vals = append(vals, iv(int64(rng.IntN(3))))
					}
				}
				tb.rows[k] = vals
			}
			out[n] = tb
		}
		return out
	}
	// put writes tables through a run; bad names a table given a
	// duplicate key.
	put := func(tables map[string]*tmTable, opts TablesRunOptions, bad string) (VersionInfo, *TablesRun, error) {
		for _, n := range slices.Sorted(maps.Keys(tables)) {
			opts.Tables = append(opts.Tables, TableSpec{Name: n, Schema: tables[n].schema})
		}
		tr, err := db.BeginTablesRun(ctx, cfg, opts)
		if err != nil {
			return VersionInfo{}, nil, err
		}
		for n, tb := range tables {
			w := tr.Table(n)
			for _, k := range slices.Sorted(maps.Keys(tb.rows)) {
				vals := tb.rows[k]
				if err := w.Put(ctx, vals); err != nil {
					tr.Abort(ctx, err.Error())
					return VersionInfo{}, tr, err
				}
				if n == bad {
					if err := w.Put(ctx, vals); err != nil {
						tr.Abort(ctx, err.Error())
						return VersionInfo{}, tr, err
					}
				}
			}
		}
		vi, err := tr.Commit(ctx)
		return vi, tr, err
	}
	check := func(step int, what string) {
		t.Helper()
		info, err := db.Dataset(ctx, "m")
		if len(kept) == 0 {
			if err == nil && info.Current != 0 {
				t.Fatalf("step %d (%s): current %d, nothing committed", step, what, info.Current)
			}
			return
		}
		if err != nil || info.Current != current().id || info.Versions != len(kept) {
			t.Fatalf("step %d (%s): %+v %v, want current %d and %d versions", step, what, info, err, current().id, len(kept))
		}
		for _, mv := range kept {
			ts, err := db.Tables(ctx, "m", At{Version: mv.id})
			if err != nil {
				t.Fatalf("step %d (%s): version %d: %v", step, what, mv.id, err)
			}
			var names []string
			for _, ti := range ts {
				names = append(names, ti.Name)
				if int(ti.Stats.Rows) != len(mv.tables[ti.Name].rows) {
					t.Fatalf("step %d (%s): version %d table %s: stats %+v, want %d rows", step, what, mv.id, ti.Name, ti.Stats, len(mv.tables[ti.Name].rows))
				}
			}
			if want := slices.Sorted(maps.Keys(mv.tables)); !slices.Equal(names, want) {
				t.Fatalf("step %d (%s): version %d holds %v, want %v", step, what, mv.id, names, want)
			}
			for n, tb := range mv.tables {
				r, err := db.TableReader(ctx, "m", n, At{Version: mv.id})
				if err != nil {
					t.Fatal(err)
				}
				got := scanJSON(t, r)
				r.Close()
				var want []string
				for _, k := range slices.Sorted(maps.Keys(tb.rows)) {
					want = append(want, tb.json(k))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("step %d (%s): version %d table %s:\n%v\nwant\n%v", step, what, mv.id, n, got, want)
				}
			}
		}
		// DiffTables between two kept versions.
		from, to := kept[rng.IntN(len(kept))], kept[rng.IntN(len(kept))]
		ds, err := db.DiffTables(ctx, "m", from.id, to.id)
		if err != nil {
			t.Fatal(err)
		}
		var want []TableDiffStats
		for _, n := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
			for n := range from.tables {
				yield(n, true)
			}
			for n := range to.tables {
				yield(n, true)
			}
		}))) {
			f, g := from.tables[n], to.tables[n]
			d := TableDiffStats{Table: n, DiffStats: DiffStats{From: from.id, To: to.id}}
			switch {
			case f != nil && g != nil && f.inc == g.inc:
				for k := range g.rows {
					switch _, ok := f.rows[k]; {
					case !ok:
						d.Inserted++
					case f.json(k) != g.json(k):
						d.Updated++
					}
				}
				for k := range f.rows {
					if _, ok := g.rows[k]; !ok {
						d.Deleted++
					}
				}
			case f != nil && g != nil:
				d.Change, d.Deleted, d.Inserted = TableReplaced, int64(len(f.rows)), int64(len(g.rows))
			case g != nil:
				d.Change, d.Inserted = TableAdded, int64(len(g.rows))
			default:
				d.Change, d.Deleted = TableDropped, int64(len(f.rows))
			}
			want = append(want, d)
		}
		if !slices.Equal(ds, want) {
			t.Fatalf("step %d (%s): DiffTables %d..%d:\n%+v\nwant\n%+v", step, what, from.id, to.id, ds, want)
		}
	}
	for step := 0; step < *tablesModelSteps; step++ {
		clock.Add(int64(time.Minute))
		var what string
		switch op := rng.IntN(20); {
		case op < 11 || len(kept) == 0: // a run
			var names []string
			for _, n := range tmPool {
				if rng.IntN(3) > 0 {
					names = append(names, n)
				}
			}
			if len(names) == 0 {
				names = tmPool[:1]
			}
			tables := newTables(names)
			var missing bool
			if cur := current(); cur != nil {
				for n := range cur.tables {
					missing = missing || tables[n] == nil
				}
			}
			drop := rng.IntN(2) == 0
			bad := ""
			if rng.IntN(6) == 0 {
				bad = names[rng.IntN(len(names))]
			}
			what = "run"
			vi, _, err := put(tables, TablesRunOptions{DropMissing: drop}, bad)
			switch {
			case missing && !drop:
				if !errors.Is(err, ErrTableMissing) {
					t.Fatalf("step %d: a run lacking a table: %v", step, err)
				}
				what = "run refused"
			case bad != "":
				if !errors.Is(err, ErrBadKey) {
					t.Fatalf("step %d: a run with a duplicate key: %v", step, err)
				}
				what = "run failed"
			case err != nil:
				t.Fatalf("step %d: %v", step, err)
			default:
				kept = append(kept, &tmVersion{id: vi.Version, tables: tables})
			}
		case op < 13: // an unchanged run
			cur := current()
			vi, tr, err := put(cur.tables, TablesRunOptions{VerifyUnchanged: true}, "")
			if err != nil || !tr.Verified() || vi.Version != cur.id {
				t.Fatalf("step %d: an unchanged run: %+v %v", step, vi, err)
			}
			what = "verified"
		case op < 15: // a rollback
			target := kept[rng.IntN(len(kept))]
			vi, err := db.Rollback(ctx, "m", target.id)
			if err != nil {
				t.Fatalf("step %d: rollback to %d: %v", step, target.id, err)
			}
			tables := map[string]*tmTable{}
			cur := current()
			for n, tb := range target.tables {
				c := *tb
				if cur.tables[n] != nil {
					c.inc = cur.tables[n].inc
				} else {
					incs++
					c.inc = incs
				}
				tables[n] = &c
			}
			kept = append(kept, &tmVersion{id: vi.Version, tables: tables})
			what = "rollback"
		case op < 18: // GC: the newest 3 versions stay
			if _, err := db.GC(ctx, "m", false); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			kept = kept[max(0, len(kept)-3):]
			what = "gc"
		default: // a restart of the DB
			db.Close()
			db = openTestDB(t, st, Options{now: now, Partitions: 2})
			what = "restart"
		}
		check(step, what)
	}
}
