// Package pebble is snapstore's embedded store.Store backend, on one
// CockroachDB Pebble database (github.com/cockroachdb/pebble/v2) per
// process.
//
// # Key encoding
//
// Every table of the process lives in the one Pebble keyspace; the table
// name is a key prefix, so a dataset (and a partition of it, named like
// "d/films/0") is a contiguous key range that one DeleteRange drops. Each
// cell version is one Pebble key:
//
//	key   = esc(table) 00 01 | esc(row) 00 01 | esc(column) 00 01 | ^ts (8 bytes, big-endian)
//	value = kind (1 byte: 1 put, 2 delete-column, 3 delete-row) | value bytes
//
// esc is the order-preserving bytes encoding of CockroachDB
// (pkg/util/encoding, EncodeBytesAscending): every 0x00 byte becomes
// 0x00 0xFF, and 0x00 0x01 terminates the string. So an escaped string never
// contains 00 01, no encoded string is a prefix of another, and encoded
// strings sort exactly as the raw bytes do ("a" < "a\x00" < "a\x01" < "ab").
// Hence keys sort by table, then row, then column (the store.S5 order), and
// table "a" can never read a key of table "ab" ("a" 00 01 vs "a" "b"). ^ts is
// the bitwise complement of the non-negative timestamp, so that within a
// column the newest version comes first. A row delete marker is stored in
// column "" (encoded as just 00 01), which sorts before every other column
// of its row.
//
// The cell kind lives in the value, not in the key, so that one coordinate
// (table, row, column, timestamp) is exactly one Pebble key: writing it again
// with another kind replaces it (store.S4), and a DeleteVersion, which names no
// kind, deletes it with one point tombstone.
//
// Worked example: the title of row key 00 2a (an order-preserving encoding of
// the integer 42 written by package snapshot) in table "d/films/0", written
// by transaction 7 with the value "ALIEN":
//
//	64 2f 66 69 6c 6d 73 2f 30   "d/films/0"
//	00 01                        end of table
//	00 ff 2a                     row 00 2a, its 00 escaped
//	00 01                        end of row
//	74 69 74 6c 65               "title"
//	00 01                        end of column
//	ff ff ff ff ff ff ff f8      ^7
//	value: 01 41 4c 49 45 4e     put, "ALIEN"
//
// A row delete marker of the same row at transaction 7 has the key
// 64 2f 66 69 6c 6d 73 2f 30 00 01 00 ff 2a 00 01 00 01 ff ff ff ff ff ff ff f8
// and the value 03. The reserved key 00 01 "storage-format" (the encoding of
// the empty table name, which store.CheckTable rejects) holds the format
// version "2"; Open refuses any other with ErrIncompatibleFormat, and
// upgrades a directory of format 1 (format.go). docs/storage-format.md
// draws the same layout.
//
// # Pebble options
//
// The comparer (comparer.go) orders keys bytewise and splits them after
// the row, so bloom filters hold rows and a point read (Get, VisitRow)
// positions its iterator with SeekPrefixGE. The upper levels use MinLZ
// (Snappy on arm64), the two lowest, which hold nearly all the data,
// Zstandard level 1 with larger blocks (options.go).
//
// A counter (store.S8) is one key in the reserved space too, outside every
// table: 00 01 "counter" 00 01 | esc(table) 00 01 | esc(row) 00 01 |
// esc(column) 00 01, its value the counter as 8 bytes big-endian.
// DeleteRange removes the counters of its rows in the same batch as their
// cells.
//
// # Writes and durability
//
// Apply writes one Pebble batch (atomic, store.S1), encoding each key directly
// into the batch's memory (Batch.SetDeferred), so a large batch costs no
// allocation per mutation. MutateRow is an Apply with pebble.Sync (store.S6).
// CheckAndMutate and Increment read and write under a lock that every write
// takes shared and they take alone (store.S7, store.S8): one process owns
// a Pebble directory, so that lock orders every write of the store. A batch with Sync is committed with pebble.Sync;
// without it, pebble.NoSync: the batch is in the WAL but not fsynced, which
// is what an uncommitted run needs (DESIGN "Limits"). Sync fsyncs the WAL.
//
// # Reads
//
// Get, VisitRow and Scan read through a Pebble iterator, a point-in-time view taken
// when the call starts (store.S3). Reads are raw: markers are returned, nothing is
// masked. The time range, MaxVersions and column filter are applied while
// iterating; a run of unwanted versions longer than a few keys is skipped by
// seeking (as RocksDB's max_sequential_skip_in_iterations), and unwanted
// columns by seeking to the next wanted one. A cell at store.MaxTimestamp is
// included when the range's Max is store.MaxTimestamp (HBase's allTime). A
// Scan whose range has a lower bound also skips the SSTables and blocks
// that hold no cell of it, by their recorded cell time intervals
// (timefilter.go), on an iterator of its own outside the pool.
//
// An open iterator pins the Pebble state it reads (memtables and sstables
// that compactions have since replaced), so a long-lived iterator holds
// memory and disk space until it is closed.
//
// Pebble iterators are reused: a closed one (of a Get or a Scan) goes back
// to a small pool while no write has happened since it was opened, and the
// next read rebounds it (Iterator.SetBounds) instead of opening one. Every
// Apply and DeleteRange closes the pooled iterators and stops older ones
// from being pooled, so a read still sees every write that returned before
// it began (store.S3); so do the end of a flush or compaction, so that idle
// iterators pin no replaced files for long. Store.DB disables the reuse,
// since writes through it bypass the store.
//
// # Concurrency and closing
//
// A Store is safe for concurrent use; an Iterator is not. Close waits for
// calls in flight, then closes every iterator still open: their Next returns
// false and Err wraps store.ErrClosed. Every method returns store.ErrClosed
// after Close.
package pebble
