package snapshot

import (
	"context"
	"errors"
	"fmt"

	"github.com/snapstore/snapstore/records"
)

// Record is a named document kept in the metadata table for packages above
// snapshot (data connections, adapters, run records), which never touch
// storage keys themselves. Package records keeps them.
type Record = records.Record

// Records returns the records of the metadata table, for the packages that
// keep their own state there beside the DB's datasets (a cluster's node
// list and partition table). It skips the DB's checks: its callers write
// only conditionally (CompareAndSet, Increment), which a read-only DB
// allows too (W1), and see the store's ErrClosed once the store closes.
func (db *DB) Records() *records.Store { return db.rec }

// recordErr puts a record error in the DB's terms: a bad kind or name is
// ErrInvalidArgument.
func recordErr(err error) error {
	var ne *records.NameError
	if errors.As(err, &ne) {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return fmt.Errorf("snapshot: %w", err)
}

// PutRecord writes (creates or replaces) a record durably.
func (db *DB) PutRecord(ctx context.Context, kind, name string, value []byte) error {
	if err := db.writable(); err != nil {
		return err
	}
	if err := db.rec.Put(ctx, kind, name, value); err != nil {
		return recordErr(err)
	}
	return nil
}

// GetRecord reads a record. ErrRecordNotFound.
func (db *DB) GetRecord(ctx context.Context, kind, name string) ([]byte, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	v, err := db.rec.Get(ctx, kind, name)
	if err != nil {
		return nil, recordErr(err)
	}
	return v, nil
}

// ListRecords lists the records of a kind in name order.
func (db *DB) ListRecords(ctx context.Context, kind string) ([]Record, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	out, err := db.rec.List(ctx, kind)
	if err != nil {
		return nil, recordErr(err)
	}
	return out, nil
}

// DeleteRecord deletes a record; deleting an absent one is a no-op.
func (db *DB) DeleteRecord(ctx context.Context, kind, name string) error {
	if err := db.writable(); err != nil {
		return err
	}
	if err := db.rec.Delete(ctx, kind, name); err != nil {
		return recordErr(err)
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
	ok, err := db.rec.CompareAndSet(ctx, kind, name, old, value)
	if err != nil {
		return false, recordErr(err)
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
	n, err := db.rec.Increment(ctx, kind, name, delta)
	if err != nil {
		return 0, recordErr(err)
	}
	return n, nil
}
