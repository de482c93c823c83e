package snapshot

import (
	"encoding/binary"
	"strconv"
)

// Storage layout, all in this one file (etcd keeps its buckets in one file,
// server/storage/schema/bucket.go).
//
// Metadata table (txn.DefaultTable, "meta"), timestamp 0 everywhere; package
// txn owns the rows starting with "t\x00":
//
//	"s\x00ds\x00" + dataset                      "cfg"  JSON datasetConfig
//	                                             "cur"  current version, 8 bytes big-endian
//	                                             "exp"  expired versions whose cells may still
//	                                                    be visible, 8 bytes big-endian each
//	"s\x00ver\x00" + dataset + "\x00" + v (8 BE) "info" JSON VersionInfo of a kept version
//	                                             "dgst" the source's digest of the version,
//	                                                    opaque to snapshot (verify.go)
//	"s\x00tag\x00" + dataset + "\x00" + tag      "v"    tagged version, 8 bytes big-endian
//	"s\x00rec\x00" + kind + "\x00" + name        "v"    a Record's value
//	"s\x00lease"                                 "v"    JSON writer lease: owner, expires (doc.go W1)
//
// Data tables, one per dataset partition: "r/" + dataset + "/" + partition
// (decimal). Row = encoded key (encoding.go), column "", timestamp = the
// writing run's transaction id, value = the packed row version
// (rowversion.go); or a row delete marker there.
//
// Data tables of storage format 1, read only to migrate them (format1.go):
// "d/" + dataset + "/" + partition, one cell per column, column = column
// name.
//
// Scratch tables, one per partition, for phase B of a run (doc.go D5): "x/"
// + dataset + "/" + partition; row = encoded key, column = 8-byte
// big-endian sequence number of the Put, timestamp = the run's id, empty
// value. A run that wrote one clears it when it ends; one that may still
// hold keys (the clear failed, or the process died) is cleared before the
// dataset's next run (scratch.go).
var (
	prefixDataset = []byte("s\x00ds\x00")
	prefixVersion = []byte("s\x00ver\x00")
	prefixTag     = []byte("s\x00tag\x00")
	prefixRecord  = []byte("s\x00rec\x00")
	keyLease      = []byte("s\x00lease")
	colCfg        = []byte("cfg")
	colCur        = []byte("cur")
	colExp        = []byte("exp")
	colInfo       = []byte("info")
	colDigest     = []byte("dgst")
	colV          = []byte("v")
)

func datasetKey(name string) []byte { return append(append([]byte{}, prefixDataset...), name...) }

func versionPrefix(name string) []byte {
	k := append(append([]byte{}, prefixVersion...), name...)
	return append(k, 0)
}

func versionKey(name string, v int64) []byte {
	return binary.BigEndian.AppendUint64(versionPrefix(name), uint64(v))
}

func tagPrefix(name string) []byte {
	k := append(append([]byte{}, prefixTag...), name...)
	return append(k, 0)
}

func tagKey(name, tag string) []byte { return append(tagPrefix(name), tag...) }

func recordPrefix(kind string) []byte {
	k := append(append([]byte{}, prefixRecord...), kind...)
	return append(k, 0)
}

func recordKey(kind, name string) []byte { return append(recordPrefix(kind), name...) }

func dataTable(dataset string, p int) string    { return "r/" + dataset + "/" + strconv.Itoa(p) }
func format1Table(dataset string, p int) string { return "d/" + dataset + "/" + strconv.Itoa(p) }
func scratchTable(dataset string, p int) string { return "x/" + dataset + "/" + strconv.Itoa(p) }

// prefixEnd returns the smallest key greater than every key with prefix p,
// or nil when there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	e := append([]byte{}, p...)
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] != 0xff {
			e[i]++
			return e[:i+1]
		}
	}
	return nil
}

func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func encodeIDs(ids []int64) []byte {
	b := make([]byte, 0, 8*len(ids))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	return b
}

func decodeIDs(b []byte) ([]int64, bool) {
	if len(b)%8 != 0 {
		return nil, false
	}
	ids := make([]int64, 0, len(b)/8)
	for i := 0; i < len(b); i += 8 {
		ids = append(ids, int64(binary.BigEndian.Uint64(b[i:])))
	}
	return ids, true
}
