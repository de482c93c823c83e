package txn

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestStateLifecycle checks I3-I6 on one owner's State: begin, commit,
// abort, a dead writer's transactions, pruning after the grace, and what a
// reader excludes meanwhile (V1, V2).
func TestStateLifecycle(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var s State
	for _, id := range []int64{5, 3, 9} {
		if err := s.Begin(id, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Begin(3, t0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("begin twice: %v", err)
	}
	if err := s.Begin(0, t0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("begin 0: %v", err)
	}
	if v := s.Visibility(9); v.IsVisible(3) || v.IsVisible(5) || v.IsVisible(9) || !v.IsVisible(4) {
		t.Fatalf("in-progress ids visible: excluded %v", v.Excluded())
	}
	if err := s.Commit(3); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(3); !errors.Is(err, ErrUnknownTxn) {
		t.Fatalf("commit twice: %v", err)
	}
	if err := s.Abort(5, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(5, t0); !errors.Is(err, ErrUnknownTxn) {
		t.Fatalf("abort twice: %v", err)
	}
	if v := s.Visibility(9); !v.IsVisible(3) || v.IsVisible(5) || v.IsVisible(9) {
		t.Fatalf("after commit of 3 and abort of 5: excluded %v", v.Excluded())
	}
	// A writer that is gone: what it had in progress becomes invalid (I5).
	if got := s.AbortAll(t0.Add(2 * time.Minute)); !slices.Equal(got, []int64{9}) {
		t.Fatalf("AbortAll: %v", got)
	}
	if !slices.Equal(s.InvalidIDs(), []int64{5, 9}) || len(s.InProgressIDs()) != 0 {
		t.Fatalf("sets %v %v", s.InProgressIDs(), s.InvalidIDs())
	}
	// I6: only what has been invalid longer than the grace.
	if got := s.Prunable(t0.Add(3*time.Minute), 90*time.Second); !slices.Equal(got, []int64{5}) {
		t.Fatalf("prunable: %v", got)
	}
	// A write may land as late as the grace itself (store.LateWriter's
	// bound is inclusive): an id invalid for exactly the grace stays.
	if got := s.Prunable(t0.Add(3*time.Minute), time.Minute); !slices.Equal(got, []int64{5}) {
		t.Fatalf("prunable at exactly the grace: %v", got)
	}
	c := s.Clone()
	s.Prune([]int64{5})
	if !slices.Equal(s.InvalidIDs(), []int64{9}) || !slices.Equal(c.InvalidIDs(), []int64{5, 9}) {
		t.Fatalf("after prune %v, clone %v", s.InvalidIDs(), c.InvalidIDs())
	}
	// The encoding round-trips and is checked.
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var d State
	if err := json.Unmarshal(b, &d); err != nil || d.Check() != nil || !slices.Equal(d.InvalidIDs(), c.InvalidIDs()) {
		t.Fatalf("round trip: %s %v %v", b, err, d.Check())
	}
	bad := State{Invalid: []Entry{{ID: 7}, {ID: 7}}}
	if err := bad.Check(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("an id twice: %v", err)
	}
}

func TestVisibilityRule(t *testing.T) {
	v := NewVisibility(10, []int64{7, 3, 12, 3})
	for ts, want := range map[int64]bool{1: true, 3: false, 7: false, 10: true, 11: false, 12: false} {
		if got := v.IsVisible(ts); got != want {
			t.Errorf("IsVisible(%d) = %v", ts, got)
		}
	}
	if v.ExcludedAtOrBelow(10) != 2 || v.ExcludedAtOrBelow(2) != 0 || v.ExcludedAtOrBelow(12) != 3 {
		t.Error("ExcludedAtOrBelow")
	}
}
