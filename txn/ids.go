package txn

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"

	"github.com/snapstore/snapstore/store"
)

// IDOptions configure IDs. Zero fields take the defaults given.
type IDOptions struct {
	// Table is the metadata table; default DefaultTable ("meta").
	Table string
	// BlockSize is the number of ids one Increment of the counter takes
	// (I1); default DefaultBlockSize.
	BlockSize int64
	// ReadOnly opens IDs that hand out none: Next returns ErrReadOnly.
	ReadOnly bool
	// Logger receives logs; nil discards.
	Logger *slog.Logger
}

// IDs hands out transaction ids (I1, I2) from the store's id counter, a
// block at a time, so that any number of processes on one store (HBase)
// never hand out one id twice. Safe for concurrent use.
type IDs struct {
	st     store.Store
	table  string
	block  int64
	ro     bool
	logger *slog.Logger

	// mu guards next and end, and is held across the store calls that take
	// a new block (once per block).
	mu        sync.Mutex
	next, end int64 // ids in [next, end) are this IDs' to hand out
}

// OpenIDs returns the ids of st. It reads nothing: the first Next takes a
// block.
func OpenIDs(st store.Store, opts IDOptions) *IDs {
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if opts.BlockSize <= 0 {
		opts.BlockSize = DefaultBlockSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &IDs{st: st, table: opts.Table, block: opts.BlockSize, ro: opts.ReadOnly, logger: opts.Logger}
}

// Next returns an id above above (I2), from this IDs' block, or from a new
// block when the block is used up or lies at or below above: the block
// given back by a clean Close, when nobody took a block since, or else
// the next block of the counter. An error leaves nothing taken that
// matters: ids of a block whose Increment failed ambiguously are skipped,
// never handed out twice.
func (m *IDs) Next(ctx context.Context, above int64) (int64, error) {
	if m.ro {
		return 0, ErrReadOnly
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next <= above {
		m.next = above + 1
	}
	if m.next >= m.end {
		if err := m.takeBlockLocked(ctx, above); err != nil {
			return 0, err
		}
	}
	id := m.next
	m.next++
	return id, nil
}

// takeBlockLocked sets [next, end) to a new block of ids above above.
func (m *IDs) takeBlockLocked(ctx context.Context, above int64) error {
	if start, end, ok := m.takeGift(ctx, above); ok {
		m.next, m.end = start, end
		m.logger.Debug("transaction ids: took the block given back", "start", start, "end", end)
		return nil
	}
	delta := m.block
	for range 3 {
		c, err := m.st.Increment(ctx, m.table, keyIDs, colCounter, delta)
		if err != nil {
			return fmt.Errorf("txn: taking a block of %d transaction ids: %w", delta, err)
		}
		// (c-delta, c] is ours: every id handed out before is at most
		// c-delta.
		start := max(c-delta+1, above+1, 1)
		if start <= c {
			m.next, m.end = start, c+1
			return nil
		}
		// The counter lay below the caller's ids (a store whose counter
		// was written by hand): move it past them.
		delta = above + m.block - c
	}
	return fmt.Errorf("%w: the id counter stays below %d", ErrCorrupt, above)
}

// takeGift takes the block a clean Close gave back, if nobody took a block
// since (the counter still ends it) and it lies above above; a gift that
// no longer holds is removed. Any error leaves the gift where it is.
func (m *IDs) takeGift(ctx context.Context, above int64) (start, end int64, ok bool) {
	g, found, err := m.readGift(ctx)
	if err != nil || !found {
		return 0, 0, false
	}
	c, err := m.st.Increment(ctx, m.table, keyIDs, colCounter, 0)
	if err != nil {
		return 0, 0, false
	}
	start, end = decodeGift(g)
	take := &store.Batch{Table: m.table}
	take.DeleteVersion(keyIDs, colGift, 0)
	applied, err := m.st.CheckAndMutate(ctx, take, store.Check{Column: colGift, Value: g})
	if err != nil || !applied {
		return 0, 0, false
	}
	if c != end-1 || start <= above || start >= end {
		return 0, 0, false // removed: another process took a block since it was given
	}
	return start, end, true
}

func (m *IDs) readGift(ctx context.Context) ([]byte, bool, error) {
	cells, err := m.st.Get(ctx, m.table, keyIDs, store.ReadOptions{Columns: [][]byte{colGift}, MaxVersions: 1})
	if err != nil {
		return nil, false, err
	}
	for _, c := range cells {
		if bytes.Equal(c.Column, colGift) && c.Kind == store.KindPut && len(c.Value) == 16 {
			return c.Value, true, nil
		}
	}
	return nil, false, nil
}

func decodeGift(g []byte) (start, end int64) {
	return int64(binary.BigEndian.Uint64(g)), int64(binary.BigEndian.Uint64(g[8:]))
}

// Close gives back the ids of this IDs' block not handed out, so that a
// clean restart does not skip a block (I1): only when nobody took a block
// since (the counter still ends this block) and no gift is waiting, with a
// conditional write. No Next may follow.
func (m *IDs) Close(ctx context.Context) error {
	if m.ro {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next, end := m.next, m.end
	m.next, m.end = 0, 0
	if next >= end {
		return nil
	}
	c, err := m.st.Increment(ctx, m.table, keyIDs, colCounter, 0)
	if err != nil {
		return fmt.Errorf("txn: giving back ids %d to %d: %w", next, end-1, err)
	}
	if c != end-1 {
		return nil
	}
	give := &store.Batch{Table: m.table}
	g := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(next)), uint64(end))
	give.Put(keyIDs, colGift, 0, g)
	if _, err := m.st.CheckAndMutate(ctx, give, store.Check{Column: colGift}); err != nil {
		return fmt.Errorf("txn: giving back ids %d to %d: %w", next, end-1, err)
	}
	m.logger.Debug("transaction ids: gave back the rest of the block", "start", next, "end", end)
	return nil
}

// Raise moves the counter up to at least n, so that no id up to n is
// handed out (opening a store written with format 1, Format1).
func (m *IDs) Raise(ctx context.Context, n int64) error {
	c, err := m.st.Increment(ctx, m.table, keyIDs, colCounter, 0)
	if err != nil {
		return fmt.Errorf("txn: reading the id counter: %w", err)
	}
	if c >= n {
		return nil
	}
	if _, err := m.st.Increment(ctx, m.table, keyIDs, colCounter, n-c); err != nil {
		return fmt.Errorf("txn: raising the id counter to %d: %w", n, err)
	}
	return nil
}
