package source

import (
	"fmt"
	"slices"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

const (
	DefaultChunkRows      = 5000
	DefaultConnectTimeout = 10 * time.Second
)

// KeyKindOK reports whether a column of kind k can be part of a row key:
// JSON, arrays, geometry and NULL columns cannot.
func KeyKindOK(k snapshot.Kind) bool {
	return k != snapshot.KindJSON && k != snapshot.KindArray && k != snapshot.KindGeometry && k != snapshot.KindNull
}

// UniqueKeyOf reports whether explicit key columns are those of a unique
// index, in any order: the index makes the rows unique whatever order
// the key reads its columns in.
func UniqueKeyOf(index, explicit []string) bool {
	if len(index) != len(explicit) {
		return false
	}
	a, b := slices.Clone(index), slices.Clone(explicit)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// RangesRefused says why key ranges of a table keyed by schema.Key
// cannot be checksummed and read alone (Checksummer.Chunkable), as far as
// the key's uniqueness goes; "" when they can: unique, when a unique index
// of the source declares the key; else every key column NOT NULL. A range
// (lo, hi] holds every row whose key falls in it, so a duplicate key
// lands in one range, whose checksum then differs from the one recorded
// of its rows when they were last read (every row read: each key was
// unique), and a run reads that range and finds the duplicate. A NULL key
// falls in no range (k > lo and k <= hi are not true of NULL), and would
// go unread.
func RangesRefused(schema snapshot.Schema, unique bool) string {
	if unique {
		return ""
	}
	if len(schema.Key) == 0 {
		return "the table has no key"
	}
	for _, k := range schema.Key {
		i := slices.IndexFunc(schema.Columns, func(c snapshot.Column) bool { return c.Name == k })
		if i < 0 || schema.Columns[i].Nullable {
			return fmt.Sprintf("key column %s may be NULL and no unique index declares the key", k)
		}
	}
	return ""
}

// KeyOrderRefused is why a table's key ranges cannot be read alone when
// its key column col, of the source's type typ, orders in the source
// otherwise than snapstore's key encoding of its values; allowed lists
// the types whose order agrees, for the reader to choose a key among.
func KeyOrderRefused(col, typ, allowed string) string {
	return fmt.Sprintf("key column %s (%s) orders in the source otherwise than by its encoded value (ranges need %s)", col, typ, allowed)
}
