// Package txn hands out snapstore's transaction ids and keeps the sets
// that decide which cells a reader may see. It is modelled on Apache
// Tephra's TransactionManager (ids, the in-progress and invalid lists) and
// TransactionVisibilityState (what a reader carries: a read pointer and
// the excluded ids), with two changes for several writer processes on one
// store: ids come from a counter in the store (IDs), and the sets are kept
// per owner (a dataset) in the owner's own row (State), so that one
// owner's transaction ends in the same single-row atomic write as the rest
// of its change (package snapshot's dataset row).
//
// # Persisted state
//
// The id counter and a block given back live in the metadata table, in the
// row keys.go names; each owner's State lives where the owner keeps it.
//
// # Invariants
//
// I1. Ids are positive int64s handed out once, by any number of IDs on one
// store, in any number of processes, whatever the wall clock does: the
// store's counter (store.S8) is raised by a block with Increment before any
// id of the block is handed out (the block of an Increment that returns c
// is (c-block, c]), so no id above the counter was handed out and no
// Increment, late or not, gives two callers one block. The counter never
// goes back. Ids of a block a process did not use are
// skipped, except that a clean Close gives the unused tail back (a
// conditional write, when the counter still ends that block: nobody took
// a block since) and the next block taken is that one; so a clean restart
// does not jump by a block. (Tephra derives ids from the clock and
// persists through its transaction log; a counter makes clock steps
// irrelevant and keeps versions small and readable.)
//
// I2. Ids of one owner increase: IDs.Next(above) returns an id above
// above, and the owner passes the largest id it ever used. Blocks of two
// processes interleave (and a block given back lies below later ones), so
// ids increase in each process but not across processes; an owner whose
// work moves between processes still gets increasing ids, which is what
// visibility needs (V2 compares an owner's ids only).
//
// I3. A State records a transaction in progress (Begin) in the write that
// lets it start writing cells, so that no cell of it can be written before
// a reader would exclude it; Commit removes it from the in-progress set in
// the same write that makes it committed for the owner (package snapshot:
// its dataset's new current version).
//
// I4. Abort moves an id from the in-progress set to the invalid set, with
// the time it became invalid.
//
// I5. The transactions in progress of a writer that is gone become
// invalid (AbortAll) in the write that hands the owner to another writer
// (package snapshot: when the dataset's writer slot is next taken).
//
// I6. An id leaves the invalid set (Prune) only once none of its cells can
// be left or come back: the owner prunes the ids Prunable returns, those
// invalid for longer than a grace period beyond the longest time a write
// of the store can land after its call failed (store.S9, store.LateWriter;
// plus, where other processes may still be writing, their writer lease),
// after a scan found none of their cells. Unlike Tephra, whose invalid
// list only grows until its pruning co-processors run, the owner prunes
// after its own collection (package snapshot's GC).
//
// # Visibility rule
//
// V1. A reader carries a Visibility: a read pointer R (the version it reads)
// and the sorted set X of ids excluded when it was taken (the owner's
// invalid and in-progress ids, I3-I5).
//
// V2. A cell with timestamp t is visible iff t <= R and t is not in X.
//
// V3. Among the visible versions of one column, the newest wins; a visible
// delete marker (row or column, see package store) hides the visible puts at
// or below its timestamp. V3 is applied by package snapshot.
//
// V4. A Visibility is a value: it does not change after it is taken, so a
// reader pinned to it sees one version even while runs commit or abort
// around it. Pruning (I6) cannot change what it sees, because pruned ids
// have no cells left.
package txn
