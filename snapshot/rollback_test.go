package snapshot

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestRollbackKeepsHistory checks D11: versions 1, 2 and 3 committed, a
// rollback to 1 commits version 4 whose rows and checksum are version
// 1's, restored from it; 2 and 3 stay listed, readable and diffable, with
// their tags; the rollback wrote only what differs from 3; and retention
// expires 2 and 3 like any other versions.
func TestRollbackKeepsHistory(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	db := openTestDB(t, newTestStore(t), Options{now: func() time.Time { return clock }})
	step := func() { clock = clock.Add(time.Hour) }
	src := [][][]Value{
		{{iv(1), sv("a")}, {iv(2), sv("b")}, {iv(3), sv("c")}},
		{{iv(1), sv("a2")}, {iv(2), sv("b")}, {iv(4), sv("d")}},
		{{iv(1), sv("a3")}, {iv(4), sv("d")}, {iv(5), sv("e")}},
	}
	var vs []VersionInfo
	for _, rows := range src {
		vs = append(vs, runRows(t, db, rows))
		step()
	}
	if err := db.Tag(ctx, "t", "second", vs[1].Version); err != nil {
		t.Fatal(err)
	}
	read := func(v int64) []string {
		t.Helper()
		r, err := db.Reader(ctx, "t", At{Version: v})
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		defer r.Close()
		return scanJSON(t, r)
	}
	before := [][]string{read(vs[0].Version), read(vs[1].Version), read(vs[2].Version)}

	v4, err := db.Rollback(ctx, "t", vs[0].Version)
	if err != nil {
		t.Fatal(err)
	}
	if v4.Version <= vs[2].Version || !v4.Current || v4.RestoredFrom != vs[0].Version {
		t.Fatalf("rollback answered %+v, want a new current version restored from %d", v4, vs[0].Version)
	}
	if v4.Stats.Checksum != vs[0].Stats.Checksum || v4.Stats.Rows != vs[0].Stats.Rows {
		t.Fatalf("version %d: checksum %s rows %d, want version %d's %s and %d", v4.Version, v4.Stats.Checksum, v4.Stats.Rows,
			vs[0].Version, vs[0].Stats.Checksum, vs[0].Stats.Rows)
	}
	// Only what differs from version 3: row 1 changed, rows 2 and 3 back,
	// rows 4 and 5 deleted.
	if st := v4.Stats; st.Updated != 1 || st.Inserted != 2 || st.Deleted != 2 || st.Unchanged != 0 {
		t.Fatalf("rollback's stats %+v, want 1 updated, 2 inserted, 2 deleted", st)
	}
	if got := read(v4.Version); !slices.Equal(got, before[0]) {
		t.Fatalf("version %d reads %v, want version %d's %v", v4.Version, got, vs[0].Version, before[0])
	}
	for i, v := range vs {
		if got := read(v.Version); !slices.Equal(got, before[i]) {
			t.Fatalf("after the rollback, version %d reads %v, want %v", v.Version, got, before[i])
		}
	}
	if r, err := db.Reader(ctx, "t", At{Tag: "second"}); err != nil || r.Version().Version != vs[1].Version {
		t.Fatalf("tag on version 2 after the rollback: %v", err)
	} else {
		r.Close()
	}
	if n, err := db.DiffCounts(ctx, "t", vs[0].Version, v4.Version); err != nil || n.Inserted+n.Updated+n.Deleted != 0 {
		t.Fatalf("diff of the version restored and the rollback's: %+v %v, want none", n, err)
	}
	if n, err := db.DiffCounts(ctx, "t", vs[2].Version, v4.Version); err != nil || n.Updated != 1 || n.Inserted != 2 || n.Deleted != 2 {
		t.Fatalf("diff of version 3 and the rollback's: %+v %v", n, err)
	}
	listed, err := db.Versions(ctx, "t")
	if err != nil || len(listed) != 4 {
		t.Fatalf("versions after the rollback: %d, %v; want 4", len(listed), err)
	}

	// Retention: 2 and 3 expire like any other (1 too); the tag keeps 2
	// until it goes.
	step()
	if err := db.SetConfig(ctx, DatasetConfig{Name: "t", Guard: Guard{MaxShrink: 1}, Retention: Retention{TTL: time.Minute, MinVersions: 1}}); err != nil {
		t.Fatal(err)
	}
	rep, err := db.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.VersionsExpired, []int64{vs[0].Version, vs[2].Version}) {
		t.Fatalf("GC expired %v, want %d and %d (%d is tagged)", rep.VersionsExpired, vs[0].Version, vs[2].Version, vs[1].Version)
	}
	if err := db.Untag(ctx, "t", "second"); err != nil {
		t.Fatal(err)
	}
	if rep, err = db.GC(ctx, "t", false); err != nil || !slices.Equal(rep.VersionsExpired, []int64{vs[1].Version}) {
		t.Fatalf("GC after the untag: %+v %v", rep, err)
	}
	if got := read(v4.Version); !slices.Equal(got, before[0]) {
		t.Fatalf("after GC the rollback's version reads %v, want %v", got, before[0])
	}
}
