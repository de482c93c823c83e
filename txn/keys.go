package txn

import "encoding/binary"

// Row keys of the txn state in the metadata table, all in this one file.
// Every row of package txn starts with "t\x00"; package snapshot keeps other
// prefixes in the same table.
var (
	keyHWM           = []byte("t\x00hwm")
	prefixInProgress = []byte("t\x00ip\x00")
	prefixInvalid    = []byte("t\x00inv\x00")
	prefixTxn        = []byte("t\x00")
	prefixTxnEnd     = []byte("t\x01")
	colValue         = []byte("v")
	colOwner         = []byte("owner")
)

// DefaultTable is the metadata table's name.
const DefaultTable = "meta"

// DefaultBlockSize is how many ids one durable raise of the high-water mark
// covers.
const DefaultBlockSize = 1000

func idKey(prefix []byte, id int64) []byte {
	k := make([]byte, len(prefix), len(prefix)+8)
	copy(k, prefix)
	return binary.BigEndian.AppendUint64(k, uint64(id))
}
