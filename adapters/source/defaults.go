package source

import (
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
