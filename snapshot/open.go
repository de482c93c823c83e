package snapshot

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/records"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// Options configure a DB. Zero fields take the defaults given.
type Options struct {
	// Logger receives structured logs with keys dataset, version, txn; nil
	// discards.
	Logger *slog.Logger
	// Registerer registers the package's metrics (snapstore_snapshot_runs_total
	// by result, snapstore_snapshot_cells_written_total,
	// snapstore_snapshot_gc_cells_deleted_total,
	// snapstore_snapshot_commit_duration_seconds,
	// snapstore_snapshot_readers_open,
	// snapstore_txn_in_progress_transactions and
	// snapstore_txn_invalid_transactions); nil registers none. Close
	// unregisters them, so a DB can be reopened with the same Registerer.
	Registerer prometheus.Registerer
	// Partitions is the number of hash partitions of a new dataset's row-key
	// space; default 1. Fixed per dataset at creation.
	Partitions int
	// ReadOnly opens the DB of a process that only reads a store written
	// by others (doc.go W2): Open writes nothing, every write returns
	// ErrReadOnly, and reads refresh the view per RefreshInterval.
	ReadOnly bool
	// RefreshInterval is how old this DB's view of the datasets may be
	// when a read (Datasets, Dataset, Versions, VersionInfo, Reader, Diff,
	// DiffCounts) starts; an older view is refreshed first (DB.Refresh),
	// so that what other processes committed shows (W2). Default
	// DefaultRefreshInterval (1 s), except 0 (no refresh: no other process
	// writes) for a writer on a store only one process opens
	// (store.ProcessLocal); negative: only explicit Refresh calls.
	RefreshInterval time.Duration
	// SlotLease is how long a writer slot (W1) lasts without renewal. A
	// writer whose slot was not renewed for a lease stops writing, and
	// another may take the slot then (W3). Clocks of the processes must
	// agree to well within it. Default DefaultSlotLease (30 s).
	SlotLease time.Duration
	// SlotRenew is how often the keeper renews each slot a DB holds: once
	// this long passed since its last renewal. Less than half of
	// SlotLease, so that a renewal that fails once is retried before the
	// lease ends. Default a third of SlotLease.
	SlotRenew time.Duration
	// PinLease is how long a Reader's pin of its version in the store
	// (doc.go G8) lasts without renewal, where other processes share the
	// store; its Reader renews it every third of it. Clocks of the
	// processes must agree to well within it. Default SlotLease.
	PinLease time.Duration
	// pinsLocal makes Readers pin their versions in the store on a store
	// only one process opens, a test hook standing for another process.
	pinsLocal bool
	// now is the clock, injectable by tests; default time.Now.
	now func() time.Time
	// batchSize is the number of mutations per data batch, a test hook;
	// default batchSize (4096).
	batchSize int
	// hook, when set, is called at named points of a run, of GC and of
	// metadata writes, with a count (rows put, batches applied, the row's
	// write); the crash test kills the process there.
	hook func(point string, n int64)
	// keepEvery is the keeper's period (slot.go); default half of
	// SlotRenew, at most 1 s.
	keepEvery time.Duration
	// resolveWait bounds how long a write whose outcome is unknown keeps
	// reading the row back before it reports ErrOutcomeUnknown; default
	// 30 s.
	resolveWait time.Duration
	// idBlock is the block size of transaction ids, a test hook; default
	// txn.DefaultBlockSize.
	idBlock int64
	// pruneGrace, when not 0, replaces the grace before an invalid
	// transaction is pruned (G6); negative means none. A test hook.
	pruneGrace time.Duration
	// deadOwners names writer slot owners known to be gone, a test hook
	// for a crash simulated in the test's own process.
	deadOwners map[string]bool
	// gcReadsAll makes GC read every version whatever the previous GC
	// proved (doc.go G10), a test hook: the reference its skips are
	// checked against.
	gcReadsAll bool
}

// Open opens the datasets of st. The metadata lives in st's table "meta"
// (txn.DefaultTable); a writer migrates a store of storage format 1 or 2
// to format 3 first (migrate.go, migrate_rows.go; docs/storage-format.md).
// With Options.ReadOnly it writes nothing (doc.go W2), and refuses a store
// a writer must migrate first.
// A SharedStore fills the sharing options when they are zero. Transactions
// a previous process left in progress become invalid when their dataset's
// writer slot is next taken (D4, txn.I5).
func Open(ctx context.Context, st store.Store, opts Options) (*DB, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidArgument)
	}
	pl, ok := st.(store.ProcessLocal)
	processLocal := ok && pl.ProcessLocal()
	if ss, ok := st.(SharedStore); ok {
		sh := ss.Sharing()
		if !opts.ReadOnly {
			opts.ReadOnly = sh.ReadOnly
		}
		if opts.SlotLease == 0 {
			opts.SlotLease = sh.SlotLease
		}
		if opts.SlotRenew == 0 {
			opts.SlotRenew = sh.SlotRenew
		}
		if opts.RefreshInterval == 0 {
			opts.RefreshInterval = sh.RefreshInterval
		}
	}
	if opts.SlotLease < 0 {
		return nil, fmt.Errorf("%w: negative writer slot lease", ErrInvalidArgument)
	}
	if opts.SlotLease == 0 {
		opts.SlotLease = DefaultSlotLease
	}
	if opts.SlotRenew < 0 {
		return nil, fmt.Errorf("%w: negative writer slot renewal", ErrInvalidArgument)
	}
	if opts.SlotRenew == 0 {
		opts.SlotRenew = opts.SlotLease / 3
	}
	if opts.SlotRenew >= opts.SlotLease/2 {
		return nil, fmt.Errorf("%w: writer slot renewal %s not under half its lease %s", ErrInvalidArgument, opts.SlotRenew, opts.SlotLease)
	}
	if opts.PinLease < 0 {
		return nil, fmt.Errorf("%w: negative pin lease", ErrInvalidArgument)
	}
	if opts.RefreshInterval == 0 && (opts.ReadOnly || !processLocal) {
		opts.RefreshInterval = DefaultRefreshInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Partitions <= 0 {
		opts.Partitions = 1
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	if opts.batchSize <= 0 {
		opts.batchSize = batchSize
	}
	if opts.keepEvery <= 0 {
		opts.keepEvery = min(opts.SlotRenew/2, time.Second)
	}
	if opts.resolveWait <= 0 {
		opts.resolveWait = 30 * time.Second
	}
	db := &DB{st: st, meta: txn.DefaultTable, rec: records.New(st, txn.DefaultTable), logger: opts.Logger, opts: opts, datasets: map[string]*dataset{},
		owner: newOwnerID(), processLocal: processLocal}
	db.grace = db.pruneGrace()
	db.registerLocal()
	db.ids = txn.OpenIDs(st, txn.IDOptions{BlockSize: opts.idBlock, ReadOnly: opts.ReadOnly, Logger: opts.Logger})
	db.metrics = newMetrics()
	format, err := db.checkFormat(ctx)
	if err != nil {
		db.unregisterLocal()
		return nil, fmt.Errorf("snapshot: opening: %w", err)
	}
	if _, err := db.loadInto(ctx, db.datasets); err != nil {
		db.unregisterLocal()
		return nil, fmt.Errorf("snapshot: opening: %w", err)
	}
	if !opts.ReadOnly {
		for _, ds := range db.datasets {
			ds.mu.Lock()
			old := ds.st.Format < metaFormat || ds.st.ColumnTablesLeft
			ds.mu.Unlock()
			if !old {
				continue
			}
			if err := db.migrateRows(ctx, ds); err != nil {
				db.unregisterLocal()
				return nil, fmt.Errorf("snapshot: migrating %s to storage format %d: %w", ds.name, metaFormat, err)
			}
		}
		if format != metaFormat {
			if err := db.recordFormat(ctx, format); err != nil {
				db.unregisterLocal()
				return nil, fmt.Errorf("snapshot: opening: %w", err)
			}
		}
	}
	db.refreshedAt.Store(opts.now().UnixNano())
	if opts.Registerer != nil {
		if err := db.metrics.register(opts.Registerer, db); err != nil {
			db.unregisterLocal()
			return nil, fmt.Errorf("snapshot: registering metrics: %w", err)
		}
	}
	// Scratch tables of runs that died with a previous process are cleared
	// by the dataset's next run.
	for _, ds := range db.datasets {
		ds.scratchDirty = true
	}
	if !opts.ReadOnly {
		db.startKeeper()
	}
	return db, nil
}

// pruneGrace returns how long an invalid transaction stays invalid before
// GC may prune it (G6, txn.I6): longer than any write of it can land
// after its call failed (the store's MaxWriteDelay, store.S9), plus,
// where other processes may still be writing, a slot lease (a writer stops
// writing when its slot expires by its own clock, W3, and the clocks agree
// to well within a lease).
func (db *DB) pruneGrace() time.Duration {
	if g := db.opts.pruneGrace; g != 0 {
		return max(g, 0)
	}
	var g time.Duration
	if lw, ok := db.st.(store.LateWriter); ok {
		g = lw.MaxWriteDelay()
	}
	if !db.processLocal {
		g += db.opts.SlotLease
	}
	return g
}
