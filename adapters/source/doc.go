// Package source is the contract between snapstore and the databases it
// reads, after database/sql/driver and Prometheus' discovery: a Connector
// per connection type, registered by name (Register) from the init function
// of its own package (adapters/mysql, adapters/postgres, adapters/sqlite,
// adapters/snapstore, all imported by adapters/install), and its optional
// read options of an adapter (ReadOptioner); the Source it opens, with optional
// capabilities found by type assertion (Tester, ResourceLister, IdleCloser,
// PointOpener, SnapshotSharer, Checksummer, DiffReader); the TableReader a
// run reads rows from; the tables an adapter selects (SelectTables) and
// the Point they are read at together; and
// what the connectors share: typed options and secrets, pool limits, the
// keyset pagination of their table readers (Keyset), and the SourceError
// of a failed connect.
package source
