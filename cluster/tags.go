package cluster

import (
	"fmt"
	"strconv"

	"github.com/hashicorp/memberlist"
)

// The serf tag keys of a node. Short, since every byte is gossiped with
// every membership message (K7).
const (
	tagAPI         = "api"  // advertised HTTP API address host:port
	tagTransfer    = "xfer" // transfer address of partitioned runs (cluster/transfer); unset without one
	tagWeight      = "w"    // placement weight, decimal
	tagZone        = "zone" // failure zone, may be empty
	tagVersion     = "v"    // build version
	tagIncarnation = "inc"  // incarnation of the process (K1)
	tagState       = "st"   // the state the node declares: joining, active, draining
	tagRuns        = "run"  // runs in progress on the node, decimal
)

// Bounds of the tag values, checked by Config.Validate so that the whole
// set stays within serf's limit (K7).
const (
	maxAddrLen    = 64 // host:port; a DNS name, IPv6 literal and port fit
	maxZoneLen    = 64
	maxVersionLen = 64
	maxRuns       = 999999 // runs in progress told; more are told as this
	// MaxTagBytes is serf's limit on a node's encoded tags.
	MaxTagBytes = memberlist.MetaMaxSize
)

// Tags is what a node tells the others about itself through serf.
type Tags struct {
	// API is the advertised address of the node's HTTP API, host:port.
	API string
	// Transfer is the address the rows of partitioned runs are sent to
	// (cluster/transfer); empty when the node has no transfer listener.
	Transfer string
	// Weight is the node's placement weight (rendezvous.go), 1 to 10000.
	Weight int
	// Zone is the node's failure zone; may be empty.
	Zone string
	// Version is the build version of the node's binary.
	Version string
	// Incarnation is the process's random incarnation (K1).
	Incarnation string
	// State is the state the node declares for itself: joining, active or
	// draining. Failed and left are what the others conclude.
	State State
	// Runs is how many runs the node is running (at most 999999).
	Runs int
}

// encode returns the serf tag map; empty values are left out.
func (t Tags) encode() map[string]string {
	m := map[string]string{
		tagWeight:      strconv.Itoa(t.Weight),
		tagIncarnation: t.Incarnation,
		tagState:       t.State.String(),
		tagRuns:        strconv.Itoa(min(max(t.Runs, 0), maxRuns)),
	}
	for k, v := range map[string]string{tagAPI: t.API, tagTransfer: t.Transfer, tagZone: t.Zone, tagVersion: t.Version} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// decodeTags reads the tags another node sent. It is lenient: a node of
// another version may send keys this one does not know (kept in the raw
// map by the caller) or values it cannot parse (zero here).
func decodeTags(m map[string]string) Tags {
	t := Tags{
		API:         m[tagAPI],
		Transfer:    m[tagTransfer],
		Zone:        m[tagZone],
		Version:     m[tagVersion],
		Incarnation: m[tagIncarnation],
		State:       Joining,
	}
	if w, err := strconv.Atoi(m[tagWeight]); err == nil && w > 0 {
		t.Weight = w
	}
	if s, err := ParseState(m[tagState]); err == nil && s.declarable() {
		t.State = s
	}
	if n, err := strconv.Atoi(m[tagRuns]); err == nil && n > 0 {
		t.Runs = n
	}
	return t
}

// tagBytesBound is an upper bound of the size of serf's encoding of tags
// (one magic byte, then msgpack): a map header of at most 3 bytes, and for
// every key and value at most 3 header bytes and its bytes.
func tagBytesBound(tags map[string]string) int {
	n := 1 + 3
	for k, v := range tags {
		n += 3 + len(k) + 3 + len(v)
	}
	return n
}

// worstTags are the largest tags a valid configuration can produce: every
// value at its bound.
func worstTags() map[string]string {
	long := func(n int) string { return fmt.Sprintf("%0*d", n, 0) }
	return Tags{
		API: long(maxAddrLen), Transfer: long(maxAddrLen), Weight: maxWeight,
		Zone: long(maxZoneLen), Version: long(maxVersionLen), Incarnation: newIncarnation(), State: Draining, Runs: maxRuns,
	}.encode()
}
