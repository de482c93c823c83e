package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	cpebble "github.com/cockroachdb/pebble/v2"

	"github.com/snapstore/snapstore/store"
)

// MutateRow implements store.Store: the row's mutations are one Pebble
// batch, applied with pebble.Sync (store.S6).
func (s *Store) MutateRow(ctx context.Context, b *store.Batch) error {
	if _, err := store.CheckRowBatch(b); err != nil {
		return fmt.Errorf("pebble: mutating a row: %w", err)
	}
	s.cond.RLock()
	defer s.cond.RUnlock()
	return s.apply(ctx, b, true)
}

// CheckAndMutate implements store.Store: under cond, held alone, it reads
// the newest version of the checked column and, when it matches, applies b
// with pebble.Sync (store.S7). No other write of the store runs between
// the two, since every write holds cond.
func (s *Store) CheckAndMutate(ctx context.Context, b *store.Batch, check store.Check) (bool, error) {
	row, err := store.CheckRowBatch(b)
	if err != nil {
		return false, fmt.Errorf("pebble: checking and mutating a row: %w", err)
	}
	if row == nil {
		return false, fmt.Errorf("pebble: checking and mutating a row of %q: %w: no mutation", b.Table, store.ErrInvalidArgument)
	}
	s.cond.Lock()
	defer s.cond.Unlock()
	cells, err := s.Get(ctx, b.Table, row, store.ReadOptions{Columns: [][]byte{check.Column}, MaxVersions: 1})
	if err != nil {
		return false, fmt.Errorf("pebble: checking a row: %w", err)
	}
	if !checkHolds(cells, check) {
		return false, nil
	}
	if err := s.apply(ctx, b, true); err != nil {
		return false, err
	}
	return true, nil
}

// checkHolds applies a Check to the cells a Get of its column returned
// (row delete markers, column "", come with every column filter).
func checkHolds(cells []store.Cell, check store.Check) bool {
	for _, c := range cells {
		if !bytes.Equal(c.Column, check.Column) {
			continue
		}
		// The first cell of the column is its newest version.
		return !check.Absent() && c.Kind == store.KindPut && bytes.Equal(c.Value, check.Value)
	}
	return check.Absent()
}

// Increment implements store.Store: under cond, held alone, it reads the
// counter's key and writes the sum with pebble.Sync (store.S8); delta 0
// writes nothing.
func (s *Store) Increment(ctx context.Context, table string, row, column []byte, delta int64) (int64, error) {
	if err := store.CheckTable(table); err != nil {
		return 0, fmt.Errorf("pebble: incrementing a counter: %w", err)
	}
	if len(row) == 0 {
		return 0, fmt.Errorf("pebble: incrementing a counter of %q: %w: empty row key", table, store.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("pebble: incrementing a counter of %q: %w", table, err)
	}
	s.cond.Lock()
	defer s.cond.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, fmt.Errorf("pebble: incrementing a counter of %q: %w", table, store.ErrClosed)
	}
	key := appendCounterKey(nil, table, row, column)
	var n int64
	v, closer, err := s.db.Get(key)
	switch {
	case errors.Is(err, cpebble.ErrNotFound):
	case err != nil:
		return 0, fmt.Errorf("pebble: reading a counter of %q: %w", table, err)
	default:
		if len(v) != 8 {
			closer.Close()
			return 0, fmt.Errorf("pebble: counter of %q: %w", table, errCorruptKey)
		}
		n = int64(binary.BigEndian.Uint64(v))
		closer.Close()
	}
	if delta == 0 {
		return n, nil
	}
	n += delta
	if err := s.db.Set(key, binary.BigEndian.AppendUint64(nil, uint64(n)), cpebble.Sync); err != nil {
		return 0, fmt.Errorf("pebble: incrementing a counter of %q: %w", table, err)
	}
	return n, nil
}
