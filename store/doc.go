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
// S1. Apply is atomic per Batch: after a crash either every mutation of a
// batch is visible to reads or none is. store/pebble keeps S1 for whole
// batches; store/hbase keeps it per row only (HBase's Thrift2 gateway has no
// multi-row atomic write), so a batch interrupted by an outage there may be
// partly applied, row by row (store/hbase's package doc).
// S2. A Batch applied with Sync (or followed by a successful Sync call) is
// durable: it survives a process crash and, for backends that promise it, a
// machine crash.
// S3. Reads reflect every batch whose Apply returned before the read began.
// S4. Writing the same (table, row, column, timestamp) again replaces the
// cell (value or marker kind) at that coordinate, as in HBase.
// S5. Iteration order is row, then column, then timestamp descending.
//
// # Backends
//
// store/pebble is the embedded default; store/hbase talks to Apache HBase
// through its Thrift2 gateway. store/storetest holds the conformance suite
// and shared benchmarks that each backend's tests run.
package store
