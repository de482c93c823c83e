package snapshot

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/storetest"
)

var (
	modelSteps  = flag.Int("model.steps", 2000, "steps of TestModel")
	modelSeed   = flag.Uint64("model.seed", 0, "seed of TestModel; 0 picks one")
	modelTrace  = flag.Bool("model.trace", false, "log every step of TestModel")
	modelFaults = flag.Float64("model.faults", 0.03, "chance that each store write of TestModel fails, lands in part, answers an error after landing or lands late (and a quarter of it that a read fails); 0: none")
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
// rollbacks, tags, pinned readers, restarts of the DB and of the store,
// against an in-memory model, on a storetest.FaultStore that injects
// faults (-model.faults: failed, partial, ambiguous and late writes, and
// failed reads) at random points of every operation. After every step,
// with faults off and outcomes still unknown learned, it compares gets,
// scans, diffs and version lists at every kept version, and pinned
// readers, with the model: nothing a committed version showed ever
// changes, whatever a fault did. An operation that failed may have taken
// effect only where the DB said the outcome was unknown
// (ErrOutcomeUnknown), or as GC's expiry: the model follows the DB there,
// and checks it followed one of the allowed outcomes. Run longer with
// -model.steps=N; replay with -model.seed=S. Unless -model.steps is
// given, it takes 300 steps under -short and 1000 under the race
// detector (make test's pass), which slows each step several times over:
// the seed differs at each run, so the states visited add up over runs.
func TestModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	steps := *modelSteps
	switch {
	case flagGiven("model.steps"):
	case testing.Short():
		steps = 300
	case raceEnabled:
		steps = 1000
	}
	t.Logf("seed %d (replay with -model.seed=%d), %d steps, faults %v", seed, seed, steps, *modelFaults)
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	frng := rand.New(rand.NewPCG(seed, 0xfa))
	ctx := context.Background()
	dir := t.TempDir()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	parts := 1 + rng.IntN(3)
	var fs *storetest.FaultStore
	var db *DB
	dead := map[string]bool{}
	openStore := func() {
		fs = storetest.NewFaultStore(openTestStore(t, dir), storetest.Faults{
			Rand: rand.New(rand.NewPCG(seed, 0x1a7e)), LandRate: 0.05, MaxDelay: 45 * time.Minute, Now: now,
		})
	}
	// An outage fails every call for a while, reads included, so that a
	// write's outcome cannot be read back (ErrOutcomeUnknown).
	outage := 0
	faults := func(on bool) {
		if !on || *modelFaults <= 0 {
			fs.SetDecide(nil)
			return
		}
		random := storetest.RandomFaults(frng, *modelFaults, *modelFaults/4)
		fs.SetDecide(func(c storetest.Call) storetest.Fault {
			if outage > 0 {
				outage--
				return storetest.Fail
			}
			if frng.Float64() < *modelFaults/20 {
				outage = 5 + frng.IntN(40)
			}
			return random(c)
		})
	}
	open := func() {
		// resolveWait: an outage of a few calls outlasts the reads back.
		opts := Options{Partitions: parts, now: now, batchSize: []int{1, 3, 8, 4096}[rng.IntN(4)], deadOwners: dead, resolveWait: 30 * time.Millisecond}
		var err error
		for range 3 { // a process that failed to open, for a fault, tries again
			if db, err = Open(ctx, fs, opts); err == nil || !isInjected(err) {
				break
			}
		}
		if err != nil && isInjected(err) {
			fs.SetDecide(nil)
			db, err = Open(ctx, fs, opts)
		}
		if err != nil {
			t.Fatal(err)
		}
		// settle does the keeper's work between steps, so that a seed
		// replays the same faults.
		db.stopKeeper()
	}
	openStore()
	open()
	m := &model{tags: map[string]int64{}}
	cfg := DatasetConfig{Name: "m", Guard: Guard{MaxShrink: 0.5}}
	type pinned struct {
		r  *Reader
		mv *mVersion
	}
	var pins []pinned
	unpinAll := func() {
		for _, p := range pins {
			p.r.Close()
		}
		pins = nil
	}
	defer unpinAll()
	var faultSteps, unknowns int
	var total storetest.FaultStats // of the FaultStores closed
	addStats := func(st storetest.FaultStats) {
		total.Calls += st.Calls
		total.LateLanded += st.LateLanded
		total.LateDropped += st.LateDropped + st.LatePending
		if total.Injected == nil {
			total.Injected = map[storetest.Fault]int{}
		}
		for f, n := range st.Injected {
			total.Injected[f] += n
		}
	}

	for step := 0; step < steps; step++ {
		outage = 0
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d step %d: %s", seed, step, fmt.Sprintf(format, args...))
		}
		clock = clock.Add(time.Duration(rng.IntN(60)) * time.Minute)
		faults(true)
		injected := 0
		for _, n := range fs.Stats().Injected {
			injected += n
		}
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
			// The draws of the rest of the step, made whatever happens, so
			// that a fault does not change what later steps do.
			dups := make([]int, len(keys))
			dupVals := make([][]Value, len(keys))
			for i := range keys {
				if rng.IntN(20) == 0 {
					dups[i] = 1 + rng.IntN(i+1)
					for _, col := range schema.Columns {
						dupVals[i] = append(dupVals[i], randValue(rng, col.Kind))
					}
				}
			}
			end := rng.IntN(10)
			r, err := db.BeginRun(ctx, c, RunOptions{Schema: schema, Force: force})
			if err != nil {
				if !isInjected(err) {
					fail("begin: %v", err)
				}
				what = "run refused by a fault at begin"
				break
			}
			dupAccepted, putFailed := false, false
			for i, k := range keys {
				vals := make([]Value, len(schema.Columns))
				for i, col := range schema.Columns {
					vals[i] = rows[k][col.Name]
				}
				if err := r.Put(ctx, vals); err != nil {
					if !isInjected(err) {
						fail("put: %v", err)
					}
					putFailed = true
					break
				}
				if dups[i] > 0 { // a key given again: refused, nothing changes
					d := keys[dups[i]-1]
					for j, col := range schema.Columns {
						if col.Name != "id" {
							vals[j] = dupVals[i][j]
						} else {
							vals[j] = Value{Kind: KindInt, Int: d}
						}
					}
					// Refused by Put, or else by Commit (doc.go D5).
					if err := r.Put(ctx, vals); err == nil {
						dupAccepted = true
					} else if isInjected(err) {
						putFailed = true
						break
					} else if !errors.Is(err, ErrBadKey) {
						fail("duplicate key %d: %v", d, err)
					}
				}
			}
			if putFailed {
				what = "run failed by a fault"
				r.Abort(ctx, "model: a fault")
				break
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
			commit := func(vi VersionInfo) {
				got := vi.Stats
				got.BytesWritten, got.Checksum = 0, ""
				if got != want {
					fail("stats %+v, want %+v", got, want)
				}
				mv := &mVersion{id: vi.Version, schema: schema, rows: rows, committed: vi.CommittedAt, stats: vi.Stats}
				if prev != nil && sameModelVersion(prev, mv) && prev.stats.Checksum != vi.Stats.Checksum {
					fail("same content, checksums %s and %s", prev.stats.Checksum, vi.Stats.Checksum)
				}
				if prev != nil && !sameModelVersion(prev, mv) && slices.Equal(columnNames(prev.schema), columnNames(schema)) && prev.stats.Checksum == vi.Stats.Checksum {
					fail("different content, same checksum %s", vi.Stats.Checksum)
				}
				m.versions = append(m.versions, mv)
				m.current = vi.Version
			}
			switch {
			case end == 0:
				what = "run aborted"
				if err := r.Abort(ctx, "model"); err != nil && !isInjected(err) {
					fail("abort: %v", err)
				}
			case end == 1:
				what = "run crashed"
				unpinAll() // readers of the dead process
				db.crash()
				dead[db.owner] = true // as its slots' expiry would tell (W1)
				open()
			default:
				vi, err := r.Commit(ctx)
				switch {
				case err == nil && (dupAccepted || refused):
					fail("commit of a run with a duplicate key (%v) or refused (%v) succeeded", dupAccepted, refused)
				case err == nil:
					what = "run committed"
					commit(vi)
				case errors.Is(err, ErrOutcomeUnknown):
					what = "run with an unknown outcome"
					unknowns++
					faults(false)
					settle(t, db)
					if vi, err := db.VersionInfo(ctx, "m", r.TxnID()); err == nil {
						what = "run committed (outcome learned later)"
						commit(vi)
					} else if !errors.Is(err, ErrVersionNotKept) {
						fail("version info: %v", err)
					}
				case isInjected(err):
					what = "run failed by a fault at commit"
				case dupAccepted:
					what = "run with a duplicate key"
					if !errors.Is(err, ErrBadKey) {
						fail("commit with a duplicate key: %v", err)
					}
				case refused:
					what = "run refused"
					if !errors.Is(err, ErrGuardRefused) {
						fail("commit should be refused, got %v", err)
					}
				default:
					fail("commit: %v", err)
				}
			}
		case op < 55:
			what = "gc"
			c := cfg
			c.Retention = Retention{TTL: time.Duration(1+rng.IntN(4)) * time.Hour, MinVersions: rng.IntN(4)}
			dry := rng.IntN(4) == 0
			if err := db.SetConfig(ctx, c); err != nil && !errors.Is(err, ErrDatasetNotFound) && !isInjected(err) {
				fail("set config: %v", err)
			} else if errors.Is(err, ErrDatasetNotFound) {
				break
			}
			rep, err := db.GC(ctx, "m", dry)
			// The retention in force is what the row holds.
			faults(false)
			settle(t, db)
			info, ierr := db.Dataset(ctx, "m")
			if ierr != nil {
				fail("dataset: %v", ierr)
			}
			want := modelExpired(m, info.Retention, clock)
			switch {
			case err == nil:
				if !slices.Equal(rep.VersionsExpired, want) {
					fail("gc (dry %v) expired %v, want %v; retention %+v; clock %v; tags %v; versions %v", dry, rep.VersionsExpired, want, info.Retention, clock, m.tags, func() (o []string) {
						for _, mv := range m.versions {
							o = append(o, fmt.Sprint(mv.id, "@", mv.committed.Sub(clock)))
						}
						return
					}())
				}
				if !dry {
					m.versions = slices.DeleteFunc(m.versions, func(mv *mVersion) bool { return slices.Contains(want, mv.id) })
				}
			case isInjected(err) || errors.Is(err, ErrOutcomeUnknown):
				what = "gc failed by a fault"
				// Expired, or not: in full (one write of the row).
				vs, err := db.Versions(ctx, "m")
				if err != nil {
					fail("versions: %v", err)
				}
				kept := map[int64]bool{}
				for _, v := range vs {
					kept[v.Version] = true
				}
				var gone []int64
				for _, mv := range m.versions {
					if !kept[mv.id] {
						gone = append(gone, mv.id)
					}
				}
				if len(gone) > 0 && !slices.Equal(gone, want) {
					fail("a failed gc expired %v, want none or %v", gone, want)
				}
				m.versions = slices.DeleteFunc(m.versions, func(mv *mVersion) bool { return !kept[mv.id] })
			default:
				fail("gc: %v", err)
			}
		case op < 62:
			what = "rollback"
			if len(m.versions) == 0 {
				break
			}
			to := m.versions[rng.IntN(len(m.versions))]
			before := m.versions[len(m.versions)-1].id
			vi, err := db.Rollback(ctx, "m", to.id)
			switch {
			case err == nil:
			case isInjected(err) || errors.Is(err, ErrOutcomeUnknown):
				what = "rollback failed by a fault"
				faults(false)
				settle(t, db)
				vs, verr := db.Versions(ctx, "m")
				if verr != nil {
					fail("versions: %v", verr)
				}
				if vs[0].Version <= before {
					break
				}
				// It committed after all: allowed only when the DB said
				// the outcome was unknown.
				if !errors.Is(err, ErrOutcomeUnknown) {
					fail("rollback failed (%v), yet version %d is listed", err, vs[0].Version)
				}
				vi, err = vs[0], nil
			default:
				fail("rollback to %d: %v", to.id, err)
			}
			if err != nil {
				break
			}
			if vi.RestoredFrom != to.id || vi.Stats.Checksum != to.stats.Checksum || vi.Stats.Rows != int64(len(to.rows)) {
				fail("rollback to %d: version %+v, want restored_from %d checksum %s", to.id, vi, to.id, to.stats.Checksum)
			}
			// A new version with the content of the one restored; the
			// versions after it stay (rollback.go).
			m.versions = append(m.versions, &mVersion{id: vi.Version, schema: to.schema, rows: to.rows, committed: vi.CommittedAt, stats: vi.Stats})
			m.current = vi.Version
		case op < 68:
			what = "tag"
			name := "t" + strconv.Itoa(rng.IntN(3))
			tagIt := len(m.versions) > 0 && rng.IntN(3) > 0
			var v int64
			if len(m.versions) > 0 {
				v = m.versions[rng.IntN(len(m.versions))].id
			}
			var err error
			switch {
			case tagIt:
				if err = db.Tag(ctx, "m", name, v); err == nil {
					m.tags[name] = v
				}
			case m.tags[name] != 0:
				if err = db.Untag(ctx, "m", name); err == nil {
					delete(m.tags, name)
				}
			}
			if err != nil {
				if !isInjected(err) && !errors.Is(err, ErrOutcomeUnknown) {
					fail("tag: %v", err)
				}
				what = "tag failed by a fault"
				faults(false)
				settle(t, db)
				// The tag is as it was, or as asked: the model follows.
				got, ok := dbTag(t, db, name)
				old, had := m.tags[name]
				switch {
				case ok == had && got == old:
				case tagIt && ok && got == v:
					m.tags[name] = v
				case !tagIt && !ok:
					delete(m.tags, name)
				default:
					fail("after a failed tag: %s is %d (%v), was %d (%v)", name, got, ok, old, had)
				}
			}
		case op < 76:
			what = "pin"
			if len(m.versions) > 0 && len(pins) < 3 {
				mv := m.versions[rng.IntN(len(m.versions))]
				r, err := db.Reader(ctx, "m", At{Version: mv.id})
				if err != nil {
					if !isInjected(err) {
						fail("reader: %v", err)
					}
					break
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
		case op < 87:
			what = "reopen"
			unpinAll()
			if err := db.Close(); err != nil && !isInjected(err) {
				fail("close: %v", err)
			}
			open()
		case op < 88:
			what = "store restart"
			unpinAll()
			faults(false)
			db.Close()
			addStats(fs.Stats())
			fs.Close() // late writes die with it
			openStore()
			open()
			injected = 0
		default:
			what = "reads only"
		}
		faults(false)
		settle(t, db)
		after := 0
		for _, n := range fs.Stats().Injected {
			after += n
		}
		if after != injected {
			faultSteps++
		}

		if *modelTrace {
			t.Logf("step %d: %s; current %d kept %d", step, what, m.current, len(m.versions))
		}
		// Check everything against the model, with faults off (late writes
		// may still land meanwhile).
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
		for _, mv := range m.versions {
			checkVersion(t, ctx, db, nil, mv, rng, func(msg string) { fail("after %s: version %d: %s", what, mv.id, msg) })
		}
		for _, p := range pins {
			checkVersion(t, ctx, db, p.r, p.mv, rng, func(msg string) { fail("after %s: pinned version %d: %s", what, p.mv.id, msg) })
		}
		for tag, v := range m.tags {
			if got, ok := dbTag(t, db, tag); !ok || got != v {
				fail("after %s: tag %s names %d (%v), want %d", what, tag, got, ok, v)
			}
		}
		a, b := m.versions[rng.IntN(len(m.versions))], m.versions[rng.IntN(len(m.versions))]
		checkDiff(ctx, db, a, b, func(msg string) { fail("after %s: diff %d..%d: %s", what, a.id, b.id, msg) })
		if vi, err := db.VersionInfo(ctx, "m", m.current); err != nil || !vi.Current {
			fail("after %s: current %d: %+v %v", what, m.current, vi, err)
		}
	}
	addStats(fs.Stats())
	t.Logf("seed %d: %d steps, %d with a fault, %d store calls, faults injected %v, late writes landed %d dropped %d; %d outcomes learned later; 0 divergences",
		seed, steps, faultSteps, total.Calls, total.Injected, total.LateLanded, total.LateDropped, unknowns)
	// Finally, once every late write landed or can no longer land, GC with
	// retention 1 and no readers leaves exactly the cells of the current
	// version and no invalid transaction.
	unpinAll()
	faults(false)
	fs.LandLate(ctx)
	if len(m.versions) > 0 {
		for tg := range m.tags {
			db.Untag(ctx, "m", tg)
		}
		if err := db.SetConfig(ctx, DatasetConfig{Name: "m", Retention: Retention{TTL: time.Nanosecond, MinVersions: 1}}); err != nil {
			t.Fatal(err)
		}
		// The first GC takes the writer slot, which makes a dead run's
		// transaction invalid; past the grace, the next ones prune it
		// (the last what the one before found still with cells).
		for _, wait := range []time.Duration{0, db.grace + time.Hour, 0} {
			clock = clock.Add(wait)
			if _, err := db.GC(ctx, "m", false); err != nil {
				t.Fatal(err)
			}
		}
		if inv := invalidIDs(db, "m"); len(inv) != 0 {
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

// isInjected reports whether err comes from a fault the test injected
// (storetest.ErrInjected), or from a write whose outcome the DB could not
// learn because of one (ErrOutcomeUnknown).
// flagGiven reports whether the command line set the flag name.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func isInjected(err error) bool {
	return errors.Is(err, storetest.ErrInjected) || errors.Is(err, store.ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown)
}

// settle makes the DB learn every outcome still unknown (what the keeper
// does in the background), with faults off.
func settle(t *testing.T, db *DB) {
	t.Helper()
	for _, ds := range db.allDatasets() {
		if err := db.learnPending(context.Background(), ds); err != nil {
			t.Fatalf("learning an outcome with no fault: %v", err)
		}
	}
}

// dbTag returns the version tag names in db, if any.
func dbTag(t *testing.T, db *DB, tag string) (int64, bool) {
	t.Helper()
	r, err := db.Reader(context.Background(), "m", At{Tag: tag})
	if errors.Is(err, ErrTagNotFound) {
		return 0, false
	}
	if err != nil {
		t.Fatalf("tag %s: %v", tag, err)
	}
	defer r.Close()
	return r.Version().Version, true
}

func sortedKeys(rows map[int64]map[string]Value) []int64 {
	keys := make([]int64, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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
		fail(fmt.Sprintf("scan\n got %v\nwant %v\ninvalid %v\n%s", got, want, invalidIDs(db, "m"), dumpCells(db, "m")))
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
