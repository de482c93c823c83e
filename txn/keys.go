package txn

// Rows of package txn in the metadata table, all in this one file. Every
// row of package txn starts with "t\x00"; package snapshot keeps other
// prefixes in the same table, and the transaction sets of each dataset in
// its own row (State).
//
//	row "t\x00ids"   counter "next"  the id counter (store.S8): no id above it was handed out
//	                 column  "gift"  a block given back at Close: start, end (8 bytes big-endian each)
//
// Format 1, read only to migrate it (Format1), all at timestamp 0:
//
//	row "t\x00hwm"                 column "v"      the id high-water mark, 8 bytes big-endian
//	row "t\x00ip\x00"  + id (8 BE) column "owner"  one in-progress transaction
//	row "t\x00inv\x00" + id (8 BE) column "owner"  one invalid transaction
var (
	keyIDs     = []byte("t\x00ids")
	colCounter = []byte("next")
	colGift    = []byte("gift")

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

// DefaultBlockSize is how many ids one increment of the counter takes.
const DefaultBlockSize = 1000
