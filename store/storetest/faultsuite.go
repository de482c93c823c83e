package storetest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/snapstore/snapstore/store"
)

// RunFaultSuite checks that each fault of a FaultStore does to a backend
// what its doc says. A backend test calls it beside RunSuite:
//
//	func TestFaults(t *testing.T) { storetest.RunFaultSuite(t, openTestStore) }
//
// (store/pebble also runs RunSuite through a FaultStore without faults, to
// check that the wrapper itself keeps the contract.)
func RunFaultSuite(t *testing.T, open func(t *testing.T) store.Store) {
	h := func(f func(t *testing.T, s store.Store)) func(t *testing.T) {
		return func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { s.Close() })
			f(t, s)
		}
	}
	t.Run("Fail", h(testFaultFail))
	t.Run("Ambiguous", h(testFaultAmbiguous))
	t.Run("Partial", h(testFaultPartial))
	t.Run("Late", h(testFaultLate))
	t.Run("Before", h(testFaultBefore))
}

// testFaultBefore: Before sees each call with its rows before it is made,
// and may call the store itself.
func testFaultBefore(t *testing.T, inner store.Store) {
	ctx := t.Context()
	var s *FaultStore
	var calls []string
	s = NewFaultStore(inner, Faults{Before: func(c Call) {
		calls = append(calls, fmt.Sprintf("%s %s %q", c.Op, c.Table, c.Rows))
		if c.Op == OpMutateRow {
			// Another writer acts in the middle: its row lands first.
			if err := s.Apply(ctx, rowBatch("t", put("other", "c", 1, "first"))); err != nil {
				t.Error(err)
			}
		}
	}})
	if err := s.MutateRow(ctx, rowBatch("t", put("r", "c", 2, "second"))); err != nil {
		t.Fatal(err)
	}
	want := []string{`MutateRow t ["r"]`, `Apply t ["other"]`}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("Before saw %v, want %v", calls, want)
	}
	expectCells(t, "after", scanAll(t, inner, "t", store.ScanOptions{}), cellsOf(put("other", "c", 1, "first"), put("r", "c", 2, "second")))
}

// always returns a Decide that hits every write with f.
func always(f Fault) func(Call) Fault {
	return func(c Call) Fault {
		if c.Op.IsWrite() {
			return f
		}
		return NoFault
	}
}

func testFaultFail(t *testing.T, inner store.Store) {
	ctx := t.Context()
	s := NewFaultStore(inner, Faults{Decide: always(Fail)})
	b := rowBatch("t", put("a", "c", 1, "v"), put("b", "c", 1, "v"))
	expectErr(t, "failed Apply", s.Apply(ctx, b), store.ErrUnavailable)
	expectErr(t, "failed MutateRow", s.MutateRow(ctx, rowBatch("t", put("a", "c", 1, "v"))), ErrInjected)
	_, err := s.CheckAndMutate(ctx, rowBatch("t", put("a", "c", 1, "v")), store.Check{Column: []byte("c")})
	expectErr(t, "failed CheckAndMutate", err, ErrInjected)
	_, err = s.Increment(ctx, "t", []byte("a"), []byte("n"), 1)
	expectErr(t, "failed Increment", err, ErrInjected)
	if got := scanAll(t, inner, "t", store.ScanOptions{}); got != nil {
		t.Errorf("failed writes wrote %s", formatCells(got))
	}
	if n, _ := inner.Increment(ctx, "t", []byte("a"), []byte("n"), 0); n != 0 {
		t.Errorf("a failed increment counted: %d", n)
	}
	s.SetDecide(func(c Call) Fault {
		if c.Op == OpGet {
			return Fail
		}
		return NoFault
	})
	_, err = s.Get(ctx, "t", []byte("a"), store.ReadOptions{})
	expectErr(t, "failed Get", err, ErrInjected)
	if st := s.Stats(); st.Injected[Fail] != 5 {
		t.Errorf("stats %+v, want 5 failures", st)
	}
}

func testFaultAmbiguous(t *testing.T, inner store.Store) {
	ctx := t.Context()
	s := NewFaultStore(inner, Faults{Decide: always(Ambiguous)})
	expectErr(t, "ambiguous Apply", s.Apply(ctx, rowBatch("t", put("a", "c", 1, "v"), put("b", "c", 1, "v"))), ErrInjected)
	_, err := s.CheckAndMutate(ctx, rowBatch("t", put("c", "c", 1, "v")), store.Check{Column: []byte("c")})
	expectErr(t, "ambiguous CheckAndMutate", err, ErrInjected)
	_, err = s.Increment(ctx, "t", []byte("a"), []byte("n"), 3)
	expectErr(t, "ambiguous Increment", err, ErrInjected)
	if got := rowsOf(scanAll(t, inner, "t", store.ScanOptions{})); fmt.Sprint(got) != "[a b c]" {
		t.Errorf("ambiguous writes applied rows %q, want a b c", got)
	}
	if n, _ := inner.Increment(ctx, "t", []byte("a"), []byte("n"), 0); n != 3 {
		t.Errorf("an ambiguous increment: counter %d, want 3", n)
	}
}

// testFaultPartial: a partial Apply leaves every row whole or absent, and
// follows the backend's parts: a prefix of parts whole, then a subset of
// one part's rows.
func testFaultPartial(t *testing.T, inner store.Store) {
	ctx := t.Context()
	for seed := range uint64(20) {
		table := fmt.Sprint("t", seed)
		s := NewFaultStore(inner, Faults{Decide: always(Partial), Rand: rand.New(rand.NewPCG(seed, 1))})
		b := &store.Batch{Table: table}
		for i := range 12 {
			row := []byte(fmt.Sprintf("r%02d", i))
			b.Put(row, []byte("a"), 1, []byte("v"))
			b.Put(row, []byte("b"), 1, []byte("v"))
			if i%3 == 0 {
				b.DeleteVersion(row, []byte("x"), 1)
			}
		}
		expectErr(t, "partial Apply", s.Apply(ctx, b), ErrInjected)
		got := scanAll(t, inner, table, store.ScanOptions{})
		per := map[string]int{}
		for _, c := range got {
			per[string(c.Row)]++
		}
		for row, n := range per {
			if n != 2 {
				t.Fatalf("seed %d: row %s applied in part (%d cells)", seed, row, n)
			}
		}
		parts := []*store.Batch{b}
		if p, ok := inner.(store.ApplyPlanner); ok {
			parts, _ = p.ApplyCalls(b)
		}
		// Every part before the first one not applied whole is whole; none
		// after the next is touched.
		whole := func(p *store.Batch) (all, none bool) {
			all, none = true, true
			for _, m := range p.Mutations {
				if m.Op != store.OpPut {
					continue
				}
				if per[string(m.Cell.Row)] > 0 {
					none = false
				} else {
					all = false
				}
			}
			return all, none
		}
		i := 0
		for ; i < len(parts); i++ {
			if all, _ := whole(parts[i]); !all {
				break
			}
		}
		for j := i + 1; j < len(parts); j++ {
			if _, none := whole(parts[j]); !none {
				t.Fatalf("seed %d: part %d of %d applied though part %d was not whole", seed, j, len(parts), i)
			}
		}
	}
	// A partial DeleteRange deletes a prefix of the rows.
	for i := range 10 {
		mustApply(t, inner, "d", put(fmt.Sprint("r", i), "c", 1, "v"))
	}
	s := NewFaultStore(inner, Faults{Decide: always(Partial), Rand: rand.New(rand.NewPCG(3, 1))})
	expectErr(t, "partial DeleteRange", s.DeleteRange(ctx, "d", nil, nil), ErrInjected)
	rows := rowsOf(scanAll(t, inner, "d", store.ScanOptions{}))
	if len(rows) == 0 || len(rows) == 10 {
		t.Errorf("partial DeleteRange left %d of 10 rows", len(rows))
	}
	if rows[len(rows)-1] != "r9" {
		t.Errorf("partial DeleteRange left %v, not a suffix", rows)
	}
}

func testFaultLate(t *testing.T, inner store.Store) {
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewFaultStore(inner, Faults{Decide: always(Late), MaxDelay: time.Minute, Now: func() time.Time { return now }})
	b := rowBatch("t", put("a", "c", 1, "late"))
	expectErr(t, "late Apply", s.Apply(ctx, b), ErrInjected)
	b.Mutations[0].Cell.Value[0] = 'X' // the caller reuses its batch
	_, err := s.CheckAndMutate(ctx, rowBatch("t", put("b", "c", 1, "checked late")), store.Check{Column: []byte("c")})
	expectErr(t, "late CheckAndMutate", err, ErrInjected)
	_, err = s.Increment(ctx, "t", []byte("a"), []byte("n"), 7)
	expectErr(t, "late Increment", err, ErrInjected)
	if got := scanAll(t, inner, "t", store.ScanOptions{}); got != nil {
		t.Fatalf("late writes landed early: %s", formatCells(got))
	}
	// Meanwhile another writer takes row b: the late check no longer holds.
	mustApply(t, inner, "t", put("b", "c", 2, "first"))
	if n := s.LandLate(ctx); n != 3 {
		t.Errorf("%d late writes landed, want 3", n)
	}
	want := cellsOf(put("a", "c", 1, "late"), put("b", "c", 2, "first"))
	expectCells(t, "after the late writes landed", scanAll(t, inner, "t", store.ScanOptions{}), want)
	if n, _ := inner.Increment(ctx, "t", []byte("a"), []byte("n"), 0); n != 7 {
		t.Errorf("late increment: counter %d, want 7", n)
	}
	// Past MaxDelay a late write never lands.
	expectErr(t, "late Apply", s.Apply(ctx, rowBatch("t", put("z", "c", 1, "too late"))), ErrInjected)
	now = now.Add(2 * time.Minute)
	if n := s.LandLate(ctx); n != 0 {
		t.Errorf("%d writes landed past MaxDelay", n)
	}
	if st := s.Stats(); st.LateLanded != 3 || st.LateDropped != 1 || st.LatePending != 0 {
		t.Errorf("stats %+v", st)
	}
	if d := s.MaxWriteDelay(); d < time.Minute {
		t.Errorf("MaxWriteDelay %v, want at least MaxDelay", d)
	}
}
