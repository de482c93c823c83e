// Package e2e holds end-to-end tests that run the built snapstore binary
// against a real MariaDB loaded with Sakila and a real PostgreSQL loaded
// with a Pagila-shaped sample (testdata/pagila.sql), through the HTTP API,
// through the binary's own client commands, and through the web console in
// a real browser. Source rows are read and canonicalised here with the
// MySQL and pgx drivers directly, independently of package adapters, so
// that a mapping bug there cannot hide itself.
//
// TestMain builds cmd/snapstore once into a temp dir. Each test starts its
// own server process (proc) on a temp data dir and a free loopback port,
// with a clean environment holding only the MariaDB password as
// E2E_MYSQL_PW; connections name it "env:E2E_MYSQL_PW". Every response
// body, and at cleanup every server log line, /metrics and the connection
// list, is checked for the password (and for the other secrets a test
// adds).
//
//	TestSakila            16 adapters on a clone of sakila: every dataset
//	                      equals its table (JSON pages, NDJSON, point reads,
//	                      order-independent checksum); source changes
//	                      (inserts, key updates, cascades, deletes, NULL set
//	                      and unset, bytes, ALTER TABLE ADD COLUMN); the
//	                      second versions, diffs and stats_only counts; the
//	                      first versions by version=, tag= and as_of=;
//	                      rollback; literal and wrong passwords.
//	TestPagila            TestSakila's checks (checkRun1, checkRun2) on the
//	                      15 Pagila tables through a postgres connection:
//	                      enum, domain, arrays, tsvector, bytea, a
//	                      partitioned table; a jsonb column whose document
//	                      null, SQL NULL and document stay apart in diffs
//	                      and CSV.
//	TestWideRowsBoundedMemory 12 rows of 24 MiB (LONGBLOB, LONGTEXT): the
//	                      server's peak RSS stays under the bound of
//	                      docs/operations.md.
//	TestKillMidRun        SIGKILL in the middle of a rental run; restart on
//	                      the same data dir: previous version exact, run
//	                      aborted, new run and diff, GC prunes the txn;
//	                      reads during a run see one whole version; SIGTERM
//	                      mid-run aborts the run and keeps the version.
//	TestMariaDBStopMidRun a private MariaDB (scripts/mariadb.sh on its own
//	                      dir and port) stopped in the middle of a scheduled
//	                      run of a 60,000-row SEQUENCE-built table: failed
//	                      run with a clear error, version untouched,
//	                      scheduler keeps going, next run after restart ok.
//	TestCopyEdgeToCentral two servers, each on its own Pebble: an edge with a
//	                      60,000-row SQLite table, a central server copying
//	                      it through a snapstore connection after every two
//	                      edge runs of inserts, updates and deletes, by
//	                      diff; each copied version equals the edge version
//	                      it names (rows, count, checksum); after a schema
//	                      change a full copy, the edge SIGKILLed in the
//	                      middle of it: source_unavailable, the central
//	                      version stays, the next run after the restart
//	                      succeeds. TestCopyEdgeToCentralHBase:
//	                      the same with the central server on HBase.
//	TestCopyTablesEdgeToCentral two servers on Pebble: an edge dataset of
//	                      two SQLite tables (accounts, transfers) changed
//	                      by transfers of one transaction each; the central
//	                      server copies one table by its diff, each copy
//	                      equal to the edge's table at the version it
//	                      names, and both tables at once, each copy equal
//	                      to one edge version whole, row for row.
//	                      TestCopyTablesEdgeToCentralHBase: the central
//	                      server on HBase.
//	TestRetention         ttl 2s with min_versions 2 and 0: GC (dry run,
//	                      then real) collects exactly what retention lets
//	                      go; kept and current versions read exactly after
//	                      the TTL; collected versions answer 410
//	                      version_not_kept as problem+json.
//	TestTypes             every MariaDB type family with edge values (extreme
//	                      integers, 65-digit decimals, zero dates, negative
//	                      TIME, TIMESTAMP written at +02:00, latin1, padded
//	                      BINARY, JSON, spatial, UUID, INET6, a key above
//	                      2^63): exact reads, changes, diff; a column
//	                      dropped and a NULL column added change every row.
//	TestCluster           three nodes on 127.0.0.1-3 and one HBase table
//	                      with an encrypted gossip: they join and agree on
//	                      the members; a node without the key cannot
//	                      join; serve refuses a keyless cluster off
//	                      loopback and a cluster on Pebble; a node killed
//	                      with SIGKILL is failed only after the
//	                      confirmation delay, and restarted with no join
//	                      address it rejoins on its own.
//	TestClusterOwners     four nodes on 127.0.0.1-4 with 200 config
//	                      adapters: they agree on every adapter's owner
//	                      (weighted rendezvous over their ids); an API
//	                      adapter reaches the others on its hint; a 4th
//	                      node takes exactly the adapters it wins; drain
//	                      and resume through the CLI from another node;
//	                      the gossip key rotated through the CLI; a full
//	                      restart brings the same owners back; SIGKILL,
//	                      failed, forget.
//	TestClusterRuns       three writer nodes on 127.0.0.1-3: nine adapters
//	                      scheduled every 3 s fire once per tick, each on
//	                      its owner, runs of several datasets at once on
//	                      several nodes; a round-robin run of 150,000 rows
//	                      killed with SIGKILL mid-run stays invisible, and
//	                      once the dead writer slot expired the next run
//	                      succeeds on a survivor with no version lost.
//	TestPartitionedRuns   three nodes with transfer listeners, a 120,000-row
//	                      SQLite table through a partition-by-key adapter:
//	                      the version equals the source and a local run's
//	                      checksum, every node writes rows; changes; an
//	                      owner SIGKILLed mid-run makes the run wait and
//	                      finish once back (the backlog drains), or fail
//	                      at owner_wait with the version unchanged; a
//	                      coordinator SIGKILLed leaves nothing visible.
//	TestPartitionedTables three nodes, a SQLite source of two tables through
//	                      a partition-by-key adapter of several tables: one
//	                      version whose every table equals a local run's,
//	                      every node writing rows; changes to both; an
//	                      owner killed fails the whole run at owner_wait
//	                      with every table at the version before.
//	TestPartitionedTablesSourceChanges two nodes, the same adapter while
//	                      the source changes: a column added to one table;
//	                      the table dropped (the run fails, every table
//	                      stays) and back; the coordinator SIGKILLed
//	                      mid-run, then a run of the other node commits
//	                      every table equal to a local run's.
//	TestPartitionedRunsFiveNodes five nodes, then a sixth that takes
//	                      floor or ceil of 32/6 partitions, all from the
//	                      others; an owner down for a whole run: its rows
//	                      spill to the coordinator's disk within the
//	                      queues' memory bound, then commit.
//	TestConsole           headless Chromium (chromedp) through the console:
//	                      login, a connection and an adapter through the
//	                      forms, two runs watched to 100% in one page, a
//	                      source change highlighted in the diff, every page,
//	                      a reader without admin actions and 403 for admin
//	                      forms; screenshots (-console.screenshots DIR,
//	                      `make screenshots` for docs/console/). It needs
//	                      Debian's chromium (scripts/chromium.sh, `make
//	                      deps`): skipped without it, failed under CI.
//	TestCLIMariaDB        the binary's commands with SNAPSTORE_TOKEN against
//	                      a server and MariaDB: a connection and an adapter
//	                      from YAML files, test, resources, runs, a source
//	                      change shown by diff with the column before and
//	                      after; a wrong password's test naming the server
//	                      and the cause; no output holds a secret.
//	TestBackupRecipe      docs/operations.md's cold backup, run as written:
//	                      it waits for the server to exit, and the archive
//	                      restored elsewhere reads the committed version.
//	TestDist              make dist for this platform twice: the same bytes
//	                      and the sum SHA256SUMS lists; the archive's files,
//	                      owners, modes and times; its binary's --version,
//	                      its serve answering /healthz and stopping on
//	                      SIGTERM; its systemd unit through systemd-analyze
//	                      verify (skipped where that is not installed).
//
// TestDist needs make and GNU tar, no database. The tests skip under
// -short, and unless SNAPSTORE_TEST_MYSQL_* (or, for TestPagila,
// SNAPSTORE_TEST_POSTGRES_*; for the cluster tests,
// SNAPSTORE_TEST_HBASE_THRIFT) are set (internal/testenv; `make test` sets
// them from scripts/mariadb.sh env, scripts/postgres.sh env and
// scripts/hbase-standalone.sh env). Run alone with:
//
//	set -a; eval "$(scripts/mariadb.sh env)"; eval "$(scripts/postgres.sh env)"; set +a
//	go test -count=1 -v ./tests/e2e
package e2e
