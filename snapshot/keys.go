package snapshot

import (
	"encoding/binary"
	"strconv"
)

// Storage layout, all in this one file (etcd keeps its buckets in one file,
// server/storage/schema/bucket.go).
//
// Metadata table (txn.DefaultTable, "meta"), timestamp 0 everywhere; package
// txn owns the rows starting with "t\x00" (the id counter):
//
//	"s\x00format"                                "v"     the storage format, 8 bytes big-endian (3)
//	"s\x00ds\x00" + dataset                      "state" JSON rowState: everything that changes
//	                                                    together for the dataset (datasetrow.go)
//	"s\x00ver\x00" + dataset + "\x00" + v (8 BE) "info"  JSON VersionInfo of version v, written
//	                                                    before the state references it
//	                                                    (versionrow.go)
//	                                             "dgst"  the source's digest of the version,
//	                                                    opaque to snapshot (verify.go)
//	                                             "dgst/" + n  the digest of table number n
//	                                                    of a dataset of named tables
//	"s\x00rec\x00" + kind + "\x00" + name        "v"     a Record's value (package records)
//	                                             "n"     a Record's counter (IncrementRecord; store.S8)
//	                                             the records of kind "pin/" + dataset are the
//	                                                    pins of Readers (pins.go, doc G8)
//	"s\x00jnl\x00" + kind + "\x00" + rt (8 BE) + r (8) "v"   a journal entry's value (journal.go):
//	                                                    rt = MaxUint64 - (UnixNano with its sign
//	                                                    bit flipped), newest first; r random
//
// Format 1 (migrate.go reads it once): the dataset row held "cfg" (JSON
// datasetConfig), "cur" (current version) and "exp" (expired ids), one row
// per tag ("s\x00tag\x00" + dataset + "\x00" + tag, "v"), package txn one
// row per transaction, and "s\x00lease" the process-wide writer lease.
//
// Data tables, one per dataset partition: "r/" + dataset + "/" + partition
// (decimal) for a dataset of one table; "r/" + dataset + "/t" + n + "/" +
// partition for table number n (decimal, from 1; tableConfig.Num) of a
// dataset of named tables (tables.go), so that a table's name never
// enters a key. Row = encoded key (encoding.go), column "", timestamp = the
// writing run's transaction id, value = the packed row version
// (rowversion.go); or a row delete marker there.
//
// Data tables of storage formats 1 and 2, read only to migrate them
// (migrate_rows.go): "d/" + dataset + "/" + partition, one cell per
// column, column = column name.
//
// Scratch tables, one per partition, for phase B of a run (doc.go D5): "x/"
// + dataset + "/" + partition, or "x/" + dataset + "/t" + n + "/" +
// partition for table number n; row = the run's id (8 bytes big-endian) +
// encoded key, column = 8-byte big-endian sequence number of the Put,
// timestamp = the run's id, empty value. A run reads only its own rows
// (its id's prefix and timestamp), so rows another run left there
// cannot count as seen; scratch.go says when they are cleared.
var (
	keyFormat     = []byte("s\x00format")
	prefixDataset = []byte("s\x00ds\x00")
	prefixVersion = []byte("s\x00ver\x00")
	prefixJournal = []byte("s\x00jnl\x00")
	colState      = []byte("state")
	colInfo       = []byte("info")
	colDigest     = []byte("dgst")
	colV          = []byte("v")

	// Format 1.
	prefixTag1 = []byte("s\x00tag\x00")
	keyLease1  = []byte("s\x00lease")
	colCfg1    = []byte("cfg")
	colCur1    = []byte("cur")
	colExp1    = []byte("exp")
)

// metaFormat is the storage format this code writes (docs/storage-format.md
// lists them all): 1, metadata in rows of their own (migrate.go reads it
// once); 2, one metadata row per dataset, data one cell per column; 3, the
// same metadata row, data one cell per row version (rowversion.go). The
// store records it at keyFormat, and each dataset's row in rowState.Format.
const metaFormat = 3

func datasetKey(name string) []byte { return append(append([]byte{}, prefixDataset...), name...) }

func versionPrefix(name string) []byte {
	k := append(append([]byte{}, prefixVersion...), name...)
	return append(k, 0)
}

func versionKey(name string, v int64) []byte {
	return binary.BigEndian.AppendUint64(versionPrefix(name), uint64(v))
}

func tagPrefix1(name string) []byte {
	k := append(append([]byte{}, prefixTag1...), name...)
	return append(k, 0)
}

func journalPrefix(kind string) []byte {
	k := append(append([]byte{}, prefixJournal...), kind...)
	return append(k, 0)
}

func dataTable(dataset string, p int) string    { return "r/" + dataset + "/" + strconv.Itoa(p) }
func columnTable(dataset string, p int) string  { return "d/" + dataset + "/" + strconv.Itoa(p) }
func scratchTable(dataset string, p int) string { return "x/" + dataset + "/" + strconv.Itoa(p) }

// tableDataTable and tableScratchTable name partition p of table number n
// of a dataset of named tables.
func tableDataTable(dataset string, n, p int) string {
	return "r/" + dataset + "/t" + strconv.Itoa(n) + "/" + strconv.Itoa(p)
}

func tableScratchTable(dataset string, n, p int) string {
	return "x/" + dataset + "/t" + strconv.Itoa(n) + "/" + strconv.Itoa(p)
}

// tableDigestColumn is the column of table number n's source digest in a
// version row.
func tableDigestColumn(n int) []byte { return []byte("dgst/" + strconv.Itoa(n)) }

// scratchRow returns the scratch row of key for run id.
func scratchRow(dst []byte, id int64, key []byte) []byte {
	return append(binary.BigEndian.AppendUint64(dst, uint64(id)), key...)
}

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
