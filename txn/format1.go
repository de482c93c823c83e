package txn

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/snapstore/snapstore/store"
)

// Format1 is the transaction state of a store written with metadata
// format 1 (keys.go): a high-water mark and one row per transaction in
// progress or invalid, named by its owner. Package snapshot reads it once,
// moves each owner's sets into the owner's row and deletes it.
type Format1 struct {
	// HighWater is the persisted high-water mark: no id at or above it was
	// handed out (0 when absent).
	HighWater int64
	// InProgress and Invalid map each owner to its ids, ascending.
	InProgress, Invalid map[string][]int64
	// MaxID is the largest id of the two sets.
	MaxID int64
	// Found reports whether any row of format 1 was there.
	Found bool
}

// ReadFormat1 reads the transaction state of format 1 from table.
func ReadFormat1(ctx context.Context, st store.Store, table string) (Format1, error) {
	f := Format1{InProgress: map[string][]int64{}, Invalid: map[string][]int64{}}
	it, err := st.Scan(ctx, table, store.ScanOptions{Start: prefixTxn, End: prefixTxnEnd})
	if err != nil {
		return f, fmt.Errorf("txn: reading format-1 state: %w", err)
	}
	for it.Next() {
		c := it.Cell()
		if c.Kind != store.KindPut {
			continue
		}
		switch {
		case bytes.Equal(c.Row, keyHWM) && bytes.Equal(c.Column, colValue):
			if len(c.Value) != 8 {
				it.Close()
				return f, fmt.Errorf("%w: high-water mark of %d bytes", ErrCorrupt, len(c.Value))
			}
			f.HighWater = int64(binary.BigEndian.Uint64(c.Value))
			f.Found = true
		case bytes.HasPrefix(c.Row, prefixInProgress), bytes.HasPrefix(c.Row, prefixInvalid):
			set, p := f.InProgress, prefixInProgress
			if bytes.HasPrefix(c.Row, prefixInvalid) {
				set, p = f.Invalid, prefixInvalid
			}
			if len(c.Row) != len(p)+8 {
				it.Close()
				return f, fmt.Errorf("%w: txn row %q", ErrCorrupt, c.Row)
			}
			id := int64(binary.BigEndian.Uint64(c.Row[len(p):]))
			set[string(c.Value)] = append(set[string(c.Value)], id)
			f.MaxID = max(f.MaxID, id)
			f.Found = true
		}
	}
	if err := it.Close(); err != nil {
		return f, fmt.Errorf("txn: reading format-1 state: %w", err)
	}
	return f, nil
}

// DeleteFormat1 deletes the rows of format 1 that f was read from, in one
// idempotent batch; what was written meanwhile is not there (no process
// writes format 1 once format 2 is recorded).
func DeleteFormat1(ctx context.Context, st store.Store, table string, f Format1) error {
	b := &store.Batch{Table: table, Sync: true}
	b.DeleteVersion(keyHWM, colValue, 0)
	key := func(p []byte, id int64) []byte { return binary.BigEndian.AppendUint64(bytes.Clone(p), uint64(id)) }
	for _, ids := range f.InProgress {
		for _, id := range ids {
			b.DeleteVersion(key(prefixInProgress, id), colOwner, 0)
		}
	}
	for _, ids := range f.Invalid {
		for _, id := range ids {
			b.DeleteVersion(key(prefixInvalid, id), colOwner, 0)
		}
	}
	if err := st.Apply(ctx, b); err != nil {
		return fmt.Errorf("txn: deleting format-1 state: %w", err)
	}
	return nil
}
