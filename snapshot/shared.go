package snapshot

// This file holds how the program that opens a store says that other
// processes share it (doc.go, "Several processes on one store"), and the
// one check every write makes: may this DB write. Writer slots are in
// slot.go, the refresh of views in refresh.go.

import (
	"time"

	"github.com/snapstore/snapstore/store"
)

// SharedStore is an optional interface of a store.Store that other
// processes may open at the same time (store/hbase as package daemon opens
// it). Open fills the sharing fields of Options that are zero (ReadOnly,
// SlotLease, SlotRenew, RefreshInterval) from Sharing, so that the program that
// opens the store decides, as database/sql finds a driver's optional
// capabilities by type assertion.
type SharedStore interface {
	store.Store
	Sharing() Sharing
}

// Sharing says how a DB shares its store with other processes; the fields
// mean what the Options fields of the same name do.
type Sharing struct {
	ReadOnly        bool
	SlotLease       time.Duration
	SlotRenew       time.Duration
	RefreshInterval time.Duration
}

// ReadOnly reports whether the DB was opened read-only (Options.ReadOnly,
// or by its SharedStore): every write returns ErrReadOnly, so periodic
// work that writes (GC, scheduled runs) has nothing to do here.
func (db *DB) ReadOnly() bool { return db.opts.ReadOnly }

// writable returns nil when this DB may write: open and not read-only.
func (db *DB) writable() error {
	if err := db.check(); err != nil {
		return err
	}
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	return nil
}
