package source

import (
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
