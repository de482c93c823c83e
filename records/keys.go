package records

// The rows of records in the metadata table.
var (
	prefixRecord = []byte("s\x00rec\x00")
	colValue     = []byte("v")
	colCounter   = []byte("n")
)

// prefix returns the first bytes of every row of kind.
func prefix(kind string) []byte {
	k := append(append([]byte{}, prefixRecord...), kind...)
	return append(k, 0)
}

// key returns the row of record kind/name.
func key(kind, name string) []byte { return append(prefix(kind), name...) }

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
