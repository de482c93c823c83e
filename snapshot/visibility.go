package snapshot

// The visibility rule of txn (txn.V2: which cell versions a view sees;
// txn.V3: the newest visible version of a column wins, and a visible delete
// marker hides the visible puts at or below it) applied to the versions of
// one row: the walk of rowversion.go (resolvedRow.add) resolves rows for
// reads, runs and diffs, and GC's markNeeded (gc.go) walks the same way to
// find what each view needs.

import (
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// readOpts returns the store read options of a read at vis: every version
// up to the read pointer. The walk of a row (rowversion.go) stops at the
// end of its chain, and a rowCursor seeks past the older versions.
func readOpts(vis txn.Visibility) store.ReadOptions {
	return store.ReadOptions{TimeRange: store.TimeRange{Min: 0, Max: vis.ReadPointer + 1}}
}
