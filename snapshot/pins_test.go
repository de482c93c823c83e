package snapshot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pinClock is a clock two DBs share, moved by the test.
type pinClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *pinClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *pinClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// pinNodes opens two DBs on one store, as two processes of a cluster
// (node a runs and collects, node b reads), with Readers that pin in the
// store (G8) and the given clock (nil: the real one).
func pinNodes(t *testing.T, lease time.Duration, now func() time.Time) (a, b *DB) {
	t.Helper()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	a = openTestDB(t, st, Options{pinsLocal: true, PinLease: lease, now: now, RefreshInterval: -1, pruneGrace: -1})
	b = openTestDB(t, openSecondStore(t, dir, st), Options{pinsLocal: true, PinLease: lease, now: now, RefreshInterval: -1, ReadOnly: true})
	return a, b
}

// pinVersions commits two versions of dataset "t" on db, with ttl, every
// row changed by the second, and returns them.
func pinVersions(t *testing.T, db *DB, ttl time.Duration) (v1, v2 int64) {
	t.Helper()
	ctx := context.Background()
	for round, name := range []string{"old", "new"} {
		run, err := db.BeginRun(ctx, DatasetConfig{Name: "t", Retention: Retention{TTL: ttl}}, RunOptions{Schema: testSchema})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			if err := run.Put(ctx, []Value{iv(int64(i)), sv(fmt.Sprintf("%s%d", name, i))}); err != nil {
				t.Fatal(err)
			}
		}
		vi, err := run.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			v1 = vi.Version
		} else {
			v2 = vi.Version
		}
	}
	return v1, v2
}

// pinRecords counts the pin records of dataset "t".
func pinRecords(t *testing.T, db *DB) int {
	t.Helper()
	recs, err := db.ListRecords(context.Background(), pinKind("t"))
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// checkOld checks that r, a Reader of the first version, reads all of it.
func checkOld(t *testing.T, r *Reader) {
	t.Helper()
	got := scanJSON(t, r)
	if len(got) != 50 || got[0] != `{"id":0,"name":"old0"}` || got[49] != `{"id":49,"name":"old49"}` {
		t.Fatalf("the pinned version read %d rows: %.3q", len(got), got)
	}
}

// A Reader of node b pinned to a version that node a's GC would expire
// keeps it, kept and with its cells, until it closes; then node a
// collects it. A Reader whose node read the row before the expiry
// learns it at open.
func TestPinKeepsVersionForOtherNode(t *testing.T) {
	ctx := context.Background()
	clock := &pinClock{t: time.Now()}
	a, b := pinNodes(t, 30*time.Second, clock.now)
	v1, _ := pinVersions(t, a, time.Hour)
	clock.add(2 * time.Hour)
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := b.Reader(ctx, "t", At{Version: v1})
	if err != nil {
		t.Fatal(err)
	}
	if n := pinRecords(t, a); n != 1 {
		t.Fatalf("%d pins of a version past its TTL, want 1", n)
	}
	rep, err := a.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.VersionsExpired) != 0 || rep.CellsDeleted != 0 {
		t.Fatalf("GC under a pin: %+v", rep)
	}
	checkOld(t, r)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := pinRecords(t, a); n != 0 {
		t.Fatalf("%d pins after Close, want 0", n)
	}
	rep, err = a.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.VersionsExpired) != 1 || rep.VersionsExpired[0] != v1 || rep.CellsDeleted != 50 {
		t.Fatalf("GC after the pin ended: %+v, want version %d and its 50 cells", rep, v1)
	}
	// b's view still lists v1: its pin, read against the row, refuses.
	if _, err := b.Reader(ctx, "t", At{Version: v1}); !errors.Is(err, ErrVersionNotKept) {
		t.Fatalf("a Reader of a version expired before its pin: %v", err)
	}
	if n := pinRecords(t, a); n != 0 {
		t.Fatalf("%d pins after a refused Reader, want 0", n)
	}
}

// The pin of a node that stops renewing it (a node that died) counts for
// nothing once its lease ran out: GC collects the version and deletes the
// lapsed record.
func TestLapsedPinCountsForNothing(t *testing.T) {
	ctx := context.Background()
	clock := &pinClock{t: time.Now()}
	const lease = 30 * time.Second
	a, b := pinNodes(t, lease, clock.now)
	v1, _ := pinVersions(t, a, time.Hour)
	clock.add(2 * time.Hour)
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := b.Reader(ctx, "t", At{Version: v1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.pin.mu.Lock() // the node dies: no renewal, no deletion
	r.pin.done = true
	r.pin.timer.Stop()
	r.pin.mu.Unlock()
	clock.add(lease / 2)
	if rep, err := a.GC(ctx, "t", false); err != nil || len(rep.VersionsExpired) != 0 {
		t.Fatalf("GC within the lease: %+v, %v", rep, err)
	}
	clock.add(lease)
	rep, err := a.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.VersionsExpired) != 1 || rep.VersionsExpired[0] != v1 || rep.CellsDeleted != 50 {
		t.Fatalf("GC after the lease: %+v, want version %d and its 50 cells", rep, v1)
	}
	if n := pinRecords(t, a); n != 0 {
		t.Fatalf("%d pin records after GC, want the lapsed one deleted", n)
	}
}

// A Reader of a version that TTL keeps for longer than a lease writes no
// pin; it writes one a lease before the TTL ends, if still open, and GC
// then keeps the version past its TTL.
func TestPinWrittenBeforeTTLEnds(t *testing.T) {
	ctx := context.Background()
	const lease, ttl = time.Second, 3 * time.Second
	a, b := pinNodes(t, lease, nil)
	v1, _ := pinVersions(t, a, ttl)
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	vi, err := a.VersionInfo(ctx, "t", v1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Reader(ctx, "t", At{Version: v1})
	if err != nil {
		t.Fatal(err)
	}
	if time.Until(vi.CommittedAt.Add(ttl-lease)) > 0 {
		if n := pinRecords(t, a); n != 0 {
			t.Fatalf("%d pins of a version TTL keeps past a lease, want 0", n)
		}
	}
	time.Sleep(time.Until(vi.CommittedAt.Add(ttl + lease/2)))
	if n := pinRecords(t, a); n != 1 {
		t.Fatalf("%d pins after the TTL, want 1", n)
	}
	rep, err := a.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.VersionsExpired) != 0 || rep.CellsDeleted != 0 {
		t.Fatalf("GC under a pin: %+v", rep)
	}
	checkOld(t, r)
	r.Close()
	if rep, err = a.GC(ctx, "t", false); err != nil || len(rep.VersionsExpired) != 1 {
		t.Fatalf("GC after the pin ended: %+v, %v", rep, err)
	}
}

// A paged scan keeps its version pinned between pages for a lease: the
// next page, read on the other node after a GC, finds every row.
func TestPageTokenKeepsPin(t *testing.T) {
	ctx := context.Background()
	clock := &pinClock{t: time.Now()}
	const lease = 30 * time.Second
	a, b := pinNodes(t, lease, clock.now)
	v1, _ := pinVersions(t, a, time.Hour)
	clock.add(2 * time.Hour)
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	var rows []string
	tok := ""
	for page := 0; ; page++ {
		db := []*DB{b, a}[page%2]
		v := v1
		if tok != "" {
			var err error
			if v, err = DecodePageToken("t", tok); err != nil {
				t.Fatal(err)
			}
		}
		r, err := db.Reader(ctx, "t", At{Version: v})
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		it, err := r.Scan(ctx, ScanOptions{Limit: 20, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			j, _ := it.Row().MarshalJSON()
			rows = append(rows, string(j))
		}
		tok = it.NextPageToken()
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if tok == "" {
			break
		}
		clock.add(lease / 2)
		if rep, err := a.GC(ctx, "t", false); err != nil || len(rep.VersionsExpired) != 0 {
			t.Fatalf("GC between pages: %+v, %v", rep, err)
		}
	}
	if len(rows) != 50 || rows[49] != `{"id":49,"name":"old49"}` {
		t.Fatalf("the paged scan read %d rows", len(rows))
	}
	clock.add(lease)
	if rep, err := a.GC(ctx, "t", false); err != nil || len(rep.VersionsExpired) != 1 {
		t.Fatalf("GC a lease after the last page: %+v, %v", rep, err)
	}
}

// A Reader that pins its version while GC expires it (its read of the
// row before GC's expiry write, its record after GC first read the pins)
// keeps its cells all the same: GC reads the pins again after the expiry.
func TestPinDuringExpiry(t *testing.T) {
	ctx := context.Background()
	clock := &pinClock{t: time.Now()}
	dir := t.TempDir()
	st := openTestStore(t, dir)
	var (
		armed atomic.Bool
		b     *DB
		r     *Reader
		v1    int64
		rerr  error
	)
	hook := func(point string, _ int64) {
		if point == "row:write" && armed.Swap(false) {
			r, rerr = b.Reader(ctx, "t", At{Version: v1})
		}
	}
	a := openTestDB(t, st, Options{pinsLocal: true, now: clock.now, RefreshInterval: -1, pruneGrace: -1, hook: hook})
	b = openTestDB(t, openSecondStore(t, dir, st), Options{pinsLocal: true, now: clock.now, RefreshInterval: -1, ReadOnly: true})
	v1, _ = pinVersions(t, a, time.Hour)
	clock.add(2 * time.Hour)
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	rep, err := a.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if rerr != nil {
		t.Fatalf("a Reader opened before the expiry write: %v", rerr)
	}
	if len(rep.VersionsExpired) != 1 || rep.CellsDeleted != 0 {
		t.Fatalf("GC with a pin written during it: %+v, want version %d expired and no cell deleted", rep, v1)
	}
	checkOld(t, r)
	r.Close()
	rep, err = a.GC(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.VersionsExpired) != 0 || rep.CellsDeleted != 50 {
		t.Fatalf("GC after the pin ended: %+v, want the 50 cells of version %d", rep, v1)
	}
}

// A Reader that continues its own page tokens to the last page leaves no
// pin behind: nobody else holds a token of it, so GC expires the version
// at once after it closes (a lingering pin there kept versions retention
// had expired for one more lease).
func TestOwnPagesLeaveNoPin(t *testing.T) {
	ctx := context.Background()
	clock := &pinClock{t: time.Now()}
	const lease = 30 * time.Second
	a, b := pinNodes(t, lease, clock.now)
	v1, _ := pinVersions(t, a, time.Hour)
	clock.add(2 * time.Hour)
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := b.Reader(ctx, "t", At{Version: v1})
	if err != nil {
		t.Fatal(err)
	}
	n, pages, tok := 0, 0, ""
	for {
		it, err := r.Scan(ctx, ScanOptions{Limit: 20, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			n++
		}
		tok = it.NextPageToken()
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		pages++
		if tok == "" {
			break
		}
	}
	r.Close()
	if n != 50 || pages != 3 {
		t.Fatalf("the paged scan read %d rows in %d pages", n, pages)
	}
	if rep, err := a.GC(ctx, "t", false); err != nil || len(rep.VersionsExpired) != 1 {
		t.Fatalf("GC after a Reader read its own pages: %+v, %v", rep, err)
	}
}
