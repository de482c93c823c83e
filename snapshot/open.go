package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	// snapstore_snapshot_readers_open, and txn's gauges); nil registers
	// none. Close unregisters them, so a DB can be reopened with the same
	// Registerer.
	Registerer prometheus.Registerer
	// Partitions is the number of hash partitions of a new dataset's row-key
	// space; default 1. Fixed per dataset at creation.
	Partitions int
	// ReadOnly opens the DB of a process that reads a store written by
	// another one (doc.go W1, W2): Open writes nothing, every write
	// returns ErrReadOnly, and reads refresh the view per RefreshInterval.
	ReadOnly bool
	// RefreshInterval is, for a ReadOnly DB, how old its view of the
	// datasets and of the txn sets may be when a read (Datasets, Dataset,
	// Versions, VersionInfo, Reader, Diff, DiffCounts) starts; an older
	// view is refreshed first (DB.Refresh). Default DefaultRefreshInterval (1 s);
	// negative: only explicit Refresh calls. Ignored by writer DBs.
	RefreshInterval time.Duration
	// WriterLease, when > 0, makes Open take the store's writer lease for
	// this long (renewed every third of it) and refuse with
	// ErrWriterLeaseHeld while another process holds it; writes fail with
	// ErrWriterLeaseLost once it is lost (doc.go W1, W3). 0 (default): no
	// lease, for stores only one process can open (store/pebble). Clocks
	// of the processes must agree to well within it.
	WriterLease time.Duration
	// now is the clock, injectable by tests; default time.Now.
	now func() time.Time
	// batchSize is the number of mutations per data batch, a test hook;
	// default batchSize (4096).
	batchSize int
	// hook, when set, is called at named points of a run and of GC, with a
	// count (rows put, batches applied); the crash test kills the process
	// there.
	hook func(point string, n int64)
}

// Open opens the datasets of st, turning every transaction left in progress
// by a previous process into an invalid one (D4, txn.I5).
// The metadata lives in st's table "meta" (txn.DefaultTable). With
// Options.WriterLease it first takes the writer lease (ErrWriterLeaseHeld);
// with Options.ReadOnly it writes nothing (doc.go W1). A SharedStore fills
// those options when they are zero.
func Open(ctx context.Context, st store.Store, opts Options) (*DB, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidArgument)
	}
	if ss, ok := st.(SharedStore); ok {
		sh := ss.Sharing()
		if !opts.ReadOnly && opts.WriterLease == 0 {
			opts.ReadOnly, opts.WriterLease = sh.ReadOnly, sh.WriterLease
		}
		if opts.RefreshInterval == 0 {
			opts.RefreshInterval = sh.RefreshInterval
		}
	}
	if opts.ReadOnly {
		opts.WriterLease = 0
		if opts.RefreshInterval == 0 {
			opts.RefreshInterval = DefaultRefreshInterval
		}
	}
	if opts.WriterLease < 0 {
		return nil, fmt.Errorf("%w: negative writer lease", ErrInvalidArgument)
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
	db := &DB{st: st, meta: txn.DefaultTable, logger: opts.Logger, opts: opts, datasets: map[string]*dataset{}, owner: newOwnerID()}
	if opts.WriterLease > 0 {
		// W1: before txn.Open, which invalidates what it takes for a dead
		// writer's transactions.
		if err := db.takeLease(ctx); err != nil {
			return nil, fmt.Errorf("snapshot: opening: %w", err)
		}
	}
	txm, err := txn.Open(ctx, st, txn.Options{Logger: opts.Logger, Registerer: opts.Registerer, ReadOnly: opts.ReadOnly})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("snapshot: opening: %w", err), db.releaseLease())
	}
	db.txm = txm
	db.metrics = newMetrics()
	// W2: metadata before the txn state it needs; txn.Open read that
	// state already, so a read-only DB reads it once more after.
	if err := db.loadInto(ctx, db.datasets); err == nil && opts.ReadOnly {
		err = txm.Refresh(ctx)
	}
	if err != nil {
		txm.Close()
		return nil, errors.Join(fmt.Errorf("snapshot: opening: %w", err), db.releaseLease())
	}
	if !opts.ReadOnly {
		for _, ds := range db.datasets {
			if ds.cfg.Format < dataFormat || ds.cfg.Format1Left {
				if err := db.migrateFormat1(ctx, ds); err != nil {
					txm.Close()
					return nil, errors.Join(fmt.Errorf("snapshot: migrating %s to storage format %d: %w", ds.name, dataFormat, err), db.releaseLease())
				}
			}
		}
	}
	db.refreshedAt.Store(opts.now().UnixNano())
	if opts.Registerer != nil {
		if err := db.metrics.register(opts.Registerer, db); err != nil {
			txm.Close()
			return nil, errors.Join(fmt.Errorf("snapshot: registering metrics: %w", err), db.releaseLease())
		}
	}
	// Scratch tables of runs that died with the previous process are
	// cleared by the dataset's next run.
	for _, ds := range db.datasets {
		ds.scratchDirty = true
	}
	return db, nil
}
