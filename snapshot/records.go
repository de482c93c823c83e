package snapshot

import (
	"bytes"
	"context"
	"fmt"

	"github.com/snapstore/snapstore/store"
)

// Record is a named document kept in the metadata table for packages above
// snapshot (data connections, adapters, run records), which never touch
// storage keys themselves.
type Record struct {
	Kind  string
	Name  string
	Value []byte
}

// PutRecord writes (creates or replaces) a record durably.
func (db *DB) PutRecord(ctx context.Context, kind, name string, value []byte) error {
	if err := db.writable(); err != nil {
		return err
	}
	if err := validRecord(kind, name); err != nil {
		return err
	}
	b := &store.Batch{Table: db.meta, Sync: true}
	b.Put(recordKey(kind, name), colV, 0, append([]byte{}, value...))
	if err := db.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("snapshot: writing record %s/%s: %w", kind, name, err)
	}
	return nil
}

// GetRecord reads a record. ErrRecordNotFound.
func (db *DB) GetRecord(ctx context.Context, kind, name string) ([]byte, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	if err := validRecord(kind, name); err != nil {
		return nil, err
	}
	cells, err := db.st.Get(ctx, db.meta, recordKey(kind, name), store.ReadOptions{MaxVersions: 1})
	if err != nil {
		return nil, fmt.Errorf("snapshot: reading record %s/%s: %w", kind, name, err)
	}
	for _, c := range cells {
		if c.Kind == store.KindPut && bytes.Equal(c.Column, colV) {
			if c.Value == nil {
				return []byte{}, nil
			}
			return c.Value, nil
		}
	}
	return nil, fmt.Errorf("%w: %s/%s", ErrRecordNotFound, kind, name)
}

// ListRecords lists the records of a kind in name order.
func (db *DB) ListRecords(ctx context.Context, kind string) ([]Record, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	if err := validRecord(kind, "x"); err != nil {
		return nil, err
	}
	p := recordPrefix(kind)
	it, err := db.st.Scan(ctx, db.meta, store.ScanOptions{Start: p, End: prefixEnd(p)})
	if err != nil {
		return nil, fmt.Errorf("snapshot: listing records %s: %w", kind, err)
	}
	var out []Record
	for it.Next() {
		c := it.Cell()
		if c.Kind != store.KindPut || !bytes.Equal(c.Column, colV) {
			continue
		}
		out = append(out, Record{Kind: kind, Name: string(c.Row[len(p):]), Value: append([]byte{}, c.Value...)})
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("snapshot: listing records %s: %w", kind, err)
	}
	return out, nil
}

// DeleteRecord deletes a record; deleting an absent one is a no-op.
func (db *DB) DeleteRecord(ctx context.Context, kind, name string) error {
	if err := db.writable(); err != nil {
		return err
	}
	if err := validRecord(kind, name); err != nil {
		return err
	}
	b := &store.Batch{Table: db.meta, Sync: true}
	b.DeleteVersion(recordKey(kind, name), colV, 0)
	if err := db.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("snapshot: deleting record %s/%s: %w", kind, name, err)
	}
	return nil
}

// validRecord checks a record's kind and name: non-empty, without NUL
// (the separator of keys.go).
func validRecord(kind, name string) error {
	if kind == "" || bytes.IndexByte([]byte(kind), 0) >= 0 {
		return fmt.Errorf("%w: record kind must be non-empty without NUL", ErrInvalidArgument)
	}
	if name == "" || bytes.IndexByte([]byte(name), 0) >= 0 {
		return fmt.Errorf("%w: record name must be non-empty without NUL", ErrInvalidArgument)
	}
	return nil
}

// CompareAndSetRecord writes value as record kind/name if and only if the
// record holds old now (nil old: there is no record), atomically with the
// check (store.S7); a nil value deletes the record. It reports whether it
// wrote. After an error the outcome is unknown (store.S9): read the record
// to learn it.
//
// Unlike PutRecord it is allowed on a read-only DB (W1): conditional
// records coordinate the processes that share a store (the node list of a
// cluster, the fire records of scheduled ticks), hold no dataset state,
// and their condition is what makes several writers of one record safe.
func (db *DB) CompareAndSetRecord(ctx context.Context, kind, name string, old, value []byte) (bool, error) {
	if err := db.check(); err != nil {
		return false, err
	}
	if err := validRecord(kind, name); err != nil {
		return false, err
	}
	key := recordKey(kind, name)
	b := &store.Batch{Table: db.meta, Sync: true}
	if value == nil {
		b.DeleteVersion(key, colV, 0)
	} else {
		b.Put(key, colV, 0, append([]byte{}, value...))
	}
	ok, err := db.st.CheckAndMutate(ctx, b, store.Check{Column: colV, Value: old})
	if err != nil {
		return false, fmt.Errorf("snapshot: writing record %s/%s conditionally: %w", kind, name, err)
	}
	return ok, nil
}

// IncrementRecord adds delta to the counter of record kind/name and
// returns its new value (store.S8): concurrent increments, from any
// process, get distinct values; delta 0 reads it. The counter lives beside
// the record's value, which GetRecord and ListRecords read. Allowed on a
// read-only DB, as CompareAndSetRecord is. After an error the outcome is
// unknown (store.S9).
func (db *DB) IncrementRecord(ctx context.Context, kind, name string, delta int64) (int64, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	if err := validRecord(kind, name); err != nil {
		return 0, err
	}
	n, err := db.st.Increment(ctx, db.meta, recordKey(kind, name), colN, delta)
	if err != nil {
		return 0, fmt.Errorf("snapshot: incrementing record %s/%s: %w", kind, name, err)
	}
	return n, nil
}
