// Package store is snapstore's versioned cell table: the contract that every
// storage backend implements, in Apache HBase's terms.
//
// # Model
//
// A Store holds named tables. A table is a sorted map
//
//	row key -> column -> timestamp -> cell
//
// where a row key and a column (HBase's qualifier; there is one implicit
// column family) are arbitrary byte strings, and a timestamp is an int64
// (snapstore writes transaction ids there, see package txn). Row keys sort
// bytewise ascending; within a row, columns sort bytewise ascending; within a
// column, versions sort newest (largest timestamp) first. This is the order of
// every scan and of the cells that Get returns.
//
// A cell is either a value (KindPut) or a delete marker. As in HBase
// (reference guide, "Delete"), a column delete marker (KindDeleteColumn, HBase
// DELETE_COLUMNS) at timestamp T masks the column's versions with timestamp <=
// T, and a row delete marker (KindDeleteRow, HBase DELETE_FAMILY) at T masks
// every column of the row at <= T. Unlike HBase, the store applies no masking
// itself: reads are always raw (HBase's Scan.setRaw(true)), returning puts and
// markers alike, because whether a marker counts depends on whether its
// transaction is visible, which only package txn knows. Masking is done by
// the reader above the store (package snapshot). A store therefore never
// loses a version to a marker, and never collects anything on its own: there
// is no TTL and no max-versions collection inside a backend (HBase families
// are created with VERSIONS = max int and KEEP_DELETED_CELLS = true for the
// same reason). Physically removing a cell version is an explicit
// DeleteVersion mutation, used by garbage collection.
//
// # Invariants
//
// S1. Apply is atomic per row: after an error or a crash, every mutation
// of one row of a batch is visible to reads or none is. store/pebble keeps
// it for whole batches; store/hbase per row only (its Thrift2 gateway has
// no multi-row atomic write), so a batch interrupted there may be applied
// in part, row by row (store/hbase's package doc; ApplyPlanner). What must
// change together goes in one row (S6, S7).
// S2. A Batch applied with Sync (or followed by a successful Sync call) is
// durable: it survives a process crash and, for backends that promise it, a
// machine crash.
// S3. Reads reflect every batch whose Apply returned before the read began.
// S4. Writing the same (table, row, column, timestamp) again replaces the
// cell (value or marker kind) at that coordinate, as in HBase.
// S5. Iteration order is row, then column, then timestamp descending.
//
// Single-row operations, HBase's row-level atomicity (reference guide,
// "ACID semantics"): what coordination between writers (transaction ids,
// writer slots, one atomic change per dataset in package snapshot) is built
// on.
//
// S6. MutateRow applies a batch whose mutations all name one row atomically
// and durably: after an error or a crash every mutation of it is visible or
// none is, on every backend (store/hbase: one mutateRow call; store/pebble:
// one synced Pebble batch).
//
// S7. CheckAndMutate reads the newest version of one column of the row
// (Check) and applies the row's batch only if it matches, atomically with
// the check: no write of that row, by any caller of any process, lands
// between the check and the mutation (store/hbase: checkAndMutate under
// HBase's row lock; store/pebble: a lock that every write of the store takes,
// shared, and conditional writes take alone). It reports whether it
// applied; two CheckAndMutate calls that check the same value of a column
// that both change cannot both apply.
//
// S8. Counters. A counter (table, row, column) is an int64 kept beside the
// row's cells, not among them: Increment is its only writer and, with delta
// 0, its reader; Get, Scan and Check do not see it, and a cell column of
// the same name is another thing. A counter starts at 0, wraps around on
// overflow (as HBase's does), and each Increment, from any process, is
// atomic and durable, so concurrent increments get distinct results.
// DeleteRange removes the counters of the rows it deletes.
//
// S9. Ambiguous and late writes. A write call that returns ErrUnavailable
// (or a context error) may have been applied or not, and with a LateWriter
// store may still be applied up to MaxWriteDelay later. Callers learn the
// outcome by reading, and make a write that must not land late conditional
// (CheckAndMutate on a column every later change of the row changes), so
// that it cannot apply once the row moved on. Apply and MutateRow are
// idempotent (S4), so repeating them is safe; CheckAndMutate and Increment
// are not repeated by the backends, since a repeat could report "not
// applied" for a write that was applied, or count twice.
//
// # Backends
//
// store/pebble is the embedded default; store/hbase talks to Apache HBase
// through its Thrift2 gateway. store/storetest holds the conformance suite
// and shared benchmarks that each backend's tests run.
package store
