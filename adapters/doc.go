// Package adapters owns data connections, source connectors, adapter
// definitions, the runner that pulls a source table into a snapshot run,
// and the cron scheduler.
//
// # Data connections
//
// A data connection is a named, typed reference to an external system, after
// Hazelcast's data connections: a definition (type, sharing mode, typed
// options) plus, while in use, an open pool. Definitions come from the config
// file (origin config, read-only through the API) or the admin API (origin
// api, persisted with snapshot.DB.PutRecord, surviving restarts). A config
// definition shadows an API one of the same name; the API one is listed with
// status "shadowed" and is never deleted (definitions.go; adapters follow
// the same rule). Every API create or replace makes a
// new revision; each committed version records the connection name and the
// revision it was pulled through (snapshot.SourceInfo).
//
// Invariants of named data connections, cited by the code and the tests:
//
//	N1 A run holds a lease on the connection revision it started with until
//	   it ends. Replace or drop retires the old revision's handle: idle pooled
//	   connections close at once, the pool closes when its last lease is
//	   released (database/sql's DB.Close alone would not wait for a stream).
//	N2 A run started after a replace uses the new revision; one started
//	   after a drop fails with ErrConnectionNotFound, "data connection does
//	   not exist: "X"".
//	N3 Dropping a connection that adapters name fails with
//	   ErrConnectionInUse listing them, unless forced.
//	N4 A secret option (password, dsn) is kept as given (literal, env:NAME or
//	   file:/path), resolved only when the connection is opened, and never
//	   written to a response, log line, metric label or error: Secret renders
//	   as REDACTED, reports show literals as REDACTED, and every error from
//	   a source passes scrubError with the resolved secrets. In the
//	   metadata table an API connection's literal secrets are encrypted
//	   (secretbox.go, E1-E5).
//
// Sharing modes: "shared" (default) keeps one database/sql pool per revision;
// "pooled" is the same with the pool limits max_open, max_idle,
// conn_max_lifetime and conn_max_idle_time as options; "single-use" opens a
// pool for one run (or one test or resource listing) and closes it after.
//
// # Connectors
//
// Connection types copy database/sql's driver registry: source.Register(name,
// Connector) at init, each connector in a package of its own (adapters/mysql,
// adapters/postgres, adapters/sqlite, the only ones that may import their
// source driver, registered by importing adapters/install), a small
// required interface (Connector: Options,
// Validate, Open; Source: OpenTable, Close; TableReader), and optional Source
// capabilities found by type assertion:
//
//	Tester          connection test with a classified cause
//	ResourceLister  tables and views with estimated rows
//	IdleCloser      close idle pooled connections now (retire, N1)
//
// Built in: "mysql" (go-sql-driver/mysql, MySQL 5.7/8.x and MariaDB 10.x),
// "postgres" (jackc/pgx/v5 and pgxpool, PostgreSQL 12 and later) and
// "sqlite" (modernc.org/sqlite, read-only). docs/connections.md lists their
// options; docs/types.md their type mapping.
//
// # Pulls
//
//	P1 One consistent point in time per run: on one pinned connection,
//	   SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ, then
//	   START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY (MySQL); BEGIN
//	   ISOLATION LEVEL REPEATABLE READ, READ ONLY (PostgreSQL), whose
//	   readers share one exported snapshot when a run reads with several
//	   (SnapshotSharer); BEGIN on a read-only connection (SQLite). Every
//	   chunk reads inside it.
//	P2 The table is read in key order by keyset pagination, chunk_rows rows
//	   per query (default 5000), so no result set stays open for the whole
//	   table and memory is flat in table size.
//	P3 The key is the primary key, else the unique key over NOT NULL
//	   columns with the fewest columns, else key_columns, else ErrNoKey;
//	   explicit key_columns win over discovery and are checked for
//	   duplicates while reading.
//	P4 Values are the source's exact text (MySQL's text protocol and
//	   sql.RawBytes, PostgreSQL's text result format under fixed session
//	   parameters), typed per docs/types.md; TIMESTAMP and timestamptz are
//	   read in UTC.
//	P5 Any error aborts the snapshot run: the current version is unchanged
//	   (docs/semantics.md, "Versions and transactions"), and the run record
//	   says why.
//
// # Adapters
//
//	A1 One adapter per dataset: create, replace and New refuse a second
//	   adapter on a dataset another active adapter writes
//	   (ErrDatasetTaken, naming it), so retention, guards and deletes
//	   follow one source.
//	A2 Create and replace open the resource as a run would: a missing
//	   table (ErrResourceNotFound) or one without a usable key (ErrNoKey)
//	   is refused; an unreachable source is accepted and logged.
//	A3 Stored and reported specs carry effective values: min_versions 0
//	   is 1, max_shrink 0 is 0.5 (snapshot's default), retry_backoff 0
//	   with retries is 10s, an empty strategy is local.
//	A4 Config definitions are checked by ValidateConfig, which needs no
//	   storage and reports every problem as its own *OptionError; a
//	   config adapter names a connection of the same file.
//
// # Runs and scheduling
//
// StartRun records a run (status running) and pulls in its own
// goroutine (runner.go); two runs of one adapter never overlap
// (ErrRunInProgress). RunOptions.Force commits a run a guard would refuse.
// A run that did not succeed has a stable RunRecord.Code (guard_refused,
// source_unavailable, aborted, ...) besides its error text; a refused run's
// stats hold the counts it would have committed. Run records are kept in
// the metadata table, the newest 200 per adapter (runrecords.go), saved
// when the run starts, when it gets its transaction and at each phase
// change (runcheckpoint.go), and when it ends; a final record the store
// does not take is kept in memory, answered from there and saved again
// until the store answers (unsavedruns.go, U1). Runs a previous process
// left running are settled at New: succeeded when their transaction
// committed, else aborted, naming it. RunOnStart
// adapters run once when the scheduler starts. The scheduler
// (scheduler.go, its rules C1-C5) starts runs on robfig/cron/v3 schedules,
// records skipped ticks, retries failed runs with doubling backoff, and
// follows adapter changes without restart.
//
// # Runs in a cluster
//
// In a cluster (Options.Cluster) every node runs the scheduler over every
// adapter, and the adapter's Strategy (strategy.go) decides where a run
// happens: placement.go states the rules L1-L7 (ticks fire on the owner
// once, claimed in a fire record; round-robin rotates and fails over;
// single-node runs wait for their node; a draining node takes no new run),
// dispatch.go applies them, and reload.go keeps the definitions of every
// node equal to the stored ones (A5).
//
// Goroutines: one per running run (owns its RunWriter and TableReader),
// the saver of unsaved run records
// (unsavedruns.go), the scheduler loop, one retry watcher per scheduled run with retries,
// and one per single-node run waiting for its node (owns its waiting
// record).
// Close stops the scheduler, cancels running runs (their transactions are
// aborted, never committed), waits up to its context's deadline (30 s when
// none) and closes every pool.
package adapters
