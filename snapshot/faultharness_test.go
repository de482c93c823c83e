package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/storetest"
)

// faultHarness runs a DB on a storetest.FaultStore over the test backend,
// with a fake clock, and remembers what every committed version held, so
// that tests of faults check that no fault shows a partial state: every
// listed version reads as it did when it was committed, in this process
// and after a simulated crash.
type faultHarness struct {
	t     *testing.T
	ctx   context.Context
	fs    *storetest.FaultStore
	clock time.Time
	opts  Options
	db    *DB
	// versions holds, per dataset, the rows (as JSON, in key order) of each
	// version committed; maybe those of runs whose Commit returned an
	// error that leaves the outcome unknown (ErrOutcomeUnknown), which may
	// have committed.
	versions, maybe map[string]map[int64][]string
}

func newFaultHarness(t *testing.T, seed uint64) *faultHarness {
	h := &faultHarness{t: t, ctx: context.Background(), clock: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC),
		versions: map[string]map[int64][]string{}, maybe: map[string]map[int64][]string{}}
	h.fs = storetest.NewFaultStore(newTestStore(t), storetest.Faults{
		Rand: rand.New(rand.NewPCG(seed, 7)), MaxDelay: time.Hour, Now: h.now,
	})
	h.opts = Options{now: h.now, batchSize: 2}
	h.db = h.open(h.opts)
	return h
}

func (h *faultHarness) now() time.Time { return h.clock }

// open opens another DB on the harness's store, closed when the test ends.
func (h *faultHarness) open(opts Options) *DB {
	h.t.Helper()
	db, err := Open(h.ctx, h.fs, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { db.Close() })
	return db
}

// crash abandons the DB as a killed process would (nothing more is
// written by it), lets an hour pass, and opens a new one on the same
// store.
func (h *faultHarness) crash() {
	h.t.Helper()
	crashDB(h.db)
	h.clock = h.clock.Add(time.Hour)
	h.db = h.open(h.opts)
}

// decide makes every call for which pick returns a fault get it.
func (h *faultHarness) decide(pick func(c storetest.Call) storetest.Fault) { h.fs.SetDecide(pick) }

// metaWrites returns a Decide that gives the k-th write (from 1) of the
// metadata table from now on the fault f, and lets the others through.
func metaWrites(k int, f storetest.Fault) func(storetest.Call) storetest.Fault {
	n := 0
	return func(c storetest.Call) storetest.Fault {
		if !c.Op.IsWrite() || c.Table != "meta" {
			return storetest.NoFault
		}
		if n++; n == k {
			return f
		}
		return storetest.NoFault
	}
}

// src builds source rows of testSchema from id -> name.
func src(rows map[int64]string) [][]Value {
	var out [][]Value
	for _, id := range slices.Sorted(maps.Keys(rows)) {
		out = append(out, []Value{iv(id), sv(rows[id])})
	}
	return out
}

// rowsJSON is what a scan of rows returns, in key order.
func rowsJSON(rows map[int64]string) []string {
	var out []string
	for _, r := range src(rows) {
		b, _ := Row{Columns: []string{"id", "name"}, Values: r}.MarshalJSON()
		out = append(out, string(b))
	}
	return out
}

// begin begins a run of ds with testSchema, no shrink guard, empty runs
// allowed, and puts rows in the order given (nil: key order).
func (h *faultHarness) begin(db *DB, ds string, rows map[int64]string, order []int64) (*Run, error) {
	r, err := db.BeginRun(h.ctx, DatasetConfig{Name: ds, Guard: Guard{MaxShrink: 1, AllowEmpty: true}}, RunOptions{Schema: testSchema})
	if err != nil {
		return nil, err
	}
	if order == nil {
		order = slices.Sorted(maps.Keys(rows))
	}
	for _, id := range order {
		if err := r.Put(h.ctx, []Value{iv(id), sv(rows[id])}); err != nil {
			r.Abort(h.ctx, "put failed")
			return nil, err
		}
	}
	return r, nil
}

// commit commits r and, when it succeeds, records its rows.
func (h *faultHarness) commit(r *Run, rows map[int64]string) (VersionInfo, error) {
	vi, err := r.Commit(h.ctx)
	if err == nil {
		h.record(vi.Dataset, vi.Version, rows)
	} else if outcomeUnknown(err) {
		if h.maybe[r.ds.name] == nil {
			h.maybe[r.ds.name] = map[int64][]string{}
		}
		h.maybe[r.ds.name][r.TxnID()] = rowsJSON(rows)
	}
	return vi, err
}

func (h *faultHarness) record(ds string, v int64, rows map[int64]string) {
	if h.versions[ds] == nil {
		h.versions[ds] = map[int64][]string{}
	}
	h.versions[ds][v] = rowsJSON(rows)
}

// run begins, puts and commits rows, and fails the test on any error.
func (h *faultHarness) run(ds string, rows map[int64]string) VersionInfo {
	h.t.Helper()
	r, err := h.begin(h.db, ds, rows, nil)
	if err != nil {
		h.t.Fatalf("run of %s: %v", ds, err)
	}
	vi, err := h.commit(r, rows)
	if err != nil {
		h.t.Fatalf("run of %s: %v", ds, err)
	}
	return vi
}

// read returns the rows of ds at at.
func (h *faultHarness) read(db *DB, ds string, at At) ([]string, VersionInfo, error) {
	r, err := db.Reader(h.ctx, ds, at)
	if err != nil {
		return nil, VersionInfo{}, err
	}
	defer r.Close()
	it, err := r.Scan(h.ctx, ScanOptions{})
	if err != nil {
		return nil, VersionInfo{}, err
	}
	var out []string
	for it.Next() {
		b, _ := it.Row().MarshalJSON()
		out = append(out, string(b))
	}
	return out, r.Version(), it.Close()
}

// checkVersions fails the test unless every version of ds that db lists
// reads as it was committed, its stats count its rows, the current one is
// listed and readable, and every tag reads as its version.
func (h *faultHarness) checkVersions(db *DB, ds, when string) {
	h.t.Helper()
	info, err := db.Dataset(h.ctx, ds)
	if errors.Is(err, ErrDatasetNotFound) {
		return
	}
	if err != nil {
		h.t.Fatalf("%s: dataset %s: %v", when, ds, err)
	}
	if info.Current != 0 && info.CurrentInfo == nil {
		h.t.Fatalf("%s: %s: current version %d is not a kept version", when, ds, info.Current)
	}
	vs, err := db.Versions(h.ctx, ds)
	if err != nil {
		h.t.Fatalf("%s: versions of %s: %v", when, ds, err)
	}
	for _, vi := range vs {
		got, _, err := h.read(db, ds, At{Version: vi.Version})
		if err != nil {
			h.t.Fatalf("%s: %s version %d (listed): %v", when, ds, vi.Version, err)
		}
		want, ok := h.versions[ds][vi.Version]
		if !ok {
			if want, ok = h.maybe[ds][vi.Version]; !ok {
				h.t.Fatalf("%s: %s lists version %d, whose run did not commit", when, ds, vi.Version)
			}
			h.versions[ds][vi.Version] = want // it did
		}
		if !slices.Equal(got, want) {
			h.t.Fatalf("%s: %s version %d reads\n %v\nwant %v", when, ds, vi.Version, got, want)
		}
		if vi.Stats.Rows != int64(len(want)) {
			h.t.Fatalf("%s: %s version %d has the stats of another run: %d rows, holds %d", when, ds, vi.Version, vi.Stats.Rows, len(want))
		}
		for _, tag := range vi.Tags {
			got, tv, err := h.read(db, ds, At{Tag: tag})
			if err != nil || tv.Version != vi.Version || !slices.Equal(got, want) {
				h.t.Fatalf("%s: %s tag %s: version %d, %v", when, ds, tag, tv.Version, err)
			}
		}
	}
	if info.Current != 0 {
		got, cv, err := h.read(db, ds, At{})
		if err != nil {
			h.t.Fatalf("%s: %s current version %d: %v", when, ds, info.Current, err)
		}
		if cv.Version != info.Current || !slices.Equal(got, h.versions[ds][info.Current]) {
			h.t.Fatalf("%s: %s current version %d reads %v", when, ds, cv.Version, got)
		}
	}
}

// checkTag fails the test unless the tag reads as the version it names,
// or is gone.
func (h *faultHarness) checkTag(db *DB, ds, tag, when string) {
	h.t.Helper()
	got, vi, err := h.read(db, ds, At{Tag: tag})
	if errors.Is(err, ErrTagNotFound) {
		return
	}
	if err != nil {
		h.t.Fatalf("%s: %s tag %s: %v", when, ds, tag, err)
	}
	if want := h.versions[ds][vi.Version]; !slices.Equal(got, want) {
		h.t.Fatalf("%s: %s tag %s (version %d) reads %v, want %v", when, ds, tag, vi.Version, got, want)
	}
}

// isDatasetRow reports whether a call touches the metadata row of ds.
func isDatasetRow(c storetest.Call, ds string) bool {
	if c.Table != "meta" {
		return false
	}
	for _, r := range c.Rows {
		if bytes.Equal(r, datasetKey(ds)) {
			return true
		}
	}
	return false
}

func hasText(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

var _ = fmt.Sprint
var _ store.Store
