// Package hbase is the Apache HBase backend of store.Store, spoken through
// HBase's Thrift2 gateway (org.apache.hadoop.hbase.thrift2.ThriftServer,
// service THBaseService) with github.com/apache/thrift, binary protocol,
// unframed (the gateway's defaults). The handful of Thrift structs and calls
// it needs are written by hand in wire.go from the field ids of HBase's IDL
// (hbase-thrift, org/apache/hadoop/hbase/thrift2/hbase.thrift); nothing is
// generated.
//
//	s, err := hbase.Open(ctx, hbase.Options{Addr: "127.0.0.1:9090", Namespace: "snapstore", Table: "cells"})
//
// # Layout
//
// Every store table, the metadata table included, lives in one HBase table
// (Options.Namespace:Options.Table) with one column family "c", as
// store/pebble keeps every table in one keyspace:
//
//	HBase row key  = esc(table) 00 01 | row
//	qualifier      = '_' | column          (a row delete marker: column "", so "_")
//	HBase timestamp = the cell's timestamp (store.MaxTimestamp: see M4)
//	value          = kind (1 put, 2 delete-column, 3 delete-row; bit 0x80: see M4) | value
//
// esc is the order-preserving escaping of store/pebble (each 00 byte becomes
// 00 ff, and 00 01 ends the name), so the rows of a store table are the
// contiguous HBase range [esc(table) 00 01, esc(table) 00 02), they sort as
// the store rows do, and no table can read another's rows ("a" and "ab",
// "a" and "a\x00"). Within a row, HBase sorts qualifiers bytewise and
// versions newest first, which with the constant '_' prefix is store.S5
// order. One HBase table rather than one per store table, because HBase
// creates a table in about a second and keeps a region (memory, files) per
// table, while snapstore makes a table per dataset partition; dropping a
// dataset is a DeleteRange.
//
// # Mapping the store's raw model onto HBase
//
// The store's reads are raw (store/doc.go): delete markers are returned,
// never applied, and nothing is ever collected by the backend. HBase applies
// its own markers on every read but a raw scan, and the Thrift2 gateway has
// no raw scans (TScan and TGet carry no raw flag). So:
//
// M1. A store delete marker is an ordinary HBase put whose value's first
// byte says its kind. HBase sees only puts, masks nothing, and returns
// markers like values, with the time range and the maximum number of
// versions applied by HBase's own scanner (time range first, then
// versions per qualifier: the store's rule, a row marker counting as
// column ""). KEEP_DELETED_CELLS does not enter into it: no store marker
// is an HBase marker. The range goes to the region servers in the TScan or
// TGet, which skip the store files whose time range tracker rules it out,
// so a scan with a lower time bound (a diff between versions) reads about
// the cells in range.
//
// M2. The family keeps every version forever: VERSIONS = Integer.MAX_VALUE,
// MIN_VERSIONS = 0, TTL = FOREVER, so neither HBase's TTL nor its version
// limit ever collects current data behind the snapshot's back (snapshot GC
// decides what goes). Open creates the family so and refuses an existing
// table whose family differs (ErrIncompatibleTable).
//
// M3. The only HBase deletes are physical removals: store.OpDeleteVersion
// is a DELETE_COLUMN (one exact version) and DeleteRange a DELETE_FAMILY
// per row at the largest timestamp. HBase removes the masked cells at the
// next major compaction; KEEP_DELETED_CELLS is FALSE so that it does.
// Plain HBase would let such a marker mask a later put of the same
// coordinate until that compaction (reference guide, "Deletes mask Puts");
// the family sets NEW_VERSION_BEHAVIOR = true (HBASE-15968), under which a
// delete masks only the puts written before it, so that a version deleted
// by GC, or a range dropped, can be written again at once (store.S4; the
// conformance suite checks both). No cell has the empty qualifier, which
// HBase gives family delete markers: under NEW_VERSION_BEHAVIOR a put of
// the empty qualifier is not masked by them, hence the '_' prefix.
//
// M4. HBase cannot store Long.MAX_VALUE (a put there means "now",
// HConstants.LATEST_TIMESTAMP). A cell at store.MaxTimestamp is stored at
// MaxTimestamp-1 with bit 0x80 set in its kind byte. The two share one
// HBase version: writing one of them replaces the other, and a
// DeleteVersion of either removes whichever is there. Every time range
// still selects correctly (a range never separates the two, since a Max of
// MaxTimestamp means unbounded), and transaction ids never come near.
//
// M5. Within one Apply, MutateRow or CheckAndMutate, mutations of the same
// coordinate collapse to the last one before anything is sent, because
// HBase does not keep the order of a put and a delete of one coordinate
// inside a call.
//
// M6. A counter (store.S8) is the HBase cell of qualifier '#' | column,
// whose value is the 8 raw big-endian bytes HBase's increment adds to (no
// kind byte, so it cannot be a store cell: Get and Scan skip '#'
// qualifiers, and a store column's '_' qualifier is another cell). HBase
// stamps each increment with the server's clock, as a new version; since
// the family keeps every version (M2), Increment deletes the older ones
// after each increment (DELETE_COLUMNS just below the new one, best
// effort), and reads a counter (delta 0) with a get, because an increment
// of 0 writes a version too. A DeleteRange's family delete removes it with
// the row.
//
// # Atomicity, durability, consistency
//
// HBase is atomic per row. A batch goes out as putMultiple and
// deleteMultiple calls of at most Options.MaxCellsPerCall cells (a row
// with both puts and version deletions as one mutateRow); each row is
// applied whole, but a multi-row batch is not atomic as a whole (store.S1
// holds per row only): a batch that failed with store.ErrUnavailable may
// have been applied in part, and retrying it is safe (every mutation is
// idempotent, store.S4). ApplyCalls says which calls a batch becomes, in
// order (store.ApplyPlanner). Package snapshot does not need more: a
// run's cells are invisible until its commit, a single-row
// checkAndMutate. DeleteRange is likewise per row.
//
// MutateRow, CheckAndMutate and Increment are one call each (mutateRow,
// checkAndMutate with EQUAL, increment), applied by the regionserver under
// the row's lock: atomic per row, against every other writer of the row
// in any process (store.S6, store.S7, store.S8). An absent check is sent as an empty
// expected value, which HBase reads as "no cell, or an empty one"; no store
// cell is empty (M1), and the 2.6 gateway fails on the null value the IDL
// documents for absence.
//
// A call that timed out at this client, or whose gateway went away, may
// still be applied: the gateway's own HBase client retries it for up to
// its hbase.client.operation.timeout (store.S9; Options.MaxWriteDelay). Every write uses HBase's default
// durability (SYNC_WAL), so a batch is durable when Apply returns and Sync
// has nothing left to do (store.S2), to the extent HBase's WAL is (a
// standalone HBase on a local file system does not fsync).
//
// Get is one HBase get. Scan opens one HBase scanner on the gateway when
// it is called and fetches Options.ScanBatchRows rows per call: HBase fixes
// a scanner's read point per region when it opens there, so the view is
// that of the Scan call within a region (store.S3, checked by the suite
// with two rows per call); a scan that crosses regions opens each later
// region when it gets there and sees writes made meanwhile. SeekRow to a
// row among those already fetched moves in the buffer; any other SeekRow
// reopens the scanner at the target, with a new read point. A scanner idle
// past the gateway's lease is lost: Next then fails with
// store.ErrUnavailable.
//
// # Errors
//
// Gateway unreachable, timed out or restarted, and TIOErrors HBase marks
// retryable: store.ErrUnavailable, the text naming the operation and the
// gateway. TIOErrors marked not retryable, TIllegalArgument and application
// exceptions: ErrServer, with HBase's message (clipped). Canceled
// contexts: the context's error. A connection found broken is replaced
// and the call made again, at most twice (pool.call), except
// getScannerRows, which
// advances the scanner, checkAndMutate, whose repeat could find its own
// write and report "not applied", and increment, which would count twice:
// those are never repeated. Before an idle connection is reused, one
// non-blocking read of its socket finds whether the gateway closed it (it
// stopped or restarted since): such a connection is dropped before any
// call is made on it, so a call that cannot be repeated does not fail on
// it; and when one call finds its connection broken, every idle one is
// dropped.
//
// # Concurrency
//
// A Store is safe for concurrent use; an Iterator is not. Each call takes
// a connection from a pool of at most Options.PoolSize (a Thrift client is
// not goroutine-safe) and gives it back when the call ends; no lock is held
// across a dial or a call. A finished scan releases its gateway scanner in
// the background, so that ending a scan costs no round trip; a scan whose
// fetch returns fewer rows than asked for is known to be over without
// another call. Close waits for those releases, then closes the idle
// connections; calls in flight finish, then their connections close.
//
// # Metrics
//
// With Options.Registerer set: snapstore_hbase_calls_total{method,result},
// snapstore_hbase_call_duration_seconds{method},
// snapstore_hbase_cells_written_total, snapstore_hbase_cells_read_total,
// snapstore_hbase_pool_connections and
// snapstore_hbase_pool_idle_connections.
package hbase
