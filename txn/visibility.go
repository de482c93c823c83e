package txn

import "slices"

// Visibility is the visibility state a reader carries (Tephra's
// TransactionVisibilityState, reduced to one read pointer and the excluded
// ids). It is an immutable value, safe to share (V4).
type Visibility struct {
	// ReadPointer is the newest visible timestamp (the version read).
	ReadPointer int64
	excluded    []int64 // sorted ascending
}

// NewVisibility builds a Visibility from a read pointer and excluded ids
// (any order); used by State and by tests.
func NewVisibility(readPointer int64, excluded []int64) Visibility {
	x := slices.Clone(excluded)
	slices.Sort(x)
	return Visibility{ReadPointer: readPointer, excluded: slices.Compact(x)}
}

// IsVisible applies V2 to timestamp ts.
func (v Visibility) IsVisible(ts int64) bool {
	if ts > v.ReadPointer {
		return false
	}
	return !v.IsExcluded(ts)
}

// IsExcluded reports whether ts is an excluded (invalid or in-progress) id.
func (v Visibility) IsExcluded(ts int64) bool {
	_, found := slices.BinarySearch(v.excluded, ts)
	return found
}

// Excluded returns the excluded ids, ascending. The slice must not be
// modified.
func (v Visibility) Excluded() []int64 { return v.excluded }

// ExcludedAtOrBelow returns how many excluded ids are <= ts. A column has at
// most that many invisible versions at or below ts, so reading
// 1+ExcludedAtOrBelow(R) newest versions per column is enough to find the
// newest visible one (store.ReadOptions.MaxVersions).
func (v Visibility) ExcludedAtOrBelow(ts int64) int {
	n, found := slices.BinarySearch(v.excluded, ts)
	if found {
		n++
	}
	return n
}

// At returns the same excluded set with another read pointer.
func (v Visibility) At(readPointer int64) Visibility {
	v.ReadPointer = readPointer
	return v
}
