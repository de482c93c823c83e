package snapshot

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
)

var (
	modelSteps = flag.Int("model.steps", 2000, "steps of TestModel")
	modelSeed  = flag.Uint64("model.seed", 0, "seed of TestModel; 0 picks one")
	modelTrace = flag.Bool("model.trace", false, "log every step of TestModel")
)

// mVersion is the model of one committed version.
type mVersion struct {
	id        int64
	schema    Schema
	rows      map[int64]map[string]Value // key -> column -> value
	committed time.Time
	stats     RunStats
}

// model is the in-memory truth TestModel compares the DB with.
type model struct {
	versions []*mVersion // kept, ascending
	current  int64
	tags     map[string]int64
}

func (m *model) find(v int64) *mVersion {
	for _, mv := range m.versions {
		if mv.id == v {
			return mv
		}
	}
	return nil
}

var modelPool = []Column{
	{Name: "a", Kind: KindString}, {Name: "b", Kind: KindInt}, {Name: "c", Kind: KindDecimal},
	{Name: "d", Kind: KindFloat}, {Name: "e", Kind: KindBytes},
}

func randValue(rng *rand.Rand, k Kind) Value {
	if rng.IntN(8) == 0 {
		return Value{}
	}
	switch k {
	case KindString:
		return Value{Kind: k, Bytes: []byte([]string{"x", "y", "zz", "", "a\x00b"}[rng.IntN(5)])}
	case KindInt:
		return Value{Kind: k, Int: int64(rng.IntN(5)) - 2}
	case KindDecimal:
		return Value{Kind: k, Bytes: []byte([]string{"1.50", "-2", "0.001", "100"}[rng.IntN(4)])}
	case KindFloat:
		return Value{Kind: k, Float: []float64{0.5, -1, 3}[rng.IntN(3)]}
	case KindBytes:
		return Value{Kind: k, Bytes: []byte{byte(rng.IntN(3)), 0xff}}
	}
	panic("kind")
}

// TestModel runs random runs (inserts, updates, deletes, schema changes,
// aborted runs, guard refusals, crashes), GC with random retention,
// rollbacks, tags and pinned readers against an in-memory model, and after
// every step compares gets, scans, diffs and version lists at every kept
// version. Run longer with -model.steps=N; replay with -model.seed=S.
func TestModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -model.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	ctx := context.Background()
	dir := t.TempDir()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	parts := 1 + rng.IntN(3)
	var st store.Store
	var db *DB
	open := func() {
		st = openTestStore(t, dir)
		var err error
		db, err = Open(ctx, st, Options{Partitions: parts, now: func() time.Time { return clock }, batchSize: []int{1, 3, 8, 4096}[rng.IntN(4)]})
		if err != nil {
			t.Fatal(err)
		}
	}
	open()
	m := &model{tags: map[string]int64{}}
	cfg := DatasetConfig{Name: "m", Guard: Guard{MaxShrink: 0.5}}
	type pinned struct {
		r  *Reader
		mv *mVersion
	}
	var pins []pinned
	defer func() {
		for _, p := range pins {
			p.r.Close()
		}
	}()

	for step := 0; step < *modelSteps; step++ {
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d step %d: %s", seed, step, fmt.Sprintf(format, args...))
		}
		clock = clock.Add(time.Duration(rng.IntN(60)) * time.Minute)
		var what string
		switch op := rng.IntN(100); {
		case op < 45: // a run: commit, abort, crash, or refused
			what = "run"
			prev := m.find(m.current)
			schema := Schema{Columns: []Column{{Name: "id", Kind: KindInt}}, Key: []string{"id"}}
			for _, c := range modelPool {
				if rng.IntN(3) > 0 || (prev == nil && c.Name == "a") {
					schema.Columns = append(schema.Columns, c)
				}
			}
			if prev != nil && rng.IntN(3) > 0 {
				schema = prev.schema // usually keep the schema
			}
			rows := map[int64]map[string]Value{}
			if prev != nil {
				for _, k := range sortedKeys(prev.rows) {
					r := prev.rows[k]
					if rng.IntN(10) == 0 {
						continue // deleted
					}
					nr := map[string]Value{}
					for _, c := range schema.Columns {
						if v, ok := r[c.Name]; ok {
							nr[c.Name] = v
						} else {
							nr[c.Name] = randValue(rng, c.Kind)
						}
					}
					nr["id"] = Value{Kind: KindInt, Int: k}
					if rng.IntN(6) == 0 {
						c := schema.Columns[rng.IntN(len(schema.Columns))]
						if c.Name != "id" {
							nr[c.Name] = randValue(rng, c.Kind)
						}
					}
					rows[k] = nr
				}
			}
			for i := rng.IntN(6); i > 0; i-- {
				k := int64(rng.IntN(40)) - 10
				nr := map[string]Value{"id": {Kind: KindInt, Int: k}}
				for _, c := range schema.Columns[1:] {
					nr[c.Name] = randValue(rng, c.Kind)
				}
				rows[k] = nr
			}
			if rng.IntN(15) == 0 {
				rows = map[int64]map[string]Value{} // empty source
			}
			keys := sortedKeys(rows)
			switch rng.IntN(4) { // source order: sorted, shuffled, mostly sorted, reversed
			case 1:
				rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			case 2:
				for n := rng.IntN(3); n >= 0 && len(keys) > 1; n-- {
					i := rng.IntN(len(keys) - 1)
					keys[i], keys[i+1] = keys[i+1], keys[i]
				}
			case 3:
				slices.Reverse(keys)
			}
			force := rng.IntN(3) == 0
			allowEmpty := rng.IntN(2) == 0
			c := cfg
			c.Guard.AllowEmpty = allowEmpty
			r, err := db.BeginRun(ctx, c, RunOptions{Schema: schema, Force: force})
			if err != nil {
				fail("begin: %v", err)
			}
			dupAccepted := false
			for i, k := range keys {
				vals := make([]Value, len(schema.Columns))
				for i, col := range schema.Columns {
					vals[i] = rows[k][col.Name]
				}
				if err := r.Put(ctx, vals); err != nil {
					fail("put: %v", err)
				}
				if rng.IntN(20) == 0 { // a key given again: refused, nothing changes
					d := keys[rng.IntN(i+1)]
					for i, col := range schema.Columns {
						if col.Name != "id" {
							vals[i] = randValue(rng, col.Kind)
						} else {
							vals[i] = Value{Kind: KindInt, Int: d}
						}
					}
					// Refused by Put, or else by Commit (doc.go D5).
					if err := r.Put(ctx, vals); err == nil {
						dupAccepted = true
					} else if !errors.Is(err, ErrBadKey) {
						fail("duplicate key %d: %v", d, err)
					}
				}
			}
			// expected stats
			var want RunStats
			want.Rows = int64(len(rows))
			for k, nr := range rows {
				if prev == nil || prev.rows[k] == nil {
					want.Inserted++
				} else if !sameModelRow(prev.rows[k], nr) {
					want.Updated++
				} else {
					want.Unchanged++
				}
			}
			if prev != nil {
				for k := range prev.rows {
					if rows[k] == nil {
						want.Deleted++
					}
				}
			}
			refused := !force && ((want.Rows == 0 && !allowEmpty) ||
				(prev != nil && len(prev.rows) > 0 && float64(want.Deleted)/float64(len(prev.rows)) > 0.5))
			switch end := rng.IntN(10); {
			case end == 0:
				what = "run aborted"
				if err := r.Abort(ctx, "model"); err != nil {
					fail("abort: %v", err)
				}
			case end == 1:
				what = "run crashed"
				db.crash()
				st.Close()
				for _, p := range pins {
					p.r.Close() // readers of the dead process
				}
				pins = nil
				open()
			default:
				vi, err := r.Commit(ctx)
				if dupAccepted {
					what = "run with a duplicate key"
					if !errors.Is(err, ErrBadKey) {
						fail("commit with a duplicate key: %v", err)
					}
					break
				}
				if refused {
					what = "run refused"
					if !errors.Is(err, ErrGuardRefused) {
						fail("commit should be refused, got %v", err)
					}
					break
				}
				what = "run committed"
				if err != nil {
					fail("commit: %v", err)
				}
				got := vi.Stats
				got.BytesWritten, got.Checksum = 0, ""
				if got != want {
					fail("stats %+v, want %+v", got, want)
				}
				mv := &mVersion{id: vi.Version, schema: schema, rows: rows, committed: clock, stats: vi.Stats}
				if prev != nil && sameModelVersion(prev, mv) && prev.stats.Checksum != vi.Stats.Checksum {
					fail("same content, checksums %s and %s", prev.stats.Checksum, vi.Stats.Checksum)
				}
				if prev != nil && !sameModelVersion(prev, mv) && slices.Equal(columnNames(prev.schema), columnNames(schema)) && prev.stats.Checksum == vi.Stats.Checksum {
					fail("different content, same checksum %s", vi.Stats.Checksum)
				}
				m.versions = append(m.versions, mv)
				m.current = vi.Version
			}
		case op < 55:
			what = "gc"
			c := cfg
			c.Retention = Retention{TTL: time.Duration(1+rng.IntN(4)) * time.Hour, MinVersions: rng.IntN(4)}
			if err := db.SetConfig(ctx, c); err != nil && !errors.Is(err, ErrDatasetNotFound) {
				fail("set config: %v", err)
			} else if err != nil {
				break
			}
			dry := rng.IntN(4) == 0
			rep, err := db.GC(ctx, "m", dry)
			if err != nil {
				fail("gc: %v", err)
			}
			want := modelExpired(m, c.Retention, clock)
			if !slices.Equal(rep.VersionsExpired, want) {
				fail("gc expired %v, want %v", rep.VersionsExpired, want)
			}
			if !dry {
				m.versions = slices.DeleteFunc(m.versions, func(mv *mVersion) bool { return slices.Contains(want, mv.id) })
			}
		case op < 62:
			what = "rollback"
			if len(m.versions) == 0 {
				break
			}
			to := m.versions[rng.IntN(len(m.versions))]
			if _, err := db.Rollback(ctx, "m", to.id); err != nil {
				fail("rollback to %d: %v", to.id, err)
			}
			m.versions = slices.DeleteFunc(m.versions, func(mv *mVersion) bool { return mv.id > to.id })
			m.current = to.id
			for _, t := range slices.Sorted(maps.Keys(m.tags)) {
				if v := m.tags[t]; v > to.id {
					delete(m.tags, t)
				}
			}
		case op < 68:
			what = "tag"
			name := "t" + strconv.Itoa(rng.IntN(3))
			if len(m.versions) > 0 && rng.IntN(3) > 0 {
				v := m.versions[rng.IntN(len(m.versions))].id
				if err := db.Tag(ctx, "m", name, v); err != nil {
					fail("tag: %v", err)
				}
				m.tags[name] = v
			} else if _, ok := m.tags[name]; ok {
				if err := db.Untag(ctx, "m", name); err != nil {
					fail("untag: %v", err)
				}
				delete(m.tags, name)
			}
		case op < 76:
			what = "pin"
			if len(m.versions) > 0 && len(pins) < 3 {
				mv := m.versions[rng.IntN(len(m.versions))]
				r, err := db.Reader(ctx, "m", At{Version: mv.id})
				if err != nil {
					fail("reader: %v", err)
				}
				pins = append(pins, pinned{r, mv})
			}
		case op < 84:
			what = "unpin"
			if len(pins) > 0 {
				i := rng.IntN(len(pins))
				pins[i].r.Close()
				pins = slices.Delete(pins, i, i+1)
			}
		case op < 88:
			what = "reopen"
			for _, p := range pins {
				p.r.Close()
			}
			pins = nil
			if err := db.Close(); err != nil {
				fail("close: %v", err)
			}
			st.Close()
			open()
		default:
			what = "reads only"
		}

		if *modelTrace {
			t.Logf("step %d: %s; current %d kept %d", step, what, m.current, len(m.versions))
		}
		// Check everything against the model.
		vs, err := db.Versions(ctx, "m")
		if len(m.versions) == 0 {
			if err != nil && !errors.Is(err, ErrDatasetNotFound) || len(vs) != 0 {
				fail("after %s: versions %v, %v; want none", what, vs, err)
			}
			continue
		}
		if err != nil {
			fail("after %s: versions: %v", what, err)
		}
		var got, want []int64
		for _, v := range vs {
			got = append(got, v.Version)
		}
		for i := len(m.versions) - 1; i >= 0; i-- {
			want = append(want, m.versions[i].id)
		}
		if !slices.Equal(got, want) {
			fail("after %s: kept versions %v, want %v", what, got, want)
		}
		if vs[0].Version != m.current && m.find(m.current) != nil && !vs[slices.IndexFunc(vs, func(v VersionInfo) bool { return v.Current })].Current {
			fail("after %s: current", what)
		}
		for _, mv := range m.versions {
			checkVersion(t, ctx, db, nil, mv, rng, func(msg string) { fail("after %s: version %d: %s", what, mv.id, msg) })
		}
		for _, p := range pins {
			checkVersion(t, ctx, db, p.r, p.mv, rng, func(msg string) { fail("after %s: pinned version %d: %s", what, p.mv.id, msg) })
		}
		a, b := m.versions[rng.IntN(len(m.versions))], m.versions[rng.IntN(len(m.versions))]
		checkDiff(ctx, db, a, b, func(msg string) { fail("after %s: diff %d..%d: %s", what, a.id, b.id, msg) })
		if vi, err := db.VersionInfo(ctx, "m", m.current); err != nil || !vi.Current {
			fail("after %s: current %d: %+v %v", what, m.current, vi, err)
		}
	}
	// Finally GC with retention 1 and no readers leaves exactly the cells
	// of the current version and no invalid transaction.
	for _, p := range pins {
		p.r.Close()
	}
	pins = nil
	if len(m.versions) > 0 {
		for tg := range m.tags {
			db.Untag(ctx, "m", tg)
		}
		if err := db.SetConfig(ctx, DatasetConfig{Name: "m", Retention: Retention{TTL: time.Nanosecond, MinVersions: 1}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.GC(ctx, "m", false); err != nil {
			t.Fatal(err)
		}
		if inv := db.txm.Invalid("m"); len(inv) != 0 {
			t.Fatalf("seed %d: invalid txns left after GC: %v", seed, inv)
		}
		cur := m.find(m.current)
		cells, err := logicalCells(db, "m")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range cells {
			if c.kind != store.KindPut {
				t.Fatalf("seed %d: marker left after full GC: %+v", seed, c)
			}
			n++
		}
		if want := len(cur.rows) * len(cur.schema.Columns); n != want {
			t.Fatalf("seed %d: %d cells after full GC, want %d", seed, n, want)
		}
	}
	db.Close()
}

func sortedKeys(rows map[int64]map[string]Value) []int64 {
	keys := make([]int64, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func columnNames(s Schema) []string {
	var out []string
	for _, c := range s.Columns {
		out = append(out, c.Name)
	}
	return out
}

func sameModelRow(a, b map[string]Value) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !v.Equal(w) {
			return false
		}
	}
	return true
}

func sameModelVersion(a, b *mVersion) bool {
	if !slices.Equal(columnNames(a.schema), columnNames(b.schema)) || len(a.rows) != len(b.rows) {
		return false
	}
	for k, r := range a.rows {
		if b.rows[k] == nil || !sameModelRow(r, b.rows[k]) {
			return false
		}
	}
	return true
}

func modelExpired(m *model, ret Retention, now time.Time) []int64 {
	minV := max(ret.MinVersions, 1)
	out := []int64{}
	for i, mv := range m.versions {
		tagged := false
		for _, v := range m.tags {
			tagged = tagged || v == mv.id
		}
		if mv.id == m.current || tagged || len(m.versions)-i <= minV || ret.TTL == 0 || now.Sub(mv.committed) < ret.TTL {
			continue
		}
		out = append(out, mv.id)
	}
	return out
}

func modelRowJSON(s Schema, r map[string]Value) string {
	row := Row{}
	for _, c := range s.Columns {
		row.Columns = append(row.Columns, c.Name)
		row.Values = append(row.Values, r[c.Name])
	}
	b, _ := row.MarshalJSON()
	return string(b)
}

func checkVersion(t *testing.T, ctx context.Context, db *DB, r *Reader, mv *mVersion, rng *rand.Rand, fail func(string)) {
	if r == nil {
		var err error
		r, err = db.Reader(ctx, "m", At{Version: mv.id})
		if err != nil {
			fail(err.Error())
			return
		}
		defer r.Close()
	}
	keys := make([]int64, 0, len(mv.rows))
	for k := range mv.rows {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var want []string
	for _, k := range keys {
		want = append(want, modelRowJSON(mv.schema, mv.rows[k]))
	}
	limit := []int{0, 0, 3, 7}[rng.IntN(4)]
	var got []string
	opts := ScanOptions{Limit: limit}
	for {
		it, err := r.Scan(ctx, opts)
		if err != nil {
			fail(err.Error())
			return
		}
		for it.Next() {
			b, _ := it.Row().MarshalJSON()
			got = append(got, string(b))
		}
		if err := it.Close(); err != nil {
			fail(err.Error())
			return
		}
		if opts.PageToken = it.NextPageToken(); opts.PageToken == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		fail(fmt.Sprintf("scan\n got %v\nwant %v\ninvalid %v\n%s", got, want, db.txm.Invalid("m"), dumpCells(db, "m")))
		return
	}
	for i := 0; i < 3; i++ {
		k := int64(rng.IntN(40)) - 10
		row, err := r.Get(ctx, []Value{{Kind: KindInt, Int: k}}, nil)
		if mr := mv.rows[k]; mr == nil {
			if !errors.Is(err, ErrRowNotFound) {
				fail(fmt.Sprintf("get %d: want not found, got %v %v", k, row, err))
			}
		} else {
			b, _ := row.MarshalJSON()
			if err != nil || string(b) != modelRowJSON(mv.schema, mr) {
				fail(fmt.Sprintf("get %d: %s %v, want %s", k, b, err, modelRowJSON(mv.schema, mr)))
			}
		}
	}
}

func checkDiff(ctx context.Context, db *DB, a, b *mVersion, fail func(string)) {
	it, err := db.Diff(ctx, "m", a.id, b.id)
	if err != nil {
		fail(err.Error())
		return
	}
	var got []string
	for it.Next() {
		c := it.Change()
		s := fmt.Sprintf("%s %d", c.Op, c.Key[0].Int)
		if c.Before != nil {
			j, _ := c.Before.MarshalJSON()
			s += " " + string(j)
		}
		if c.After != nil {
			j, _ := c.After.MarshalJSON()
			s += " " + string(j)
		}
		got = append(got, s)
	}
	if err := it.Close(); err != nil {
		fail(err.Error())
		return
	}
	keys := map[int64]bool{}
	for k := range a.rows {
		keys[k] = true
	}
	for k := range b.rows {
		keys[k] = true
	}
	sorted := make([]int64, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	var want []string
	var counts DiffStats
	for _, k := range sorted {
		ra, rb := a.rows[k], b.rows[k]
		switch {
		case ra == nil:
			want = append(want, fmt.Sprintf("insert %d %s", k, modelRowJSON(b.schema, rb)))
			counts.Inserted++
		case rb == nil:
			want = append(want, fmt.Sprintf("delete %d %s", k, modelRowJSON(a.schema, ra)))
			counts.Deleted++
		case !sameModelRow(ra, rb):
			want = append(want, fmt.Sprintf("update %d %s %s", k, modelRowJSON(a.schema, ra), modelRowJSON(b.schema, rb)))
			counts.Updated++
		}
	}
	if !slices.Equal(got, want) {
		fail(fmt.Sprintf("\n got %v\nwant %v", got, want))
		return
	}
	dc, err := db.DiffCounts(ctx, "m", a.id, b.id)
	if err != nil {
		fail(err.Error())
		return
	}
	if dc.Inserted != counts.Inserted || dc.Updated != counts.Updated || dc.Deleted != counts.Deleted {
		fail(fmt.Sprintf("counts %+v, want %+v", dc, counts))
	}
}

func dumpCells(db *DB, ds string) string {
	cells, err := logicalCells(db, ds)
	if err != nil {
		return err.Error()
	}
	var out string
	for _, c := range cells {
		out += fmt.Sprintf("%x %s@%d %s %s\n", c.row, c.column, c.ts, c.kind, c.value.String())
	}
	return out
}
