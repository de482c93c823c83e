package snapshot

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
)

// configTables returns the numbers of the tables the row of dataset name
// configures, as db last read it, by name.
func configTables(db *DB, name string) map[string][]int {
	db.mu.Lock()
	ds := db.datasets[name]
	db.mu.Unlock()
	ds.mu.Lock()
	defer ds.mu.Unlock()
	out := map[string][]int{}
	for _, tc := range ds.st.Config.Tables {
		out[tc.Name] = append(out[tc.Name], tc.Num)
	}
	return out
}

// scratchCells counts the cells of every scratch partition of table ti of
// the test dataset.
func scratchCells(t *testing.T, st store.Store, ti TableInfo) int {
	t.Helper()
	n := 0
	for p := 0; p < ti.Partitions; p++ {
		it, err := st.Scan(context.Background(), tableScratchTable(tablesConfig.Name, ti.Number, p), store.ScanOptions{})
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

// TestTablesGCForgetsDroppedTable (G9): the entry of a dropped table
// stays while a tagged version holds it and while a Reader reads it; the
// GC after the last of them removes it with its scratch rows, in the
// write that frees the slot, without losing a tag written by another
// process at the same moment; the table added again gets a new number,
// and another process reads the dataset as before.
func TestTablesGCForgetsDroppedTable(t *testing.T) {
	ctx := context.Background()
	var clock atomic.Int64
	clock.Store(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	// While armed, the first write of the row after a GC batch (the
	// write that ends the GC) lets another process tag first.
	var armed, batched atomic.Bool
	var tagged atomic.Int64
	var other *DB
	hook := func(point string, n int64) {
		switch {
		case point == "gc:batch":
			batched.Store(true)
		case point == "row:write" && armed.Load() && batched.Load():
			armed.Store(false)
			if err := other.Tag(ctx, "shop", "meanwhile", tagged.Load()); err != nil {
				t.Errorf("tagging from another process: %v", err)
			}
		}
	}
	dir := t.TempDir()
	st := openTestStore(t, dir)
	db := openTestDB(t, st, Options{now: now, hook: hook})
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
	gc := func() GCReport {
		t.Helper()
		rep, err := db.GC(ctx, "shop", false)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	s := shop(1)
	v1 := run(s, TablesRunOptions{})
	v2 := run([]shopTable{s[0], s[2]}, TablesRunOptions{DropMissing: true})
	lines, _ := v1.Table("public.order_lines")
	other = openTestDB(t, openSecondStore(t, dir, st), Options{now: now})
	if err := db.Tag(ctx, "shop", "first", v1.Version); err != nil {
		t.Fatal(err)
	}
	// A scratch row a run of v1 left behind.
	b := &store.Batch{Table: tableScratchTable("shop", lines.Number, 1)}
	b.Put(scratchRow(nil, v1.Version, []byte("k")), be64(1), v1.Version, nil)
	if err := st.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{"public.orders": {1}, "public.order_lines": {lines.Number}, "customers": {3}}
	if got := configTables(db, "shop"); !mapsEqual(got, want) {
		t.Fatalf("tables configured: %v, want %v", got, want)
	}

	// Two hours later: the tagged v1 keeps the lines' entry and cells.
	clock.Add(int64(2 * time.Hour))
	gc()
	if got := configTables(db, "shop"); !mapsEqual(got, want) || tableCells(t, st, lines) == 0 {
		t.Fatalf("with v1 tagged: tables %v, %d cells of the lines", got, tableCells(t, st, lines))
	}
	// Untagged, v1 expires (or stays kept, pinned in the store by the
	// Reader, G8); a Reader of its lines keeps their entry and cells.
	r, err := db.TableReader(ctx, "shop", "public.order_lines", At{Version: v1.Version})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Untag(ctx, "shop", "first"); err != nil {
		t.Fatal(err)
	}
	expired := []int64{v1.Version}
	if db.usesPins() {
		expired = []int64{}
	}
	if rep := gc(); !slices.Equal(rep.VersionsExpired, expired) {
		t.Fatalf("GC expired %v, want %v", rep.VersionsExpired, expired)
	}
	if got := configTables(db, "shop"); !mapsEqual(got, want) {
		t.Fatalf("with a Reader of the lines open: tables %v", got)
	}
	if got, exp := scanJSON(t, r), sortedJSON(s[1]); !slices.Equal(got, exp) {
		t.Fatalf("the open Reader reads %d lines, want %d", len(got), len(exp))
	}
	r.Close()

	// The Reader closed: the GC after it forgets the lines, and another
	// process tagging v2 meanwhile keeps its tag.
	tagged.Store(v2.Version)
	armed.Store(true)
	batched.Store(false)
	gc()
	if armed.Load() {
		t.Fatal("the last GC wrote no row after deleting cells: the other process never tagged")
	}
	delete(want, "public.order_lines")
	if got := configTables(db, "shop"); !mapsEqual(got, want) {
		t.Fatalf("after the last GC: tables %v, want %v", got, want)
	}
	if n, sn := tableCells(t, st, lines), scratchCells(t, st, lines); n != 0 || sn != 0 {
		t.Fatalf("after the last GC: %d cells and %d scratch cells of the lines", n, sn)
	}
	if vi, err := db.VersionInfo(ctx, "shop", v2.Version); err != nil || !slices.Equal(vi.Tags, []string{"meanwhile"}) {
		t.Fatalf("the tag written during GC: %v %v", vi.Tags, err)
	}
	checkShop(t, db, v2.Version, []shopTable{s[0], s[2]})

	// Added again: a number never given before, only its new rows.
	s3 := shop(3)
	v3 := run(s3, TablesRunOptions{})
	l3, _ := v3.Table("public.order_lines")
	if l3.Number <= 3 || l3.Stats.Inserted != int64(len(s3[1].rows)) || l3.Stats.Deleted != 0 {
		t.Fatalf("lines added again: %+v", l3)
	}
	checkShop(t, db, v3.Version, s3)
	checkShop(t, db, v2.Version, []shopTable{s[0], s[2]})
	// A process opened now reads the row as it is.
	again := openTestDB(t, openSecondStore(t, dir, st), Options{now: now})
	want["public.order_lines"] = []int{l3.Number}
	if got := configTables(again, "shop"); !mapsEqual(got, want) {
		t.Fatalf("reopened: tables %v, want %v", got, want)
	}
	checkShop(t, again, v3.Version, s3)
}

// TestTablesGCKeepsEntryOfFailedRun (G9): an invalid transaction GC does
// not prune may still write a table's cells, so GC forgets no table while
// one is left; once pruned, the dropped table goes.
func TestTablesGCKeepsEntryOfFailedRun(t *testing.T) {
	ctx := context.Background()
	var clock atomic.Int64
	clock.Store(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	st := newTestStore(t)
	db := openTestDB(t, st, Options{now: func() time.Time { return time.Unix(0, clock.Load()).UTC() }, pruneGrace: time.Hour})
	cfg := tablesConfig
	cfg.Retention = Retention{TTL: time.Hour, MinVersions: 1}
	s := shop(1)
	v1, _, err := runTables(t, db, cfg, TablesRunOptions{}, s)
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := v1.Table("public.order_lines")
	if _, _, err := runTables(t, db, cfg, TablesRunOptions{DropMissing: true}, []shopTable{s[0], s[2]}); err != nil {
		t.Fatal(err)
	}
	// Two hours later v1 expires, and a run fails: its id stays invalid
	// for the grace.
	clock.Add(int64(2 * time.Hour))
	bad := []shopTable{s[0], s[2]}
	bad[1].rows = append(slices.Clone(bad[1].rows), bad[1].rows[0])
	if _, _, err := runTables(t, db, cfg, TablesRunOptions{}, bad); !errors.Is(err, ErrBadKey) {
		t.Fatalf("a duplicate key: %v", err)
	}
	rep, err := db.GC(ctx, "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := configTables(db, "shop")["public.order_lines"]; !slices.Equal(rep.VersionsExpired, []int64{v1.Version}) ||
		rep.InvalidTxnsPruned != 0 || !slices.Equal(got, []int{lines.Number}) || tableCells(t, st, lines) != 0 {
		t.Fatalf("with a failed run in its grace: %+v, lines %v, %d cells", rep, got, tableCells(t, st, lines))
	}
	clock.Add(int64(2 * time.Hour))
	if rep, err = db.GC(ctx, "shop", false); err != nil {
		t.Fatal(err)
	}
	if got := configTables(db, "shop")["public.order_lines"]; rep.InvalidTxnsPruned != 1 || got != nil {
		t.Fatalf("after the grace: %+v, lines %v", rep, got)
	}
}

func mapsEqual(a, b map[string][]int) bool { return maps.EqualFunc(a, b, slices.Equal[[]int]) }
