package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestJournal checks the journal methods: newest first, time bounds
// inclusive, paging with After, Match, entries of one nanosecond and of
// concurrent appenders that never collide, trimming by time, and kinds
// kept apart.
func TestJournal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	db := openTestDB(t, st, Options{})
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 10 {
		if _, err := db.AppendJournal(ctx, "audit", base.Add(time.Duration(i)*time.Minute), fmt.Appendf(nil, "e%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.AppendJournal(ctx, "other", base, []byte("x")); err != nil {
		t.Fatal(err)
	}
	values := func(es []JournalEntry) string {
		var out []string
		for _, e := range es {
			out = append(out, string(e.Value))
		}
		return strings.Join(out, " ")
	}
	all, next, err := db.JournalPage(ctx, "audit", JournalQuery{Limit: 100})
	if err != nil || next != "" {
		t.Fatal(err, next)
	}
	if got, want := values(all), "e9 e8 e7 e6 e5 e4 e3 e2 e1 e0"; got != want {
		t.Fatalf("all: %q, want %q", got, want)
	}
	if !all[0].Time.Equal(base.Add(9*time.Minute)) || len(all[0].ID) != 32 {
		t.Fatalf("entry %+v", all[0])
	}

	// Time bounds are inclusive.
	r, _, err := db.JournalPage(ctx, "audit", JournalQuery{Since: base.Add(2 * time.Minute), Until: base.Add(4 * time.Minute), Limit: 100})
	if err != nil || values(r) != "e4 e3 e2" {
		t.Fatalf("range: %q %v", values(r), err)
	}

	// Pages of 4 with Match (even entries only) and After.
	even := func(v []byte) bool { return (v[1]-'0')%2 == 0 }
	var pages []string
	q := JournalQuery{Limit: 2, Match: even}
	for {
		p, next, err := db.JournalPage(ctx, "audit", q)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, values(p))
		if next == "" {
			break
		}
		q.After = next
	}
	if got, want := strings.Join(pages, "|"), "e8 e6|e4 e2|e0"; got != want {
		t.Fatalf("pages %q, want %q", got, want)
	}
	// MaxScan ends a page early, and the next continues where it ended.
	pages = nil
	q = JournalQuery{Limit: 10, Match: even, MaxScan: 3}
	for {
		p, next, err := db.JournalPage(ctx, "audit", q)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, values(p))
		if next == "" {
			break
		}
		q.After = next
	}
	if got, want := strings.Join(pages, "|"), "e8|e6 e4|e2|e0"; got != want {
		t.Fatalf("pages with MaxScan 3: %q, want %q", got, want)
	}
	if _, _, err := db.JournalPage(ctx, "audit", JournalQuery{Limit: 1, After: "zz"}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad After: %v", err)
	}
	if _, _, err := db.JournalPage(ctx, "audit", JournalQuery{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("no limit: %v", err)
	}

	// Entries of one nanosecond, from concurrent appenders, all kept.
	same := base.Add(time.Hour)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := db.AppendJournal(ctx, "audit", same, fmt.Appendf(nil, "s%d", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	r, _, err = db.JournalPage(ctx, "audit", JournalQuery{Since: same, Until: same, Limit: 100})
	if err != nil || len(r) != 20 {
		t.Fatalf("same time: %d entries, %v", len(r), err)
	}

	// Trim removes exactly the entries older than the time.
	n, err := db.TrimJournal(ctx, "audit", base.Add(5*time.Minute))
	if err != nil || n != 5 {
		t.Fatalf("trim: %d %v", n, err)
	}
	r, _, err = db.JournalPage(ctx, "audit", JournalQuery{Until: base.Add(30 * time.Minute), Limit: 100})
	if err != nil || values(r) != "e9 e8 e7 e6 e5" {
		t.Fatalf("after trim: %q %v", values(r), err)
	}
	if o, _, err := db.JournalPage(ctx, "other", JournalQuery{Limit: 10}); err != nil || values(o) != "x" {
		t.Fatalf("other kind: %q %v", values(o), err)
	}

	// A read-only DB appends and reads the same journal.
	ro := openTestDB(t, openSecondStore(t, dir, st), Options{ReadOnly: true})
	if _, err := ro.AppendJournal(ctx, "audit", base.Add(2*time.Hour), []byte("ro")); err != nil {
		t.Fatal(err)
	}
	r, _, err = db.JournalPage(ctx, "audit", JournalQuery{Limit: 1})
	if err != nil || values(r) != "ro" {
		t.Fatalf("read-only append: %q %v", values(r), err)
	}
}

// TestReverseTime checks that reverseTime orders times newest first and
// round-trips, across the Unix epoch.
func TestReverseTime(t *testing.T) {
	ts := []time.Time{time.Unix(0, -5), time.Unix(0, 0), time.Unix(0, 1), time.Date(2026, 1, 1, 0, 0, 0, 7, time.UTC)}
	for i, x := range ts {
		if got := unreverseTime(reverseTime(x)); !got.Equal(x) {
			t.Fatalf("round trip %v: %v", x, got)
		}
		if i > 0 && reverseTime(x) >= reverseTime(ts[i-1]) {
			t.Fatalf("%v does not sort before %v", x, ts[i-1])
		}
	}
}
