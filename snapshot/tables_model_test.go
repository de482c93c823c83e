package snapshot

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store/storetest"
)

var (
	tablesModelSteps  = flag.Int("tables.steps", 120, "steps of TestTablesModel")
	tablesModelSeed   = flag.Uint64("tables.seed", 0, "seed of TestTablesModel; 0 picks one")
	tablesModelFaults = flag.Float64("tables.faults", 0.03, "chance that each store write of TestTablesModel fails, lands in part, answers an error after landing or lands late (and a quarter of it that a read fails); 0: none")
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
	// prev is the version current when this one was committed; nil for
	// the first.
	prev *tmVersion
}

var tmPool = []string{"a", "s.b", "c", "d"}

// TestTablesModel runs random runs of named tables (tables added, dropped
// and added again, schema changes, failed tables, verified runs, runs
// killed before their commit), rollbacks, GC, restarts of the DB and of
// the store against an in-memory model, on a storetest.FaultStore that
// injects faults (-tables.faults: failed, partial, ambiguous and late
// writes, failed reads, outages) as TestModel does: a run a fault failed
// leaves nothing visible, and one whose outcome was unknown either
// committed whole or not at all. Three clean runs in eight have the
// conditional write of their commit fail for certain (an error, the
// previous version current), or fail or land with the row unreadable
// after it (ErrOutcomeUnknown; when it failed, the previous version
// current until the outcome is learned). After every step, with faults off and
// outcomes learned, every kept version lists the model's tables, each
// reading as the model's rows, the current version is the model's, and
// DiffTables between kept versions counts what the model does.
func TestTablesModel(t *testing.T) {
	ctx := context.Background()
	seed := *tablesModelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-tables.seed), faults %v", seed, *tablesModelFaults)
	rng := rand.New(rand.NewPCG(seed, 7))
	frng := rand.New(rand.NewPCG(seed, 0xfa))
	var clock atomic.Int64
	clock.Store(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	dir := t.TempDir()
	var fs *storetest.FaultStore
	var db *DB
	dead := map[string]bool{}
	openStore := func() {
		fs = storetest.NewFaultStore(openTestStore(t, dir), storetest.Faults{
			Rand: rand.New(rand.NewPCG(seed, 0x1a7e)), LandRate: 0.05, MaxDelay: 45 * time.Minute, Now: now,
		})
	}
	// faults turns the faults on or off; an outage fails every call for a
	// while, reads included, so that a write's outcome cannot be read back
	// (ErrOutcomeUnknown).
	outage := 0
	faults := func(on bool) {
		if !on || *tablesModelFaults <= 0 {
			fs.SetDecide(nil)
			return
		}
		random := storetest.RandomFaults(frng, *tablesModelFaults, *tablesModelFaults/4)
		fs.SetDecide(func(c storetest.Call) storetest.Fault {
			if outage > 0 {
				outage--
				return storetest.Fail
			}
			if frng.Float64() < *tablesModelFaults/20 {
				outage = 5 + frng.IntN(40)
			}
			return random(c)
		})
	}
	// commitFault, when set for a run, fails its commit's conditional
	// write of the dataset's row (commit:recorded arms it; faults off
	// otherwise): commitFailed every attempt, so that the commit fails
	// for certain; commitLost once and commitLanded by landing it, the
	// reads of the row then failing until the commit returns, so that
	// its outcome is unknown.
	var cf struct {
		sync.Mutex
		kind  tmCommitFault
		armed bool
		left  int // attempts of commitFailed still to fail
	}
	row := datasetKey("m")
	commitHook := func(point string, _ int64) {
		cf.Lock()
		defer cf.Unlock()
		if point == "commit:recorded" && cf.kind != commitOK {
			cf.armed, cf.left = true, maxRowConflicts+1
		}
	}
	commitFaults := func(c storetest.Call) storetest.Fault {
		cf.Lock()
		defer cf.Unlock()
		if !cf.armed || len(c.Rows) != 1 || !bytes.Equal(c.Rows[0], row) {
			return storetest.NoFault
		}
		switch {
		case c.Op == storetest.OpCheckAndMutate && cf.kind == commitFailed:
			if cf.left--; cf.left == 0 {
				cf.armed = false // the run's abort writes the row
			}
			return storetest.Fail
		case c.Op == storetest.OpCheckAndMutate && cf.left > 0:
			cf.left = 0
			if cf.kind == commitLanded {
				return storetest.Ambiguous
			}
			return storetest.Fail
		case c.Op == storetest.OpGet && cf.kind != commitFailed && cf.left == 0:
			return storetest.Fail
		}
		return storetest.NoFault
	}
	open := func() {
		opts := Options{now: now, Partitions: 2, deadOwners: dead, resolveWait: 30 * time.Millisecond, hook: commitHook}
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
	defer func() { db.Close() }()
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
	// duplicate key; with crash, the DB is killed before the commit.
	put := func(tables map[string]*tmTable, opts TablesRunOptions, bad string, crash bool) (VersionInfo, *TablesRun, error) {
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
		if crash {
			db.crash()
			dead[db.owner] = true // as its slots' expiry would tell (W1)
			open()
			return VersionInfo{}, tr, errKilled
		}
		vi, err := tr.Commit(ctx)
		return vi, tr, err
	}
	// learned returns the version of a run whose commit had an unknown
	// outcome, learned with faults off, if it committed.
	learned := func(step int, tr *TablesRun) (VersionInfo, bool) {
		faults(false)
		settle(t, db)
		vi, err := db.VersionInfo(ctx, "m", tr.TxnID())
		if errors.Is(err, ErrVersionNotKept) {
			return VersionInfo{}, false
		}
		if err != nil {
			t.Fatalf("step %d: version info of txn %d: %v", step, tr.TxnID(), err)
		}
		return vi, true
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
		// Each version's stats count the rows of the version before that
		// it lacks as deleted, those of a table it dropped too, which it
		// names.
		for _, mv := range kept {
			if mv.prev == nil {
				continue
			}
			vi, err := db.VersionInfo(ctx, "m", mv.id)
			if err != nil {
				t.Fatal(err)
			}
			var deleted int64
			var dropped []DroppedTable
			for _, n := range slices.Sorted(maps.Keys(mv.prev.tables)) {
				f, g := mv.prev.tables[n], mv.tables[n]
				if g == nil {
					deleted += int64(len(f.rows))
					dropped = append(dropped, DroppedTable{Name: n, Rows: int64(len(f.rows))})
					continue
				}
				for k := range f.rows {
					if _, ok := g.rows[k]; !ok {
						deleted++
					}
				}
			}
			if vi.Stats.Deleted != deleted || !slices.Equal(vi.DroppedTables, dropped) {
				t.Fatalf("step %d (%s): version %d after %d: deleted %d, dropped %+v, want %d, %+v", step, what, mv.id, mv.prev.id, vi.Stats.Deleted, vi.DroppedTables, deleted, dropped)
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
	var faultSteps, unknowns, killed, cleanRuns int
	commitFaulted := map[tmCommitFault]int{}
	for step := 0; step < *tablesModelSteps; step++ {
		clock.Add(int64(time.Minute))
		outage = 0
		faults(true)
		injected := injectedCount(fs)
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
			crash := rng.IntN(10) == 0
			what = "run"
			// Three clean runs in eight have their commit write fail.
			kind := commitOK
			if bad == "" && !crash && (!missing || drop) {
				cleanRuns++
				kind = []tmCommitFault{commitOK, commitFailed, commitOK, commitLost, commitOK, commitOK, commitLanded, commitOK}[cleanRuns%8]
			}
			if kind != commitOK {
				fs.SetDecide(commitFaults)
				commitFaulted[kind]++
			}
			cf.Lock()
			cf.kind = kind
			cf.Unlock()
			vi, tr, err := put(tables, TablesRunOptions{DropMissing: drop}, bad, crash)
			cf.Lock()
			cf.kind, cf.armed = commitOK, false
			cf.Unlock()
			if kind != commitOK {
				what = "run whose commit write " + kind.String()
				if err := commitFaultSeen(ctx, db, kind, err, current()); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			switch {
			case tr == nil && isInjected(err):
				what = "run refused by a fault at begin"
			case errors.Is(err, ErrOutcomeUnknown):
				unknowns++
				what = "run with an unknown outcome"
				if vi, ok := learned(step, tr); ok {
					if missing && !drop || bad != "" {
						t.Fatalf("step %d: a run lacking a table (%v) or with a duplicate key (%v) committed", step, missing && !drop, bad != "")
					}
					what = "run committed (outcome learned later)"
					kept = append(kept, &tmVersion{id: vi.Version, tables: tables, prev: lastOf(kept)})
				}
			case isInjected(err):
				what = "run failed by a fault"
			case errors.Is(err, errKilled):
				killed++
				what = "run killed"
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
				kept = append(kept, &tmVersion{id: vi.Version, tables: tables, prev: lastOf(kept)})
			}
		case op < 13: // an unchanged run
			cur := current()
			vi, tr, err := put(cur.tables, TablesRunOptions{VerifyUnchanged: true}, "", false)
			what = "verified"
			switch {
			case isInjected(err):
				what = "verified run failed by a fault"
				if tr != nil && errors.Is(err, ErrOutcomeUnknown) {
					if vi, ok := learned(step, tr); ok {
						t.Fatalf("step %d: an unchanged run committed version %d", step, vi.Version)
					}
				}
			case err != nil || !tr.Verified() || vi.Version != cur.id:
				t.Fatalf("step %d: an unchanged run: %+v %v", step, vi, err)
			}
		case op < 15: // a rollback
			target := kept[rng.IntN(len(kept))]
			before := current().id
			vi, err := db.Rollback(ctx, "m", target.id)
			what = "rollback"
			switch {
			case err == nil:
			case isInjected(err):
				what = "rollback failed by a fault"
				faults(false)
				settle(t, db)
				vs, verr := db.Versions(ctx, "m")
				if verr != nil {
					t.Fatalf("step %d: versions: %v", step, verr)
				}
				if vs[0].Version <= before {
					break
				}
				// It committed after all: allowed only when the DB said
				// the outcome was unknown.
				if !errors.Is(err, ErrOutcomeUnknown) {
					t.Fatalf("step %d: rollback failed (%v), yet version %d is listed", step, err, vs[0].Version)
				}
				vi, err = vs[0], nil
			default:
				t.Fatalf("step %d: rollback to %d: %v", step, target.id, err)
			}
			if err != nil {
				break
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
			kept = append(kept, &tmVersion{id: vi.Version, tables: tables, prev: lastOf(kept)})
		case op < 18: // GC: the newest 3 versions stay
			what = "gc"
			_, err := db.GC(ctx, "m", false)
			switch {
			case err == nil:
				kept = kept[max(0, len(kept)-3):]
			case isInjected(err):
				what = "gc failed by a fault"
				// Expired, or not: in full (one write of the row).
				faults(false)
				settle(t, db)
				vs, err := db.Versions(ctx, "m")
				if err != nil {
					t.Fatalf("step %d: versions: %v", step, err)
				}
				listed := map[int64]bool{}
				for _, v := range vs {
					listed[v.Version] = true
				}
				gone := slices.DeleteFunc(slices.Clone(kept), func(mv *tmVersion) bool { return listed[mv.id] })
				if len(gone) > 0 && len(gone) != max(0, len(kept)-3) {
					t.Fatalf("step %d: a failed gc expired %d versions of %d, want none or all but 3", step, len(gone), len(kept))
				}
				kept = slices.DeleteFunc(kept, func(mv *tmVersion) bool { return !listed[mv.id] })
			default:
				t.Fatalf("step %d: %v", step, err)
			}
		case op < 19: // a restart of the DB
			if err := db.Close(); err != nil && !isInjected(err) {
				t.Fatalf("step %d: close: %v", step, err)
			}
			open()
			what = "restart"
		default: // a restart of the store: late writes die with it
			faults(false)
			db.Close()
			fs.Close()
			openStore()
			open()
			injected = 0
			what = "store restart"
		}
		faults(false)
		settle(t, db)
		if injectedCount(fs) != injected {
			faultSteps++
		}
		check(step, what)
	}
	t.Logf("seed %d: %d steps, %d with a fault, %d runs killed, %d outcomes learned later, commit writes failed %d, lost %d, landed unacknowledged %d",
		seed, *tablesModelSteps, faultSteps, killed, unknowns, commitFaulted[commitFailed], commitFaulted[commitLost], commitFaulted[commitLanded])
	// Once every late write landed, GC with retention 1 leaves no invalid
	// transaction: past the grace, the runs failed, killed and aborted
	// are pruned.
	fs.LandLate(ctx)
	if len(kept) > 0 {
		if err := db.SetConfig(ctx, DatasetConfig{Name: "m", Retention: Retention{TTL: time.Nanosecond, MinVersions: 1}}); err != nil {
			t.Fatal(err)
		}
		for _, wait := range []time.Duration{0, db.grace + time.Hour, 0} {
			clock.Add(int64(wait))
			if _, err := db.GC(ctx, "m", false); err != nil {
				t.Fatal(err)
			}
		}
		if inv := invalidIDs(db, "m"); len(inv) != 0 {
			t.Fatalf("seed %d: invalid txns left after GC: %v", seed, inv)
		}
		kept = kept[len(kept)-1:]
		check(*tablesModelSteps, "final gc")
	}
}

// tmCommitFault is what TestTablesModel does to the conditional write of
// a run's commit.
type tmCommitFault int

const (
	commitOK     tmCommitFault = iota
	commitFailed               // every attempt fails, the row read back each time: unknown all the same, as the last may land late
	commitLost                 // fails, not applied, and the row cannot be read back
	commitLanded               // applied, its answer lost, and the row cannot be read back
)

func (k tmCommitFault) String() string {
	return [...]string{"succeeded", "failed", "was lost", "landed unacknowledged"}[k]
}

// commitFaultSeen checks what a run whose commit write had fault kind
// gave (err), and that the dataset's current version is still prev's
// (nil: none) where the commit did not land: every kind is
// ErrOutcomeUnknown, since a write that failed may still land
// (store.S9) until the keeper fences it.
func commitFaultSeen(ctx context.Context, db *DB, kind tmCommitFault, err error, prev *tmVersion) error {
	switch {
	case err == nil:
		return fmt.Errorf("a run whose commit write %s committed", kind)
	case !errors.Is(err, ErrOutcomeUnknown):
		return fmt.Errorf("a run whose commit write %s: %v, want ErrOutcomeUnknown", kind, err)
	case kind == commitLanded:
		return nil // the next read may find it committed
	}
	var want int64
	if prev != nil {
		want = prev.id
	}
	info, derr := db.Dataset(ctx, "m")
	if errors.Is(derr, ErrDatasetNotFound) && want == 0 {
		return nil
	}
	if derr != nil || info.Current != want {
		return fmt.Errorf("after a run whose commit write %s (%v): current %d (%v), want the previous version %d", kind, err, info.Current, derr, want)
	}
	return nil
}

// errKilled is what TestTablesModel's put returns for a run whose DB it
// killed before the commit.
var errKilled = errors.New("killed before the commit")

// injectedCount returns how many faults fs injected.
func injectedCount(fs *storetest.FaultStore) int {
	n := 0
	for _, k := range fs.Stats().Injected {
		n += k
	}
	return n
}

// lastOf returns the last of vs, nil when there is none.
func lastOf(vs []*tmVersion) *tmVersion {
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1]
}
