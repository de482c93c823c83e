package pebble

import (
	cpebble "github.com/cockroachdb/pebble/v2"
)

// comparerName is the name of the key order recorded in a database of
// storage format 2 and later; Pebble refuses to open a database with
// another comparer than the one that created it.
const comparerName = "snapstore.CellKey"

// comparer orders keys bytewise, as Pebble's default comparer does (the
// order of the key encoding, store.S5), and splits each cell key after its
// row: the prefix is esc(table) 00 01 esc(row) 00 01, the suffix the column
// and the timestamp. Pebble builds its bloom filters over prefixes and
// SeekPrefixGE reads one prefix, so a point read of a row skips every
// SSTable whose filter says the row is not there (the role of
// CockroachDB's MVCC key split, at a row's granularity because a Get reads
// every column of one row).
var comparer = func() *cpebble.Comparer {
	c := *cpebble.DefaultComparer
	c.Split = splitRow
	c.Name = comparerName
	return &c
}()

// splitRow returns the length of key's prefix through the terminator of
// its row. A key with fewer than two terminated segments (the reserved
// format key, a bound made by prefixEnd) is all prefix.
//
// Pebble's requirements (base.Split) hold because the escaping makes
// prefixes prefix-free: two keys whose prefixes differ compare as their
// prefixes do, and keys of one prefix compare as their suffixes do.
func splitRow(key []byte) int {
	n := 0
	for range 2 {
		end, _, ok := findTerm(key[n:])
		if !ok {
			return len(key)
		}
		n += end
	}
	return n
}
