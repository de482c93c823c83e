package records

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/snapstore/snapstore/store"
)

// Record is one record as listed.
type Record struct {
	Kind  string
	Name  string
	Value []byte
}

// ErrNotFound is returned by Get for a record that does not exist.
var ErrNotFound = errors.New("record not found")

// NameError is a kind or name that cannot name a record: empty, or
// holding NUL (the separator of the record's row).
type NameError struct{ msg string }

func (e *NameError) Error() string { return e.msg }

// Store reads and writes the records of one metadata table. Its methods
// are safe for concurrent use as the store's are.
type Store struct {
	st    store.Store
	table string
}

// New returns the records kept in table of st.
func New(st store.Store, table string) *Store { return &Store{st: st, table: table} }

// Put writes (creates or replaces) a record durably.
func (s *Store) Put(ctx context.Context, kind, name string, value []byte) error {
	if err := valid(kind, name); err != nil {
		return err
	}
	b := &store.Batch{Table: s.table, Sync: true}
	b.Put(key(kind, name), colValue, 0, append([]byte{}, value...))
	if err := s.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("writing record %s/%s: %w", kind, name, err)
	}
	return nil
}

// Get reads a record: an error wrapping ErrNotFound when there is none.
func (s *Store) Get(ctx context.Context, kind, name string) ([]byte, error) {
	if err := valid(kind, name); err != nil {
		return nil, err
	}
	cells, err := s.st.Get(ctx, s.table, key(kind, name), store.ReadOptions{MaxVersions: 1})
	if err != nil {
		return nil, fmt.Errorf("reading record %s/%s: %w", kind, name, err)
	}
	for _, c := range cells {
		if c.Kind == store.KindPut && bytes.Equal(c.Column, colValue) {
			if c.Value == nil {
				return []byte{}, nil
			}
			return c.Value, nil
		}
	}
	return nil, fmt.Errorf("%w: %s/%s", ErrNotFound, kind, name)
}

// List lists the records of a kind in name order.
func (s *Store) List(ctx context.Context, kind string) ([]Record, error) {
	if err := valid(kind, "x"); err != nil {
		return nil, err
	}
	p := prefix(kind)
	it, err := s.st.Scan(ctx, s.table, store.ScanOptions{Start: p, End: prefixEnd(p)})
	if err != nil {
		return nil, fmt.Errorf("listing records %s: %w", kind, err)
	}
	var out []Record
	for it.Next() {
		c := it.Cell()
		if c.Kind != store.KindPut || !bytes.Equal(c.Column, colValue) {
			continue
		}
		out = append(out, Record{Kind: kind, Name: string(c.Row[len(p):]), Value: append([]byte{}, c.Value...)})
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("listing records %s: %w", kind, err)
	}
	return out, nil
}

// Delete deletes a record; deleting an absent one is a no-op.
func (s *Store) Delete(ctx context.Context, kind, name string) error {
	if err := valid(kind, name); err != nil {
		return err
	}
	b := &store.Batch{Table: s.table, Sync: true}
	b.DeleteVersion(key(kind, name), colValue, 0)
	if err := s.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("deleting record %s/%s: %w", kind, name, err)
	}
	return nil
}

// CompareAndSet writes value as record kind/name if and only if the
// record holds old now (nil old: there is no record), atomically with the
// check (store.S7); a nil value deletes the record. It reports whether it
// wrote. After an error the outcome is unknown (store.S9): read the record
// to learn it.
func (s *Store) CompareAndSet(ctx context.Context, kind, name string, old, value []byte) (bool, error) {
	if err := valid(kind, name); err != nil {
		return false, err
	}
	k := key(kind, name)
	b := &store.Batch{Table: s.table, Sync: true}
	if value == nil {
		b.DeleteVersion(k, colValue, 0)
	} else {
		b.Put(k, colValue, 0, append([]byte{}, value...))
	}
	ok, err := s.st.CheckAndMutate(ctx, b, store.Check{Column: colValue, Value: old})
	if err != nil {
		return false, fmt.Errorf("writing record %s/%s conditionally: %w", kind, name, err)
	}
	return ok, nil
}

// Increment adds delta to the counter of record kind/name and returns its
// new value (store.S8): concurrent increments, from any process, get
// distinct values; delta 0 reads it. The counter lives beside the
// record's value, which Get and List read. After an error the outcome is
// unknown (store.S9).
func (s *Store) Increment(ctx context.Context, kind, name string, delta int64) (int64, error) {
	if err := valid(kind, name); err != nil {
		return 0, err
	}
	n, err := s.st.Increment(ctx, s.table, key(kind, name), colCounter, delta)
	if err != nil {
		return 0, fmt.Errorf("incrementing record %s/%s: %w", kind, name, err)
	}
	return n, nil
}

// valid checks a record's kind and name: non-empty, without NUL.
func valid(kind, name string) error {
	if kind == "" || bytes.IndexByte([]byte(kind), 0) >= 0 {
		return &NameError{"record kind must be non-empty without NUL"}
	}
	if name == "" || bytes.IndexByte([]byte(name), 0) >= 0 {
		return &NameError{"record name must be non-empty without NUL"}
	}
	return nil
}
