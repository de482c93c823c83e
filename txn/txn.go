package txn

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/store"
)

// Errors of package txn; check with errors.Is.
var (
	// ErrUnknownTxn is returned by Commit and Abort for an id that is not in
	// progress (never begun, already committed or aborted).
	ErrUnknownTxn = errors.New("txn: transaction not in progress")
	// ErrInvalidArgument is returned for bad input: a batch for another
	// table, a non-positive id, an empty owner.
	ErrInvalidArgument = errors.New("txn: invalid argument")
	// ErrCorrupt is returned by Open when the persisted state cannot be
	// decoded.
	ErrCorrupt = errors.New("txn: corrupt state")
	// ErrReadOnly is returned by Begin, Commit, Abort, Invalidate and Prune
	// of a Manager opened with Options.ReadOnly (I7).
	ErrReadOnly = errors.New("txn: read-only manager")
)

// Options configure a Manager. Zero fields take the defaults given.
type Options struct {
	// Table is the metadata table; default DefaultTable ("meta").
	Table string
	// BlockSize is the number of ids covered by one durable raise of the
	// high-water mark (I1); default DefaultBlockSize.
	BlockSize int64
	// ReadOnly opens a Manager that writes nothing (I7): Open leaves
	// in-progress transactions of other processes as they are (excluded,
	// not invalidated), Refresh reloads both sets from the store, and every
	// write returns ErrReadOnly.
	ReadOnly bool
	// Logger receives logs with key txn; nil discards.
	Logger *slog.Logger
	// Registerer registers snapstore_txn_in_progress_transactions and
	// snapstore_txn_invalid_transactions (gauges); nil registers none.
	// Close unregisters them.
	Registerer prometheus.Registerer
}

// Manager allocates transaction ids and keeps the in-progress and invalid
// sets (Tephra's TransactionManager). Safe for concurrent use.
type Manager struct {
	st     store.Store
	table  string
	block  int64
	ro     bool
	logger *slog.Logger
	reg    prometheus.Registerer
	colls  []prometheus.Collector

	// hwmMu serialises raises of the durable high-water mark; it is taken
	// before mu and held across that one synced write (once per block).
	hwmMu sync.Mutex
	// mu guards the fields below; it is never held across I/O.
	mu struct {
		sync.Mutex
		next       int64            // next id to hand out
		hwm        int64            // durable: ids < hwm may be handed out
		inProgress map[int64]string // id -> owner
		invalid    map[int64]string // id -> owner
	}
}

// Open loads the state from st, turns every in-progress transaction into an
// invalid one durably (I5), and returns the Manager.
func Open(ctx context.Context, st store.Store, opts Options) (*Manager, error) {
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if opts.BlockSize <= 0 {
		opts.BlockSize = DefaultBlockSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{st: st, table: opts.Table, block: opts.BlockSize, ro: opts.ReadOnly, logger: opts.Logger}
	m.mu.inProgress = make(map[int64]string)
	m.mu.invalid = make(map[int64]string)

	hwm, maxID, invalid, recovered, err := m.load(ctx)
	if err != nil {
		return nil, err
	}
	m.mu.invalid = invalid
	// I1: resume at the durable mark; ids in [next, hwm) of the previous
	// process are skipped.
	m.mu.next = max(hwm, maxID+1, 1)
	m.mu.hwm = m.mu.next
	if m.ro {
		// I7: another process's transactions in progress stay excluded.
		m.mu.inProgress = recovered
	} else if len(recovered) > 0 {
		// I5: in-progress transactions of a dead process become invalid.
		b := &store.Batch{Table: m.table, Sync: true}
		for id, owner := range recovered {
			b.DeleteVersion(idKey(prefixInProgress, id), colOwner, 0)
			b.Put(idKey(prefixInvalid, id), colOwner, 0, []byte(owner))
		}
		if err := st.Apply(ctx, b); err != nil {
			return nil, fmt.Errorf("txn: invalidating %d transactions left in progress: %w", len(recovered), err)
		}
		for id, owner := range recovered {
			m.mu.invalid[id] = owner
			m.logger.Info("transaction left in progress by a previous process is now invalid", "txn", id, "dataset", owner)
		}
	}
	if opts.Registerer != nil {
		m.reg = opts.Registerer
		for _, c := range []prometheus.Collector{
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "snapstore_txn_in_progress_transactions", Help: "Transactions in progress."},
				func() float64 { m.mu.Lock(); defer m.mu.Unlock(); return float64(len(m.mu.inProgress)) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "snapstore_txn_invalid_transactions", Help: "Invalid transactions not yet pruned."},
				func() float64 { m.mu.Lock(); defer m.mu.Unlock(); return float64(len(m.mu.invalid)) }),
		} {
			if err := m.reg.Register(c); err != nil {
				m.Close()
				return nil, fmt.Errorf("txn: registering metrics: %w", err)
			}
			m.colls = append(m.colls, c)
		}
	}
	return m, nil
}

// load reads the persisted state: the high-water mark, the largest id
// recorded, the invalid and the in-progress sets.
func (m *Manager) load(ctx context.Context) (hwm, maxID int64, invalid, inProgress map[int64]string, err error) {
	invalid, inProgress = map[int64]string{}, map[int64]string{}
	it, err := m.st.Scan(ctx, m.table, store.ScanOptions{Start: prefixTxn, End: prefixTxnEnd})
	if err != nil {
		return 0, 0, nil, nil, fmt.Errorf("txn: loading state: %w", err)
	}
	for it.Next() {
		c := it.Cell()
		if c.Kind != store.KindPut {
			continue
		}
		switch {
		case bytes.Equal(c.Row, keyHWM):
			if len(c.Value) != 8 {
				it.Close()
				return 0, 0, nil, nil, fmt.Errorf("%w: high-water mark of %d bytes", ErrCorrupt, len(c.Value))
			}
			hwm = int64(binary.BigEndian.Uint64(c.Value))
		case bytes.HasPrefix(c.Row, prefixInProgress), bytes.HasPrefix(c.Row, prefixInvalid):
			inv := bytes.HasPrefix(c.Row, prefixInvalid)
			p := prefixInProgress
			if inv {
				p = prefixInvalid
			}
			if len(c.Row) != len(p)+8 {
				it.Close()
				return 0, 0, nil, nil, fmt.Errorf("%w: txn row %q", ErrCorrupt, c.Row)
			}
			id := int64(binary.BigEndian.Uint64(c.Row[len(p):]))
			maxID = max(maxID, id)
			if inv {
				invalid[id] = string(c.Value)
			} else {
				inProgress[id] = string(c.Value)
			}
		}
	}
	if err := it.Close(); err != nil {
		return 0, 0, nil, nil, fmt.Errorf("txn: loading state: %w", err)
	}
	return hwm, maxID, invalid, inProgress, nil
}

// ReadOnly reports whether the manager was opened with Options.ReadOnly.
func (m *Manager) ReadOnly() bool { return m.ro }

// Refresh reloads the invalid and in-progress sets from the store (I7) of
// a read-only manager, so that Visibility excludes what the writer process
// aborted, invalidated or is writing since Open or the last Refresh.
// Visibilities already taken do not change (V4). On a writer manager it
// does nothing: there, memory is the truth (one writer per store, I8).
func (m *Manager) Refresh(ctx context.Context) error {
	if !m.ro {
		return nil
	}
	_, _, invalid, inProgress, err := m.load(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.mu.invalid, m.mu.inProgress = invalid, inProgress
	m.mu.Unlock()
	return nil
}

// Close unregisters the manager's metrics, so that a Manager can be opened
// again with the same Registerer. The store is not closed.
func (m *Manager) Close() {
	for _, c := range m.colls {
		m.reg.Unregister(c)
	}
	m.colls = nil
}

// Table returns the name of the metadata table the manager writes.
func (m *Manager) Table() string { return m.table }

// Begin starts a transaction for owner (the dataset whose tables it will
// write) and returns its id, once the id is durably in progress (I1, I2).
func (m *Manager) Begin(ctx context.Context, owner string) (int64, error) {
	if m.ro {
		return 0, ErrReadOnly
	}
	if owner == "" {
		return 0, fmt.Errorf("%w: empty owner", ErrInvalidArgument)
	}
	id, err := m.allocate(ctx)
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	m.mu.inProgress[id] = owner
	m.mu.Unlock()
	b := &store.Batch{Table: m.table, Sync: true}
	b.Put(idKey(prefixInProgress, id), colOwner, 0, []byte(owner))
	if err := m.st.Apply(ctx, b); err != nil {
		// Nothing was written under id; it is simply never used (I1).
		m.mu.Lock()
		delete(m.mu.inProgress, id)
		m.mu.Unlock()
		return 0, fmt.Errorf("txn: recording transaction %d in progress: %w", id, err)
	}
	m.logger.Debug("transaction begun", "txn", id, "dataset", owner)
	return id, nil
}

// allocate hands out the next id, raising the durable high-water mark first
// when the block is used up.
func (m *Manager) allocate(ctx context.Context) (int64, error) {
	m.mu.Lock()
	if m.mu.next < m.mu.hwm {
		id := m.mu.next
		m.mu.next++
		m.mu.Unlock()
		return id, nil
	}
	m.mu.Unlock()

	m.hwmMu.Lock()
	defer m.hwmMu.Unlock()
	m.mu.Lock()
	if m.mu.next < m.mu.hwm { // raised by another caller meanwhile
		id := m.mu.next
		m.mu.next++
		m.mu.Unlock()
		return id, nil
	}
	newHWM := m.mu.next + m.block
	m.mu.Unlock()
	b := &store.Batch{Table: m.table, Sync: true}
	b.Put(keyHWM, colValue, 0, binary.BigEndian.AppendUint64(nil, uint64(newHWM)))
	if err := m.st.Apply(ctx, b); err != nil {
		return 0, fmt.Errorf("txn: raising the id high-water mark to %d: %w", newHWM, err)
	}
	m.mu.Lock()
	m.mu.hwm = newHWM
	id := m.mu.next
	m.mu.next++
	m.mu.Unlock()
	return id, nil
}

func (m *Manager) checkBatch(b *store.Batch) (*store.Batch, error) {
	if b == nil {
		return &store.Batch{Table: m.table}, nil
	}
	if b.Table != m.table {
		return nil, fmt.Errorf("%w: batch for table %q, not the metadata table %q", ErrInvalidArgument, b.Table, m.table)
	}
	return b, nil
}

// Commit commits transaction id (I3): it appends the removal of the
// in-progress record to b (which may be nil, or must be a batch of the
// metadata table holding the caller's own metadata) and applies b
// atomically and durably. On error nothing changed in memory and the
// transaction is still in progress; the write may or may not have landed
// (store.ErrUnavailable), so the caller should Abort, and Open resolves it.
// ErrUnknownTxn when id is not in progress.
func (m *Manager) Commit(ctx context.Context, id int64, b *store.Batch) error {
	if m.ro {
		return ErrReadOnly
	}
	b, err := m.checkBatch(b)
	if err != nil {
		return err
	}
	m.mu.Lock()
	_, ok := m.mu.inProgress[id]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: committing %d", ErrUnknownTxn, id)
	}
	b.DeleteVersion(idKey(prefixInProgress, id), colOwner, 0)
	b.Sync = true
	if err := m.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("txn: committing %d: %w", id, err)
	}
	m.mu.Lock()
	delete(m.mu.inProgress, id)
	m.mu.Unlock()
	m.logger.Debug("transaction committed", "txn", id)
	return nil
}

// Abort makes an in-progress transaction invalid (I4), applying b (nil, or
// a batch of the metadata table) in the same durable write. The id is
// excluded in memory before the write, so even when the write fails no
// reader in this process sees its cells, and Open invalidates it after a
// restart. ErrUnknownTxn when id is not in progress.
func (m *Manager) Abort(ctx context.Context, id int64, b *store.Batch) error {
	if m.ro {
		return ErrReadOnly
	}
	b, err := m.checkBatch(b)
	if err != nil {
		return err
	}
	m.mu.Lock()
	owner, ok := m.mu.inProgress[id]
	if ok {
		delete(m.mu.inProgress, id)
		m.mu.invalid[id] = owner
	}
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: aborting %d", ErrUnknownTxn, id)
	}
	b.DeleteVersion(idKey(prefixInProgress, id), colOwner, 0)
	b.Put(idKey(prefixInvalid, id), colOwner, 0, []byte(owner))
	b.Sync = true
	if err := m.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("txn: aborting %d: %w", id, err)
	}
	m.logger.Debug("transaction aborted", "txn", id, "dataset", owner)
	return nil
}

// Invalidate makes committed transactions of owner invalid (I4), in one
// durable write together with b (nil, or a batch of the metadata table).
// Package snapshot's rollback uses it so that the versions after the
// rollback target are never visible again. In memory the ids are excluded
// only once the write succeeded.
func (m *Manager) Invalidate(ctx context.Context, owner string, ids []int64, b *store.Batch) error {
	if m.ro {
		return ErrReadOnly
	}
	b, err := m.checkBatch(b)
	if err != nil {
		return err
	}
	if owner == "" {
		return fmt.Errorf("%w: empty owner", ErrInvalidArgument)
	}
	for _, id := range ids {
		if id <= 0 {
			return fmt.Errorf("%w: id %d", ErrInvalidArgument, id)
		}
		b.Put(idKey(prefixInvalid, id), colOwner, 0, []byte(owner))
	}
	b.Sync = true
	if err := m.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("txn: invalidating %d transactions of %q: %w", len(ids), owner, err)
	}
	m.mu.Lock()
	for _, id := range ids {
		m.mu.invalid[id] = owner
	}
	m.mu.Unlock()
	return nil
}

// Prune removes ids from the invalid set (I6). Call it only after every
// cell written by those ids is physically gone. Ids not invalid are
// ignored.
func (m *Manager) Prune(ctx context.Context, ids []int64) error {
	if m.ro {
		return ErrReadOnly
	}
	if len(ids) == 0 {
		return nil
	}
	b := &store.Batch{Table: m.table, Sync: true}
	for _, id := range ids {
		b.DeleteVersion(idKey(prefixInvalid, id), colOwner, 0)
	}
	if err := m.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("txn: pruning %d invalid transactions: %w", len(ids), err)
	}
	m.mu.Lock()
	for _, id := range ids {
		delete(m.mu.invalid, id)
	}
	m.mu.Unlock()
	return nil
}

// Invalid returns owner's invalid ids, ascending.
func (m *Manager) Invalid(owner string) []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return idsOf(m.mu.invalid, owner, nil)
}

// InProgress returns owner's in-progress ids, ascending.
func (m *Manager) InProgress(owner string) []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return idsOf(m.mu.inProgress, owner, nil)
}

func idsOf(set map[int64]string, owner string, dst []int64) []int64 {
	for id, o := range set {
		if o == owner {
			dst = append(dst, id)
		}
	}
	slices.Sort(dst)
	return dst
}

// Visibility returns what a reader of owner's tables at readPointer carries
// (V1): owner's invalid and in-progress ids at this moment.
func (m *Manager) Visibility(owner string, readPointer int64) Visibility {
	m.mu.Lock()
	x := idsOf(m.mu.invalid, owner, nil)
	x = idsOf(m.mu.inProgress, owner, x)
	m.mu.Unlock()
	slices.Sort(x)
	return Visibility{ReadPointer: readPointer, excluded: x}
}

// Visibility is the visibility state a reader carries (Tephra's
// TransactionVisibilityState, reduced to one read pointer and the excluded
// ids). It is an immutable value, safe to share (V4).
type Visibility struct {
	// ReadPointer is the newest visible timestamp (the version read).
	ReadPointer int64
	excluded    []int64 // sorted ascending
}

// NewVisibility builds a Visibility from a read pointer and excluded ids
// (any order); used by tests and by readers that narrow a state.
func NewVisibility(readPointer int64, excluded []int64) Visibility {
	x := slices.Clone(excluded)
	slices.Sort(x)
	return Visibility{ReadPointer: readPointer, excluded: slices.Compact(x)}
}

// IsVisible applies V2 to timestamp ts.
func (v Visibility) IsVisible(ts int64) bool {
	if ts > v.ReadPointer {
		return false
	}
	return !v.IsExcluded(ts)
}

// IsExcluded reports whether ts is an excluded (invalid or in-progress) id.
func (v Visibility) IsExcluded(ts int64) bool {
	_, found := slices.BinarySearch(v.excluded, ts)
	return found
}

// Excluded returns the excluded ids, ascending. The slice must not be
// modified.
func (v Visibility) Excluded() []int64 { return v.excluded }

// ExcludedAtOrBelow returns how many excluded ids are <= ts. A column has at
// most that many invisible versions at or below ts, so reading
// 1+ExcludedAtOrBelow(R) newest versions per column is enough to find the
// newest visible one (store.ReadOptions.MaxVersions).
func (v Visibility) ExcludedAtOrBelow(ts int64) int {
	n, found := slices.BinarySearch(v.excluded, ts)
	if found {
		n++
	}
	return n
}

// At returns the same excluded set with another read pointer.
func (v Visibility) At(readPointer int64) Visibility {
	v.ReadPointer = readPointer
	return v
}
