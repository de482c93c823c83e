// Package records keeps named documents in the metadata table of a store:
// one row per record, its value in one column and an optional counter in
// another, for the packages that persist small state of their own (data
// connections and adapters through package snapshot, the node list and
// the partition table of a cluster) without building storage keys
// themselves.
//
// A record is named by a kind and a name, neither empty nor holding NUL.
// Its row is "s\x00rec\x00" + kind + "\x00" + name in the metadata table
// (docs/storage-format.md), at timestamp 0; column "v" holds its value,
// column "n" its counter (store.S8).
package records
