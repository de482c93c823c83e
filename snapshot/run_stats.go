package snapshot

import (
	"encoding/binary"
	"fmt"
)

// RunStats counts what one run did (D6).
//
// Rows counts the rows Put, Inserted/Updated/Unchanged classify them
// against the previous version, Deleted counts rows the source no longer
// has; BytesWritten is in bytes (row key + column + value + 8 per cell or
// marker written).
type RunStats struct {
	Rows         int64 `json:"rows"`
	Inserted     int64 `json:"inserted"`
	Updated      int64 `json:"updated"`
	Deleted      int64 `json:"deleted"`
	Unchanged    int64 `json:"unchanged"`
	BytesWritten int64 `json:"bytes_written"`
	// Checksum is an order-independent checksum of the version's rows, as
	// 16 hex digits.
	Checksum string `json:"checksum"`
}

// Stats returns the counts so far (live progress). Unlike the other
// methods of Run it may be called from any goroutine; while Put runs the
// counts lag by up to 1024 rows, after Commit or Abort they are final (a
// run's final Deleted count is known only at Commit).
func (r *Run) Stats() RunStats {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	return r.pub
}

// statsNow returns the exact counts; only the run's goroutine may call it.
func (r *Run) statsNow() RunStats {
	st := r.stats
	st.Checksum = fmt.Sprintf("%016x", r.sum)
	return st
}

// publishStats makes the counts so far visible to Stats.
func (r *Run) publishStats() {
	st := r.statsNow()
	r.pubMu.Lock()
	r.pub = st
	r.pubMu.Unlock()
}

// addChecksum folds the row just packed into r.enc into the checksum
// (D6): the sum modulo 2^64 of xxhash64 over, for each column in schema
// order, uvarint(len(name)) name uvarint(len(cell)) cell, cell being the
// cell value encoding (encoding.go: the packed value without its length).
func (r *Run) addChecksum() {
	r.sum += r.rowHash(func(i int) []byte { return r.enc[r.encOff[i]:r.encEnd[i]] })
}

// rowHash is a row's part of the checksum (addChecksum), cell(i) giving
// the packed value of schema column i.
func (r *Run) rowHash(cell func(i int) []byte) uint64 {
	// The small parts go through one buffer, hashed in one call; a long
	// value is hashed where it is.
	const direct = 4 << 10
	r.digest.Reset()
	buf := r.ckBuf[:0]
	for i, name := range r.cols {
		v := cell(i)
		kind, payload := v[:1], v[1:]
		switch Kind(v[0]) {
		case KindNull, KindInt, KindUint, KindFloat:
		default:
			_, n := binary.Uvarint(payload)
			payload = payload[n:]
		}
		buf = binary.AppendUvarint(buf, uint64(len(name)))
		buf = append(buf, name...)
		buf = binary.AppendUvarint(buf, uint64(1+len(payload)))
		buf = append(buf, kind...)
		if len(payload) > direct {
			r.digest.Write(buf)
			r.digest.Write(payload)
			buf = buf[:0]
			continue
		}
		buf = append(buf, payload...)
	}
	r.digest.Write(buf)
	r.ckBuf = buf
	return r.digest.Sum64()
}

// takeOut takes the previous version's row prev (nil: none) out of the
// counts and the checksum of a run of changes, before it is replaced or
// removed.
func (r *Run) takeOut(prev *resolvedRow) {
	if prev == nil {
		return
	}
	r.sum -= r.prevHash(prev)
	r.stats.Rows--
	r.stats.Unchanged--
}

// prevHash is the previous version's row prev's part of the checksum
// (D6), in a run of the previous version's schema.
func (r *Run) prevHash(prev *resolvedRow) uint64 {
	return r.rowHash(func(i int) []byte {
		if v := prev.value(r.dictOf[i]); v != nil {
			return v
		}
		return nullCell
	})
}

// nullCell is the packed value of a NULL, for a column a previous row
// holds no cell of.
var nullCell = appendColumnValue(nil, Value{Kind: KindNull})
