// Package txn allocates snapstore's transaction ids and keeps the sets that
// decide which cells a reader may see. It is modelled on Apache Tephra's
// TransactionManager (ids, the in-progress and invalid lists, the
// write-ahead persisted state) and TransactionVisibilityState (what a
// reader carries: a read pointer and the excluded ids).
//
// # Persisted state
//
// Everything lives in one store table (the "meta" table, shared with
// package snapshot, which owns other row prefixes; see keys.go):
//
//	row "t\x00hwm"                 column "v"      the id high-water mark, 8 bytes big-endian
//	row "t\x00ip\x00"  + id (8 BE) column "owner"  one in-progress transaction
//	row "t\x00inv\x00" + id (8 BE) column "owner"  one invalid transaction
//
// All at timestamp 0. The owner is the name of the dataset whose tables the
// transaction writes (Tephra keeps no owner; we need it to prune, see I6).
//
// # Invariants
//
// I1. Ids are positive int64s, strictly increasing in allocation order and
// never reused, across restarts and whatever the wall clock does: they are a
// counter, and ids are handed out only below a durable high-water mark that
// is raised in blocks (Options.BlockSize) before use. At Open the counter
// resumes at the persisted mark, so ids that were allocated but whose use
// was never persisted are skipped, not reused. (Tephra derives ids from the
// clock and persists through its transaction log; a counter makes clock
// steps irrelevant and keeps versions small and readable.)
//
// I2. Begin returns only after the id's in-progress record is durable, so a
// transaction cannot write a cell that a later process would take for
// committed.
//
// I3. A transaction is committed when its in-progress record is removed
// without an invalid record being written. Commit removes it in a batch
// the caller fills with its own metadata (package snapshot puts the
// dataset's new current version there), applied atomically and durably:
// the transaction is committed and the version current in one write.
//
// I4. Abort, and Invalidate (used by rollback for committed transactions),
// move ids to the invalid set durably.
//
// I5. Open turns every in-progress transaction left by a previous process
// into an invalid one before any Begin.
//
// I6. Unlike Tephra, whose invalid list only grows (until its pruning
// co-processors run), an id leaves the invalid set through Prune, which the
// owner calls only after it has physically removed every cell the
// transaction wrote (snapshot's GC, or dropping a dataset).
//
// I7. A Manager opened with Options.ReadOnly (a second process reading the
// same store, package snapshot's Options.ReadOnly) writes nothing: Open
// keeps the in-progress transactions it finds as in progress (they belong
// to the live writer process, not to a dead one, so I5 does not apply),
// Begin, Commit, Abort, Invalidate and Prune return ErrReadOnly, and
// Refresh replaces both sets with the persisted ones. It owns no
// transaction, so a refresh drops nothing of its own.
//
// I8. One writer process per store. The store has no compare-and-set, so
// two writer Managers on one store would both resume at the same
// high-water mark and hand out the same ids, and each would take the
// other's running transactions for a dead process's (I5). Package
// snapshot enforces the rule with a writer lease (snapshot.W1).
//
// # Visibility rule
//
// V1. A reader carries a Visibility: a read pointer R (the version it reads)
// and the sorted set X of ids excluded when it was taken (the owner's
// invalid and in-progress ids, I2-I5).
//
// V2. A cell with timestamp t is visible iff t <= R and t is not in X.
//
// V3. Among the visible versions of one column, the newest wins; a visible
// delete marker (row or column, see package store) hides the visible puts at
// or below its timestamp. V3 is applied by package snapshot.
//
// V4. A Visibility is a value: it does not change after it is taken, so a
// reader pinned to it sees one version even while runs commit, abort, or
// are rolled back around it. Pruning (I6) cannot change what it sees,
// because pruned ids have no cells left.
package txn
