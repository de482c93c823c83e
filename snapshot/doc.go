// Package snapshot keeps SNAPSHOT datasets: tables whose every scheduled
// run writes only what changed since the last committed version, commits
// atomically, and stays readable at each kept version until retention lets
// garbage collection reclaim it. It is built on the cell table of package
// store and the transactions of package txn, and knows nothing of sources.
//
// # Semantics
//
// What holds on every backend; docs/semantics.md says the same for users.
// Labels are unique in the module (txn has I and V, store S, snapshot D,
// G and W); other packages cite these as snapshot.D5 and so on.
//
// D1. Cells. A dataset partition is a store table; a row key is the
// order-preserving encoding of the key column values (encoding.go); a row
// has one cell per column, at a timestamp = the writing run's transaction
// id, value = kind byte + payload. NULL is a value. The cells one run
// writes for one row are kept as one store cell, a row version, in column
// "" (rowversion.go): the row's changed cells (values and column delete
// markers) packed together, or the whole row, so that a read finds a
// row's state at a version with one seek and a short walk; a row delete
// marker is a store row delete marker there. Columns are named by their
// index in the dataset's column dictionary, which only grows.
//
// D2. Versions. A dataset's version is the id of its last committed run.
// Reading at version V returns, per row and column, the newest cell with
// timestamp <= V whose transaction is visible (txn.V2), unless a newer
// visible delete marker hides it (txn.V3). A Reader pins its version and
// visibility for its whole life, so a scan never mixes versions, and a
// page token carries the dataset and the version (pagetoken.go), so a
// paged scan does not either.
//
// D3. Commit. Run.Commit writes delete markers for rows not seen, checks the
// guards, flushes and syncs the data, writes the version's record (its
// VersionInfo, in a row of its own), then makes the transaction committed
// and the dataset's current version in one conditional write of the
// dataset's row (D9, txn.I3): the commit point. Any failure before it
// leaves the current version as it was and the run's transaction invalid.
//
// D4. Failed runs. An aborted run, a crashed process or a lost node leaves
// an invalid transaction (txn.I4, txn.I5): never visible, its cells
// removed by GC, then its id pruned (G6). A crashed writer's transaction
// stays in progress, excluded all the same, until the dataset's writer
// slot is next taken (W1).
//
// D5. Delta writes. For each source row the run reads the row at the
// current version and writes only: values for columns whose encoded value
// differs or that are new, column delete markers for columns the row has
// but the run's schema does not, in one row version (the whole row when it
// is new, when every column changed, or when its chain of deltas is long,
// rowversion.go). Rows the source no longer has get a row delete marker. How they are found depends on the source's order, which
// is never assumed (MySQL collations do not sort like our keys), per
// partition:
//
//   - Phase A, while keys ascend: one iterator over the current version
//     walks forward with the source (Next, no seeks); every current row it
//     passes without a matching key gets its row delete marker at once, and
//     at commit so do the rows after the last key. Nothing else is stored.
//   - Phase B, from the first key below its predecessor (switchKey = the
//     largest key of phase A) to the end of the run: every key is recorded
//     in a scratch table of the same store (never synced; scratch.go says
//     when it is cleared). A key at or below switchKey is checked against
//     what the run already wrote: a row delete marker phase A wrote for it
//     is taken back (DeleteVersion of the marker), a row phase A saw makes
//     the key a duplicate (ErrBadKey). Keys above switchKey are compared
//     through the iterator (stepping forward, seeking when far) or a point
//     Get when behind it. At commit the scratch rows, which the store returns
//     sorted, are merge-joined with the current rows above switchKey: the
//     rows not seen get their marker, a key recorded twice is ErrBadKey
//     (and the run is aborted).
//
// No structure in memory grows with the table; writes go out in batches of
// batchSize (4096) row versions, or batchBytes (8 MiB) of changed cells
// when fewer, without sync, written by the run's writer goroutine while
// Put goes on (run_write.go; at most writeDepth batches per run). The first design recorded every
// key in the scratch table and merge-joined at every commit; it was dropped
// because sorted sources (the common case) paid an extra write per row and
// a full scan of the current version at commit for nothing. Phase B keeps
// that design for the rows that need it.
//
// D6. Stats and checksum. Rows = rows Put; Inserted, Updated, Unchanged
// classify them against the current version, Deleted counts row markers.
// BytesWritten sums row + value + 8 (timestamp) over the row versions and
// markers written (not the scratch table). The checksum is order-independent: the
// sum modulo 2^64 of xxhash64 over each row's canonical encoding, which is,
// for each column in schema order, uvarint(len(name)) name
// uvarint(len(cell)) cell, cell being the cell value encoding. Two
// versions with the same rows and schema have the same checksum.
//
// D7. Guards. Commit refuses with ErrGuardRefused (and aborts) a run of 0
// rows unless Guard.AllowEmpty, and a run whose deletes exceed
// Guard.MaxShrink (default 0.5; 1 disables) of the current version's rows;
// RunOptions.Force skips both. In a run of several tables both hold per
// table, except that a table the current version does not hold, or holds
// empty, may commit 0 rows (it has no rows to lose); a run of 0 rows in
// every table is refused as a run of one table is; MaxShrink also holds
// for the dataset as a whole, the rows of the tables the run drops
// counted as deleted.
//
// D8. One writer per dataset. A run, GC, rollback and drop each hold the
// dataset, in this process (another gets ErrRunInProgress) and in the
// store through the dataset's writer slot (W1), so that two of them never
// overlap, whichever processes they run in. Readers take nothing: reads
// never block runs and runs never block reads.
//
// D9. One atomic write per change. Everything that changes together for
// one dataset is one row (datasetrow.go): the current version, the kept
// versions (each listing a version record written first, which counts
// only once listed), tags, expired versions, configuration, the dataset's
// transactions in progress and invalid (txn.I3), the largest id it used
// (txn.I2), a drop under way (D10) and the writer slot (W1). Every change
// (begin, commit, abort, a verification (verify.go), rollback's commit,
// tag, untag, configuration, GC's expiry and pruning, drop, a dataset's
// migration (migrate_rows.go), slot take, renewal and release) is one
// CheckAndMutate of that row (store.S7), made only if the row still holds
// what the change was computed from. A store that loses a write, applies
// it late, or reports an error for a write it applied (store.S9) cannot
// show a state no change made: a late write cannot apply over a newer
// state, and after an error the row is read again to learn what happened
// before the change is made again or given up (writeRow). The new state
// is installed in memory only once it is durable. When the row cannot be
// read back, or writeRow gives up while its last write may still land,
// the operation reports ErrOutcomeUnknown; the keeper then settles the
// row (fenceRow: written again unchanged but for its sequence, if it
// still holds what the failed write was checked against, so that the
// write can no longer land), and for a run's commit or abort the DB keeps
// the dataset held until it learns the outcome.
//
// D10. Drop. DropDataset first records the drop in the row (taking the
// slot), so that the dataset is gone for every reader and writer from
// that write on; then deletes its cells, scratch and version records; last
// the row. A drop a crash or a failure interrupted is finished by the next
// drop or run of the name, or by any writer's keeper. A deletion that
// failed may still land (store.S9): the row then stays for the store's
// grace (G6), so that a dataset of the same name cannot be created before
// it can no longer be hit.
//
// D11. Rollback. Rolling back to a kept version V commits a new version
// whose rows and schema equal V's, by a run whose source is V (so it
// writes only the cells that differ from the current version, as git
// revert does, and its checksum equals V's, D6). The versions after V stay
// listed, readable and diffable until retention expires them; the new
// version's RestoredFrom names V. Nothing is invalidated.
//
// D12. Named tables. A dataset may hold several named tables, committed
// as one version (tables.go, run_tables.go). Each table has its own key,
// schema, column dictionary, partitions and partition key, and a number
// the dataset's row gives it, which names its data and scratch tables
// (keys.go); a table dropped and added again gets a new number, so that
// no run reads the cells of the old one as its previous rows. A run of
// named tables (BeginTablesRun) is one transaction holding the one writer
// slot (D8, W1); each table's TableWriter compares and writes its rows as
// a Run does (D5, D6), and TableWriters of different tables run at once.
// Commit finishes every table (delete markers, guards per table, D7),
// writes the version's record listing every table with its stats,
// checksum and schema, and commits in the one conditional write of the
// dataset's row (D3, D9): every table or none. A table the current
// version holds that the run lacks fails it at begin (ErrTableMissing)
// unless TablesRunOptions.DropMissing; the new version then lacks it and
// older ones keep it. VerifyUnchanged verifies only when no table
// changed and the tables are the same. Tags, rollback (D11), retention
// and GC (G1-G10: a table's views are the kept versions that hold it, and
// every open reader) and drop (D10) apply to the dataset as a whole.
// Reads name a table (TableReader, TableDiff); the calls that do not
// answer ErrTableRequired, naming the tables. A dataset of one table
// (BeginRun) has no names and keeps the layout and encodings it always
// had; the two kinds of run refuse each other's dataset.
//
// # Garbage collection
//
// G1. Retention. A committed version is kept while it is younger than
// Retention.TTL (0: forever) or among the newest Retention.MinVersions (at
// least 1); the current version and tagged versions are always kept,
// whatever their age. GC expires the rest in its first write of the row
// (D9), before any cell goes: a Reader at an expired version gets
// ErrVersionNotKept, never an empty result.
//
// G2. Views. The cells that must survive are those seen by some view: each
// kept version with today's excluded set, and each open Reader of this DB
// with the visibility it pinned. Readers of other processes count through
// their pins (G8).
//
// G3. A put is needed iff it is the visible state of its column in some
// view (newest visible version, not hidden by a visible row marker).
//
// G4. A marker is a candidate iff it is the effective state of a column in
// some view (the newest visible version of the column, or the newest
// visible row marker hiding it).
//
// G5. A candidate marker is kept iff a needed put older than it survives in
// its scope (its column, or any column for a row marker); otherwise
// nothing it hides survives and it goes too. Everything else is deleted:
// older overwritten versions, markers with nothing left under them, and
// every cell of an invalid transaction.
//
// G6. Then the invalid ids that have been invalid longer than the grace
// and that no open Reader can see are pruned (txn.I6), if a scan of the
// dataset's tables finds none of their cells: a write of a failed run can
// land after its call failed (store.S9, up to the store's MaxWriteDelay:
// 21 minutes with store/hbase's defaults, none for store/pebble), and a
// writer that lost its slot writes until the slot expires by its clock
// (W3), so the grace is MaxWriteDelay plus, where other processes may
// write, a slot lease (30 s by default): 21.5 minutes on HBase, 0 on
// Pebble. A late cell of an id still invalid is invisible, and the next GC
// deletes it.
//
// G7. Expired versions' records are deleted after their cells, and their
// ids then leave the row (rowState.Expired): a GC interrupted in between
// leaves them for the next one.
//
// G8. Pins. Where other processes share the store (HBase; not
// store.ProcessLocal), a Reader of one process is unknown to the GC of
// another, so a Reader pins its version in the store too (pins.go), in
// the manner of Tephra (GC removes only what no reader in progress can
// see) and of HBase's scanner leases: a record of (dataset, version) with
// an expiry Options.PinLease ahead (default the slot lease, 30 s), which
// its Reader renews every third of the lease and deletes at Close. A pin
// whose expiry passed by GC's clock counts for nothing, so the pins of a
// process that died lapse by themselves; GC deletes lapsed records. The
// store alone holds pins. GC reads the live pins before its expiry
// (G1), and retention expires no version one names: the version stays
// kept, its cells with it, and any process may open a Reader of it, until
// a GC after the last pin ended or lapsed. GC reads the pins again after
// its expiry write: a version expired there that a pin names (a pin
// written in between, below) keeps its cells and record as an open
// Reader's (G2) until a later GC finds it unpinned. Cost: a Reader writes
// its pin only when it must, a lease before retention's TTL can expire its
// version, by a timer, if it is still open then; so reads of a dataset
// without TTL, and reads shorter than what the TTL leaves of a version
// (a point read, a page, of any version younger than TTL less a lease),
// write nothing. A Reader of a version older than that writes its pin at
// open, then reads the dataset's row again: if a GC expired the version
// before the pin counted, the open fails with ErrVersionNotKept; if not,
// that GC's expiry write comes after this read, so its second reading of
// the pins finds the pin. A scan that hands out a page token that no
// scan of the same Reader continued leaves its version pinned for one
// more lease after Close (written then if the TTL could end within it),
// so that the next page, on any process, finds it kept. Limits: pins judge by the TTL configured when the Reader opened
// (lowering it shortens what an unpinned Reader may rely on), and
// clocks must agree to well within a lease, as for writer slots (W3).
// On a store only one process opens, Readers pin in the process only
// (G2).
//
// G9. Tables forgotten. In a dataset of named tables (D12), the entry of
// a table in the row's configuration (its number, key, column dictionary)
// stays while some version may be read with it. GC removes it, in its
// last write of the row, once no kept version holds the table, no open
// Reader of this DB reads it, no expired version is still recorded (a pin
// may read it, G8), no transaction is in progress or invalid after the
// prune (a late cell could still land, G6), and a scan finds its data
// tables empty; its scratch rows are deleted first. The write checks the
// kept versions again on the row it changes, so that a tag written
// meanwhile is kept and an entry a kept version holds never goes. The
// number is never given again: a table of that name added later gets a
// new one (D12). A GC that finds a condition unmet leaves the entry to a
// later one.
//
// G10. What GC reads. G3-G5 need every version of every row, so a GC
// reads all the data, which on HBase costs about a scan of the dataset
// even when nothing can go. A GC whose last write finds that it read
// every version with no view but the kept versions' (no open Reader of
// this DB, no late pin of G8), or that it skipped by this rule, records
// a mark in the row (rowState.Collected, gcMark): Top, the largest id the
// dataset had used, and the kept versions. Its first write clears it. The
// mark proves that every cell of an id up to Top that is in the store is
// kept by G3-G5 for the views of those versions, or belongs to an id
// invalid then (its late cells may still land, G6). A later GC skips the
// rows when, in its first write, nothing expires, no expired version's
// record waits (G7), no transaction is in progress, and the versions kept
// up to Top are exactly the mark's (the format is row versions). Then no
// cell can go but those of invalid ids: (a) the views are those of the
// mark plus those of versions committed since, and a view added only
// adds needed cells (G3-G5 are monotonic in the views); (b) an id above
// Top began after that GC took the slot and is now a kept version or
// invalid (committed versions are listed, aborted and verified runs
// invalid, in progress none); a kept one's cells are each the newest of
// their row in its own view, its values needed there (G3) and its markers
// hiding a value its base version, kept too, reads (G5); (c) an invalid
// id's cells are seen by no view, so they go whole whatever else the row
// holds. Such a GC reads only the versions in the span of the invalid ids
// (a time range the store serves by skipping what lies outside it), and
// none when there is no invalid id; it deletes, and reports (dry or not),
// what a full read would. Readers, pins, tags and min_versions keep
// versions and their cells as G1-G8 say, since a skip deletes nothing
// else; a version expired makes that GC read everything, and a Reader
// open during a full read makes the next one read everything too.
//
// A cell of G3-G5 is one cell of a row version: GC rewrites a row version
// without the cells it deletes, and deletes it when none is left. A full
// row version stops a read's walk, so it hides everything older as a row
// delete marker does and is kept, even emptied, while something older
// survives (G5). GC reads one row at a time: memory is bounded by the
// widest row's history. The changes of one row are one batch. With
// dryRun, GC deletes nothing and reports what it would.
//
// Worked example, in the manner of etcd's keyIndex comment. One row k, one
// column c; Retention{TTL: 60m, MinVersions: 2}; clock in minutes.
//
//	t=0    run 1 puts c=a              cells: c@1=a
//	t=10   run 2 puts c=b              cells: c@2=b c@1=a
//	t=20   run 3 crashes after c=x     cells: c@3=x c@2=b c@1=a
//	       restart: 3 stays in progress (excluded); ids resume above
//	       the counter, at 1001 (txn.I1)
//	t=30   run 1001 takes the writer slot, which makes 3 invalid
//	       (txn.I5), and deletes row k cells: row@1001 c@3 c@2 c@1
//	t=40   run 1002 reinserts c=d      cells: row@1001 c@1002=d c@3 c@2 c@1
//	t=100  GC: versions 1, 2, 1001, 1002 committed at 0, 10, 30, 40;
//	       current 1002. TTL 60m: 1 (100m old), 2 (90m) and 1001 (70m)
//	       are past it, but MinVersions 2 keeps 1001 and 1002; 1 and 2
//	       expire. Views: 1001, 1002.
//	       view 1002: c -> c@1002 needed. view 1001: the newest visible
//	       c is c@2 (c@3 is invalid), hidden by row@1001, so row@1001 is
//	       a candidate (G4); no needed put older than 1001 survives (c@2
//	       and c@1 are not needed), so row@1001 goes too (G5). c@3 is
//	       invalid: deleted, and txn 3 is pruned once the grace passed
//	       (G6; at once on Pebble).
//	                                   cells: c@1002=d
//	       A Reader at version 1001 still sees no row k (c@1002 > 1001);
//	       a Reader at 2 gets ErrVersionNotKept.
//
// testdata/gc runs this example.
//
// # Several processes on one store
//
// Any number of writer processes and read-only ones may share a store
// that several processes open (HBase). Nothing a writer keeps in memory
// decides for the others: ids come from the store's counter (txn.I1), and
// each dataset has a writer slot in its row.
//
// W1. Writer slots. An operation that writes a dataset's data (run, GC,
// rollback, drop) takes the dataset's writer slot in its first write of
// the row (D9): owner (host/pid/random), operation, expiry (a lease,
// Options.SlotLease) and an epoch raised at each take. It may take it
// when it is free, expired by its clock, held by a process that is gone
// (on a store only one process opens, store.ProcessLocal, any owner but
// the DBs open on it), or its own; the transactions a previous holder left
// in progress become invalid in that write (txn.I5), so a second live
// writer's runs are never invalidated. The keeper renews the slots a DB
// holds every Options.SlotRenew (a third of the lease by default, under
// half of it always); the operation's last write frees it.
// Two writers may run different datasets at once; never one dataset.
//
// W2. Views are refreshed from the rows. DB.Refresh rereads every
// dataset's row, one consistent view of the dataset, its transactions
// included, and the version records it lists that this DB has not read:
// a version cannot show before the invalid set that guards it, since both
// are in one row. Every read entry point (Datasets, Dataset, Versions,
// VersionInfo, Reader, Diff, DiffCounts) refreshes a view older than
// Options.RefreshInterval first (default 1 s where other processes may
// write; never for a writer alone on its store); the refresh happens where
// they find their dataset (DB.lookup). A refresh keeps the dataset
// objects, so open Readers keep their pinned version and visibility
// (txn.V4); a dataset another process dropped is marked dropped. A DB
// opened with Options.ReadOnly writes no dataset state: only the
// conditional records and counters that coordinate processes
// (CompareAndSetRecord, IncrementRecord); BeginRun, GC, Rollback, Tag,
// Untag, SetConfig, DropDataset, PutRecord and DeleteRecord return
// ErrReadOnly.
//
// W3. Fencing. A commit is made only while the run's slot is the DB's at
// the epoch the run took it (ErrSlotLost otherwise): a writer whose slot
// another took after it expired (the store unreachable, or the process
// paused, for a lease) cannot commit, whatever its clock says. Its data
// writes (the run's writer goroutine's batches and a first run's SSTable
// ingests, run_write.go; a verification's digest, verify.go) go out
// with the slot's expiry, by its own clock, as their deadline, so none is
// sent after it; one already sent may land later,
// which G6's grace covers. Clocks of the processes must agree to well
// within the lease, for liveness only: the epoch, not the clock, keeps a
// stale writer from committing.
//
// Limits. The GC of a writer knows the Readers of other processes by
// their pins in the store (G8); a Reader whose process could not renew its
// pin for a lease (the store unreachable, the process paused) may see its
// version's cells go. Records (PutRecord) are plain writes: the last one
// wins.
//
// # Partitions
//
// A dataset has Options.Partitions hash partitions (fixed at creation):
// a row lives in table "d/<dataset>/<p>", p = xxhash64(row key) modulo
// the partitions; scans merge the partitions in key order (partition.go).
// See keys.go for every table and metadata row.
//
// A dataset may instead place rows by a partition key
// (DatasetConfig.PartitionKey, partition_key.go): p = xxhash64 of the
// encoding of the partition key columns' values, NULL encoded as one byte
// of its own, so every row whose partition key is NULL shares a
// partition. The partition key is fixed once a version is committed;
// every run of the dataset places rows by it. A row whose partition key
// value changed moves: a row delete marker in its old partition, its
// cells in the new, both at the run's id, so that at every version a row
// key is visible in one partition at most; scans and diffs merge the
// partitions by row key (a moved row diffs as an update) and a point read
// looks in every partition unless the partition key is made of key
// columns. The run's counts are per partition: a moved row is a delete
// and an insert (D6's Deleted and Inserted), and D7's shrink guard counts
// that delete; Rows and the checksum are those of any placement.
//
// A partitioned run (run_partition.go) is one run whose partitions
// several processes write: the coordinator holds the writer slot and the
// transaction (W1) and commits (D3, W3) once every partition's
// PartitionWriter has reported; each writer compares and writes its
// partition as a Run does (D5) and reports its counts and checksum (D6),
// which add up to those of one Run of the same rows. A partitioned run
// may carry key ranges of the previous version over unsent
// (run_partition_carry.go): each writer then compares only outside them,
// and the counts and checksum of the carried rows are the previous
// version's less what the writers compared.
package snapshot
