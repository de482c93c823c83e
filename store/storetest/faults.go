package storetest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/snapstore/snapstore/store"
)

// ErrInjected is the error of a call a FaultStore failed. It wraps
// store.ErrUnavailable, as a timeout of a remote backend does, so callers
// treat it as an outcome they do not know (store.S9).
var ErrInjected = fmt.Errorf("storetest: injected fault: %w", store.ErrUnavailable)

// Fault is what a FaultStore does to one call.
type Fault uint8

const (
	// NoFault passes the call through.
	NoFault Fault = iota
	// Fail applies nothing and returns ErrInjected: a call that never
	// reached the backend.
	Fail
	// Partial applies part of an Apply or DeleteRange, then returns
	// ErrInjected: the parts before a random one whole, a random subset of
	// that one's rows, nothing after (store.S1, store.ApplyPlanner). Calls
	// that are atomic whole (MutateRow, CheckAndMutate, Increment) get Fail
	// instead, and reads too.
	Partial
	// Ambiguous applies the call whole, then returns ErrInjected: the
	// reply was lost.
	Ambiguous
	// Late returns ErrInjected at once and applies the call later, when
	// LandLate or a later call lands it (Faults.LandRate), as HBase's
	// gateway does with a call its client gave up on; a CheckAndMutate is
	// checked when it lands. A late write older than Faults.MaxDelay never
	// lands. Reads get Fail instead.
	Late
)

var faultNames = [...]string{"none", "fail", "partial", "ambiguous", "late"}

// String returns the fault's name.
func (f Fault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "unknown"
}

// Op names a call of the store.Store interface.
type Op uint8

// The calls a FaultStore can hit.
const (
	OpApply Op = iota
	OpMutateRow
	OpCheckAndMutate
	OpIncrement
	OpDeleteRange
	OpGet
	OpScan
)

var opNames = [...]string{"Apply", "MutateRow", "CheckAndMutate", "Increment", "DeleteRange", "Get", "Scan"}

// String returns the method's name.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "unknown"
}

// IsWrite reports whether the call writes.
func (o Op) IsWrite() bool { return o < OpGet }

// Call describes one call that a fault may hit.
type Call struct {
	Op    Op
	Table string
	// Rows are the rows the call writes or reads, in order of first
	// appearance (one for MutateRow, CheckAndMutate, Increment and Get);
	// nil for Scan and DeleteRange.
	Rows [][]byte
	// N counts the calls of this FaultStore, from 1.
	N int
}

// Touches reports whether the call writes or reads a row with the prefix.
func (c Call) Touches(prefix []byte) bool {
	for _, r := range c.Rows {
		if bytes.HasPrefix(r, prefix) {
			return true
		}
	}
	return false
}

// Faults configure a FaultStore.
type Faults struct {
	// Decide picks the fault of each call; nil passes every call through.
	// It is called with the FaultStore's lock held and must not call it.
	Decide func(Call) Fault
	// Before, when set, is called before each call is made (and before
	// Decide), without the lock: a test makes another caller act there,
	// in the middle of an operation of the code under test. Calls that
	// Before makes itself reach it too.
	Before func(Call)
	// Rand picks the rows a Partial fault applies and the late writes a
	// call lands; default a generator seeded with 1.
	Rand *rand.Rand
	// LandRate is the chance that each pending late write lands before any
	// later call is made (0: only LandLate lands them).
	LandRate float64
	// MaxDelay bounds how late a write can land, by Now; past it, a late
	// write is dropped. It is also what the FaultStore reports as
	// store.LateWriter (at least the wrapped store's). 0: no bound.
	MaxDelay time.Duration
	// Now is the clock of MaxDelay; default time.Now.
	Now func() time.Time
}

// FaultStore wraps a store.Store and, at the calls Faults.Decide picks,
// fails a write, applies it in part, applies it and then reports an error,
// or applies it late (after the caller gave up): what a remote backend does
// to its callers when its network or servers fail (store.S1, store.S9).
// Tests of code built on a store (package snapshot) wrap their store with
// it to check that no fault shows a partial state, in the manner of
// Pebble's vfs/errorfs.
//
// A partial Apply follows the backend's own calls when it implements
// store.ApplyPlanner (store/hbase), and otherwise applies any subset of
// whole rows, which is all store.S1 promises of any backend; so a new
// backend gets faithful faults for free, and faults at least as harsh as it
// can show if it plans none. Safe for concurrent use.
type FaultStore struct {
	inner store.Store

	mu       sync.Mutex
	f        Faults
	n        int
	late     []lateWrite
	injected map[Fault]int
	landed   int
	dropped  int
}

// lateWrite is a write that returned ErrInjected and may land later.
type lateWrite struct {
	at    time.Time
	apply func(ctx context.Context) error
}

// NewFaultStore wraps inner.
func NewFaultStore(inner store.Store, f Faults) *FaultStore {
	if f.Rand == nil {
		f.Rand = rand.New(rand.NewPCG(1, 2))
	}
	if f.Now == nil {
		f.Now = time.Now
	}
	return &FaultStore{inner: inner, f: f, injected: map[Fault]int{}}
}

// Inner returns the wrapped store.
func (s *FaultStore) Inner() store.Store { return s.inner }

// SetDecide replaces Faults.Decide (nil: no more faults).
func (s *FaultStore) SetDecide(decide func(Call) Fault) {
	s.mu.Lock()
	s.f.Decide = decide
	s.mu.Unlock()
}

// RandomFaults returns a Decide that hits a write with one of kinds (all
// but NoFault when none given) with probability rate, and a read with
// Fail with probability readRate.
func RandomFaults(rng *rand.Rand, rate, readRate float64, kinds ...Fault) func(Call) Fault {
	if len(kinds) == 0 {
		kinds = []Fault{Fail, Partial, Ambiguous, Late}
	}
	return func(c Call) Fault {
		if !c.Op.IsWrite() {
			if rng.Float64() < readRate {
				return Fail
			}
			return NoFault
		}
		if rng.Float64() < rate {
			return kinds[rng.IntN(len(kinds))]
		}
		return NoFault
	}
}

// FaultStats counts what a FaultStore did.
type FaultStats struct {
	Calls    int
	Injected map[Fault]int
	// LateLanded and LateDropped count late writes that landed, and that
	// MaxDelay dropped; LatePending those still waiting.
	LateLanded, LateDropped, LatePending int
}

// Stats returns the counts so far.
func (s *FaultStore) Stats() FaultStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	inj := make(map[Fault]int, len(s.injected))
	for k, v := range s.injected {
		inj[k] = v
	}
	return FaultStats{Calls: s.n, Injected: inj, LateLanded: s.landed, LateDropped: s.dropped, LatePending: len(s.late)}
}

// LandLate applies every pending late write now, oldest first (dropping
// those older than MaxDelay), and returns how many landed. A late write
// whose apply fails (a closed store) is dropped.
func (s *FaultStore) LandLate(ctx context.Context) int {
	s.mu.Lock()
	pending := s.late
	s.late = nil
	s.mu.Unlock()
	return s.land(ctx, pending)
}

// DropLate forgets every pending late write: they never land.
func (s *FaultStore) DropLate() {
	s.mu.Lock()
	s.dropped += len(s.late)
	s.late = nil
	s.mu.Unlock()
}

func (s *FaultStore) land(ctx context.Context, ws []lateWrite) int {
	n := 0
	for _, w := range ws {
		s.mu.Lock()
		expired := s.f.MaxDelay > 0 && s.f.Now().Sub(w.at) > s.f.MaxDelay
		s.mu.Unlock()
		if expired {
			s.mu.Lock()
			s.dropped++
			s.mu.Unlock()
			continue
		}
		if err := w.apply(context.WithoutCancel(ctx)); err == nil {
			n++
		}
	}
	s.mu.Lock()
	s.landed += n
	s.mu.Unlock()
	return n
}

// SetBefore replaces Faults.Before (nil: none).
func (s *FaultStore) SetBefore(before func(Call)) {
	s.mu.Lock()
	s.f.Before = before
	s.mu.Unlock()
}

// begin calls Before, counts a call, lands the late writes LandRate
// picks, and returns the fault for the call.
func (s *FaultStore) begin(ctx context.Context, c Call) Fault {
	s.mu.Lock()
	before := s.f.Before
	s.mu.Unlock()
	if before != nil {
		before(c)
	}
	s.mu.Lock()
	s.n++
	c.N = s.n
	var landing []lateWrite
	if s.f.LandRate > 0 && len(s.late) > 0 {
		kept := s.late[:0]
		for _, w := range s.late {
			if s.f.Rand.Float64() < s.f.LandRate {
				landing = append(landing, w)
			} else {
				kept = append(kept, w)
			}
		}
		s.late = kept
	}
	f := NoFault
	if s.f.Decide != nil {
		f = s.f.Decide(c)
	}
	if f != NoFault && !c.Op.IsWrite() {
		f = Fail
	}
	if f == Partial && c.Op != OpApply && c.Op != OpDeleteRange {
		f = Fail
	}
	if f != NoFault {
		s.injected[f]++
	}
	s.mu.Unlock()
	s.land(ctx, landing)
	return f
}

// addLate queues a late write.
func (s *FaultStore) addLate(apply func(ctx context.Context) error) {
	s.mu.Lock()
	s.late = append(s.late, lateWrite{at: s.f.Now(), apply: apply})
	s.mu.Unlock()
}

func injected(op Op, f Fault) error { return fmt.Errorf("%w (%s of %s)", ErrInjected, f, op) }

// write runs a write call under fault f; do applies it whole.
func (s *FaultStore) write(ctx context.Context, op Op, f Fault, do func(ctx context.Context) error) error {
	switch f {
	case Fail:
		return injected(op, f)
	case Ambiguous:
		if err := do(ctx); err != nil {
			return err
		}
		return injected(op, f)
	case Late:
		s.addLate(do)
		return injected(op, f)
	}
	return do(ctx)
}

// Apply implements store.Store.
func (s *FaultStore) Apply(ctx context.Context, b *store.Batch) error {
	f := s.begin(ctx, Call{Op: OpApply, Table: b.Table, Rows: rowsOfBatch(b)})
	if f == Partial {
		return s.applyPartial(ctx, b)
	}
	cp := cloneBatch(b)
	return s.write(ctx, OpApply, f, func(ctx context.Context) error { return s.inner.Apply(ctx, cp) })
}

// applyPartial applies the parts of b before a random one, and a random
// subset of that one's rows, each row as an Apply of its own.
func (s *FaultStore) applyPartial(ctx context.Context, b *store.Batch) error {
	parts, err := s.parts(b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	k := 0
	if len(parts) > 0 {
		k = s.f.Rand.IntN(len(parts))
	}
	var keep []bool
	var last []*store.Batch
	if k < len(parts) {
		last = splitRows(parts[k])
		keep = make([]bool, len(last))
		for i := range keep {
			keep[i] = s.f.Rand.IntN(2) == 0
		}
	}
	s.mu.Unlock()
	for _, p := range parts[:k] {
		if err := s.inner.Apply(ctx, p); err != nil {
			return err
		}
	}
	for i, r := range last {
		if keep[i] {
			if err := s.inner.Apply(ctx, r); err != nil {
				return err
			}
		}
	}
	return injected(OpApply, Partial)
}

// parts returns the parts of b as its backend sends them
// (store.ApplyPlanner), or b as one part, any subset of whose rows may
// land (store.S1).
func (s *FaultStore) parts(b *store.Batch) ([]*store.Batch, error) {
	if p, ok := s.inner.(store.ApplyPlanner); ok {
		parts, err := p.ApplyCalls(b)
		if err != nil {
			return nil, err
		}
		for i := range parts {
			parts[i] = cloneBatch(parts[i])
		}
		return parts, nil
	}
	for i := range b.Mutations {
		if err := b.Mutations[i].Validate(); err != nil {
			return nil, s.inner.Apply(context.Background(), b) // the backend's own error
		}
	}
	return []*store.Batch{cloneBatch(b)}, nil
}

// splitRows returns one batch per row of b, in the order rows first appear.
func splitRows(b *store.Batch) []*store.Batch {
	var out []*store.Batch
	idx := map[string]int{}
	for _, m := range b.Mutations {
		i, ok := idx[string(m.Cell.Row)]
		if !ok {
			i = len(out)
			idx[string(m.Cell.Row)] = i
			out = append(out, &store.Batch{Table: b.Table, Sync: b.Sync})
		}
		out[i].Mutations = append(out[i].Mutations, m)
	}
	return out
}

// cloneBatch deep-copies b, so that a late write does not see the caller
// reuse its batch.
func cloneBatch(b *store.Batch) *store.Batch {
	if b == nil {
		return nil
	}
	cp := &store.Batch{Table: b.Table, Sync: b.Sync, Mutations: make([]store.Mutation, len(b.Mutations))}
	for i, m := range b.Mutations {
		m.Cell = cloneCell(m.Cell)
		cp.Mutations[i] = m
	}
	return cp
}

// MutateRow implements store.Store.
func (s *FaultStore) MutateRow(ctx context.Context, b *store.Batch) error {
	f := s.begin(ctx, Call{Op: OpMutateRow, Table: b.Table, Rows: rowsOfBatch(b)})
	cp := cloneBatch(b)
	return s.write(ctx, OpMutateRow, f, func(ctx context.Context) error { return s.inner.MutateRow(ctx, cp) })
}

// CheckAndMutate implements store.Store. A Late one is checked when it
// lands.
func (s *FaultStore) CheckAndMutate(ctx context.Context, b *store.Batch, check store.Check) (bool, error) {
	f := s.begin(ctx, Call{Op: OpCheckAndMutate, Table: b.Table, Rows: rowsOfBatch(b)})
	cp := cloneBatch(b)
	check = store.Check{Column: bytes.Clone(check.Column), Value: cloneValue(check.Value)}
	applied := false
	err := s.write(ctx, OpCheckAndMutate, f, func(ctx context.Context) error {
		ok, err := s.inner.CheckAndMutate(ctx, cp, check)
		applied = ok
		return err
	})
	if err != nil {
		return false, err
	}
	return applied, nil
}

func cloneValue(v []byte) []byte {
	if v == nil {
		return nil
	}
	return append([]byte{}, v...)
}

// Increment implements store.Store.
func (s *FaultStore) Increment(ctx context.Context, table string, row, column []byte, delta int64) (int64, error) {
	if delta == 0 {
		// A read.
		if f := s.begin(ctx, Call{Op: OpGet, Table: table, Rows: [][]byte{row}}); f != NoFault {
			return 0, injected(OpIncrement, f)
		}
		return s.inner.Increment(ctx, table, row, column, 0)
	}
	f := s.begin(ctx, Call{Op: OpIncrement, Table: table, Rows: [][]byte{row}})
	row, column = bytes.Clone(row), bytes.Clone(column)
	var n int64
	err := s.write(ctx, OpIncrement, f, func(ctx context.Context) (err error) {
		n, err = s.inner.Increment(ctx, table, row, column, delta)
		return err
	})
	return n, err
}

// DeleteRange implements store.Store. A Partial one deletes a random
// prefix of the range's rows, as a per-row backend (store/hbase) may.
func (s *FaultStore) DeleteRange(ctx context.Context, table string, start, end []byte) error {
	f := s.begin(ctx, Call{Op: OpDeleteRange, Table: table})
	start, end = bytes.Clone(start), bytes.Clone(end)
	if f == Partial {
		it, err := s.inner.Scan(ctx, table, store.ScanOptions{Start: start, End: end, ReadOptions: store.ReadOptions{MaxVersions: 1}})
		if err != nil {
			return err
		}
		var rows [][]byte
		for it.Next() {
			if r := it.Cell().Row; len(rows) == 0 || !bytes.Equal(rows[len(rows)-1], r) {
				rows = append(rows, bytes.Clone(r))
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
		s.mu.Lock()
		k := 0
		if len(rows) > 0 {
			k = s.f.Rand.IntN(len(rows))
		}
		s.mu.Unlock()
		if k > 0 {
			if err := s.inner.DeleteRange(ctx, table, start, rows[k]); err != nil {
				return err
			}
		}
		return injected(OpDeleteRange, Partial)
	}
	return s.write(ctx, OpDeleteRange, f, func(ctx context.Context) error { return s.inner.DeleteRange(ctx, table, start, end) })
}

// Get implements store.Store; a fault fails it.
func (s *FaultStore) Get(ctx context.Context, table string, row []byte, opts store.ReadOptions) ([]store.Cell, error) {
	if f := s.begin(ctx, Call{Op: OpGet, Table: table, Rows: [][]byte{row}}); f != NoFault {
		return nil, injected(OpGet, f)
	}
	return s.inner.Get(ctx, table, row, opts)
}

// VisitRow implements store.Store; a fault fails it as it fails Get.
func (s *FaultStore) VisitRow(ctx context.Context, table string, row []byte, opts store.ReadOptions, fn func(store.Cell) bool) error {
	if f := s.begin(ctx, Call{Op: OpGet, Table: table, Rows: [][]byte{row}}); f != NoFault {
		return injected(OpGet, f)
	}
	return s.inner.VisitRow(ctx, table, row, opts, fn)
}

// Scan implements store.Store; a fault fails the call that opens it.
func (s *FaultStore) Scan(ctx context.Context, table string, opts store.ScanOptions) (store.Iterator, error) {
	if f := s.begin(ctx, Call{Op: OpScan, Table: table}); f != NoFault {
		return nil, injected(OpScan, f)
	}
	return s.inner.Scan(ctx, table, opts)
}

// Sync implements store.Store.
func (s *FaultStore) Sync(ctx context.Context) error { return s.inner.Sync(ctx) }

// Close implements store.Store: it closes the wrapped store; pending late
// writes are dropped.
func (s *FaultStore) Close() error {
	s.DropLate()
	return s.inner.Close()
}

// MaxWriteDelay implements store.LateWriter: the longer of Faults.MaxDelay
// and the wrapped store's.
func (s *FaultStore) MaxWriteDelay() time.Duration {
	d := s.f.MaxDelay
	if lw, ok := s.inner.(store.LateWriter); ok {
		d = max(d, lw.MaxWriteDelay())
	}
	return d
}

// rowsOfBatch returns the rows of b in order of first appearance.
func rowsOfBatch(b *store.Batch) [][]byte {
	if b == nil {
		return nil
	}
	var rows [][]byte
	seen := map[string]bool{}
	for _, m := range b.Mutations {
		if !seen[string(m.Cell.Row)] {
			seen[string(m.Cell.Row)] = true
			rows = append(rows, m.Cell.Row)
		}
	}
	return rows
}

// ProcessLocal implements store.ProcessLocal for the wrapped store.
func (s *FaultStore) ProcessLocal() bool {
	pl, ok := s.inner.(store.ProcessLocal)
	return ok && pl.ProcessLocal()
}

var (
	_ store.Store        = (*FaultStore)(nil)
	_ store.LateWriter   = (*FaultStore)(nil)
	_ store.ProcessLocal = (*FaultStore)(nil)
)
