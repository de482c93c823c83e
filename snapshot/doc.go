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
// guards, flushes and syncs the data, then makes the transaction committed
// and the dataset's current version in one atomic durable metadata write
// (txn.I3). Any failure before that write leaves the current version as it
// was and the run's transaction invalid.
//
// D4. Failed runs. An aborted run, a crashed process (txn.I5) or a
// rolled-back version (txn.I4) is an invalid transaction: never visible,
// its cells removed by GC, then its id pruned (txn.I6).
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
// RunOptions.Force skips both.
//
// D8. One writer per dataset. A run, GC, rollback and drop each hold the
// dataset's writer slot; another gets ErrRunInProgress. Readers take no
// slot: reads never block runs and runs never block reads.
//
// # Garbage collection
//
// G1. Retention. A committed version is kept while it is younger than
// Retention.TTL (0: forever) or among the newest Retention.MinVersions (at
// least 1); the current version and tagged versions are always kept,
// whatever their age. GC expires the rest: their metadata goes first, so
// a Reader at an expired version gets ErrVersionNotKept, never an empty
// result.
//
// G2. Views. The cells that must survive are those seen by some view: each
// kept version with today's excluded set, and each open Reader with the
// visibility it pinned (so a rolled-back version still read by a Reader
// keeps its cells until the Reader closes).
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
// G6. Then invalid ids of the dataset that no open Reader can see are
// pruned (txn.I6).
//
// G7. An expired version's cells may still be what later versions see
// (a row never changed since). Its id is remembered in the dataset's
// metadata until GC finds none of its cells left, so that a rollback to a
// version before it invalidates it with the kept ones (txn.I4); otherwise
// its changes would resurrect after the rollback.
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
//	       restart: 3 is invalid (txn.I5); ids resume at the high-water
//	       mark, 1001 (txn.I1)
//	t=30   run 1001 deletes row k      cells: row@1001 c@3 c@2 c@1
//	t=40   run 1002 reinserts c=d      cells: row@1001 c@1002=d c@3 c@2 c@1
//	t=100  GC: versions 1, 2, 1001, 1002 committed at 0, 10, 30, 40;
//	       current 1002. TTL 60m: 1 (100m old), 2 (90m) and 1001 (70m)
//	       are past it, but MinVersions 2 keeps 1001 and 1002; 1 and 2
//	       expire. Views: 1001, 1002.
//	       view 1002: c -> c@1002 needed. view 1001: the newest visible
//	       c is c@2 (c@3 is invalid), hidden by row@1001, so row@1001 is
//	       a candidate (G4); no needed put older than 1001 survives (c@2
//	       and c@1 are not needed), so row@1001 goes too (G5). c@3 is
//	       invalid: deleted, and txn 3 is pruned (G6).
//	                                   cells: c@1002=d
//	       A Reader at version 1001 still sees no row k (c@1002 > 1001);
//	       a Reader at 2 gets ErrVersionNotKept.
//
// testdata/gc runs this example.
//
// # Several processes on one store
//
// A store that other processes can open too (HBase) holds one writer
// process and any number of read-only ones. The store has no
// compare-and-set, and a writer keeps what it owns in memory (the id
// block, its runs, the writer slots of D8), so two writers would hand out
// the same transaction ids, overlap runs of one dataset, and each take the
// other's running transactions for a dead process's (txn.I5, txn.I8).
//
// W1. One writer process per store, enforced by a lease. A DB opened with
// Options.WriterLease writes a lease record (owner = host/pid/random,
// expiry) to the metadata table before txn.Open, reads it back after a
// settle delay (a tenth of the lease, at most 0.5 s), renews it every third
// of the lease (a failed renewal is retried every second), and deletes it
// at Close. Open fails with ErrWriterLeaseHeld while another owner's lease
// has not expired. A DB opened with Options.ReadOnly takes no lease and
// writes nothing: its txn Manager keeps the writer's in-progress ids
// excluded instead of invalidating them (txn.I7), and BeginRun, GC,
// Rollback, Tag, Untag, SetConfig, DropDataset, PutRecord and DeleteRecord
// return ErrReadOnly. Without compare-and-set the lease is a guard against
// a second writer started by mistake, not consensus: two writers started
// within the settle delay of each other can, with unlucky timing, both
// pass; the renewal of the one overwritten finds the other owner and stops
// it (W3).
//
// W2. Read-only views are refreshed, metadata first. DB.Refresh reads every
// dataset's metadata (config, current version, versions, tags, expired
// ids), then the txn sets, then publishes the new metadata. A committed
// version V of dataset d can see a transaction t <= V of d only if t ended
// before V began (one writer per dataset), so t's invalid record (txn.I4)
// was durable before V's commit record, and a txn state read after the
// metadata that shows V holds it (or t was pruned: no cells left,
// txn.I6). Hence no version becomes readable in this process before the
// invalid set that guards it, and no reader sees a cell of another
// process's aborted transaction. A version rolled back between the two
// reads shows up excluded in its own visibility: Reader returns
// ErrVersionNotKept for it. With Options.RefreshInterval (default 1 s for
// a read-only DB) every read entry point (Datasets, Dataset, Versions,
// VersionInfo, Reader, Diff, DiffCounts) refreshes a view older than the
// interval first; the refresh happens where they find their dataset
// (DB.lookup), so that no entry point can leave it out. A refresh keeps
// the dataset objects, so open Readers keep their pinned version and
// visibility (txn.V4); a dataset the writer dropped is marked dropped. On
// a writer DB Refresh does nothing.
//
// W3. A writer stops writing when its lease is gone. BeginRun, Commit
// (just before the commit record) and the other writes check that the
// lease is held and not expired by this process's clock, else
// ErrWriterLeaseLost. After an outage longer than the lease, writes resume
// with the first renewal that succeeds, if the record still names this
// DB; a renewal that finds another owner's record loses it for good.
// Clocks of the processes must agree to well within the lease.
//
// Limits. The writer's GC knows only its own Readers (G2): a read-only
// process's Reader pinned to a version that retention expires, or to a
// version rolled back then collected, may see that version's cells
// disappear under it; keep such reads shorter than the TTL, or tag the
// version. The writer does not see what another process wrote to the
// metadata table (none may write, W1).
//
// # Partitions
//
// A dataset has Options.Partitions hash partitions (fixed at creation):
// a row lives in table "d/<dataset>/<p>", p = xxhash64(row key) modulo
// the partitions; scans merge the partitions in key order (partition.go).
// See keys.go for every table and metadata row.
package snapshot
