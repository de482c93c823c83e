package txn

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Entry is a transaction of a State with the time it entered its set.
type Entry struct {
	ID int64     `json:"id"`
	At time.Time `json:"at"`
}

// State is the transaction sets of one owner (a dataset): the ids in
// progress and the invalid ids, each with its time (I3). It is a value:
// the owner keeps it in one row of its own and writes every change of it
// in one atomic write with the rest of that row (package snapshot's
// dataset row), so that a transaction ends in the same write that makes
// its version current or records its failure. Methods that change it
// work on the receiver; Clone before changing a State that others read.
type State struct {
	InProgress []Entry `json:"in_progress,omitempty"`
	Invalid    []Entry `json:"invalid,omitempty"`
}

// Clone returns a copy that shares nothing with s.
func (s State) Clone() State {
	return State{InProgress: slices.Clone(s.InProgress), Invalid: slices.Clone(s.Invalid)}
}

func find(set []Entry, id int64) (int, bool) {
	return slices.BinarySearchFunc(set, id, func(e Entry, id int64) int { return cmp.Compare(e.ID, id) })
}

func insert(set []Entry, e Entry) []Entry {
	i, _ := find(set, e.ID)
	return slices.Insert(set, i, e)
}

// IsInProgress reports whether id is in progress.
func (s State) IsInProgress(id int64) bool { _, ok := find(s.InProgress, id); return ok }

// IsInvalid reports whether id is invalid.
func (s State) IsInvalid(id int64) bool { _, ok := find(s.Invalid, id); return ok }

// Begin records id in progress since at (I2). ErrInvalidArgument for a
// non-positive id or one the state knows.
func (s *State) Begin(id int64, at time.Time) error {
	if id <= 0 || s.IsInProgress(id) || s.IsInvalid(id) {
		return fmt.Errorf("%w: beginning transaction %d", ErrInvalidArgument, id)
	}
	s.InProgress = insert(s.InProgress, Entry{ID: id, At: at})
	return nil
}

// Commit ends id as committed: it leaves the in-progress set and enters
// no other (I3). ErrUnknownTxn when id is not in progress.
func (s *State) Commit(id int64) error {
	i, ok := find(s.InProgress, id)
	if !ok {
		return fmt.Errorf("%w: committing %d", ErrUnknownTxn, id)
	}
	s.InProgress = slices.Delete(s.InProgress, i, i+1)
	return nil
}

// Abort makes the in-progress id invalid since at (I4). ErrUnknownTxn
// when id is not in progress.
func (s *State) Abort(id int64, at time.Time) error {
	i, ok := find(s.InProgress, id)
	if !ok {
		return fmt.Errorf("%w: aborting %d", ErrUnknownTxn, id)
	}
	s.InProgress = slices.Delete(s.InProgress, i, i+1)
	s.Invalid = insert(s.Invalid, Entry{ID: id, At: at})
	return nil
}

// AbortAll makes every transaction in progress invalid since at, those of
// a writer that is gone (I5), and returns their ids.
func (s *State) AbortAll(at time.Time) []int64 {
	var ids []int64
	for _, e := range s.InProgress {
		ids = append(ids, e.ID)
		s.Invalid = insert(s.Invalid, Entry{ID: e.ID, At: at})
	}
	s.InProgress = nil
	return ids
}

// Prunable returns the invalid ids that have been invalid for longer than
// grace at now, ascending: those whose cells can no longer be written
// (I6). A write may land as late as the grace itself (store.LateWriter's
// bound), so an id invalid for exactly the grace stays; a grace of 0 (a
// store whose failed writes never land) makes every invalid id prunable.
func (s State) Prunable(now time.Time, grace time.Duration) []int64 {
	var ids []int64
	for _, e := range s.Invalid {
		if grace <= 0 || now.Sub(e.At) > grace {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// Prune removes ids from the invalid set (I6); ids not there are ignored.
func (s *State) Prune(ids []int64) {
	s.Invalid = slices.DeleteFunc(s.Invalid, func(e Entry) bool { return slices.Contains(ids, e.ID) })
}

// InvalidIDs returns the invalid ids, ascending.
func (s State) InvalidIDs() []int64 { return idsOf(s.Invalid) }

// InProgressIDs returns the ids in progress, ascending.
func (s State) InProgressIDs() []int64 { return idsOf(s.InProgress) }

func idsOf(set []Entry) []int64 {
	ids := make([]int64, len(set))
	for i, e := range set {
		ids[i] = e.ID
	}
	return ids
}

// Visibility returns what a reader of the owner's tables at readPointer
// carries (V1): the invalid and in-progress ids.
func (s State) Visibility(readPointer int64) Visibility {
	x := make([]int64, 0, len(s.Invalid)+len(s.InProgress))
	x = append(x, idsOf(s.Invalid)...)
	x = append(x, idsOf(s.InProgress)...)
	return NewVisibility(readPointer, x)
}

// Check returns ErrCorrupt when the sets are not sorted, hold an id twice
// or a non-positive id: a state decoded from the store is checked so.
func (s State) Check() error {
	seen := map[int64]bool{}
	for _, set := range [][]Entry{s.InProgress, s.Invalid} {
		for i, e := range set {
			if e.ID <= 0 || seen[e.ID] || (i > 0 && set[i-1].ID >= e.ID) {
				return fmt.Errorf("%w: transaction %d out of place", ErrCorrupt, e.ID)
			}
			seen[e.ID] = true
		}
	}
	return nil
}
