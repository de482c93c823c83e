package snapshot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/snapstore/snapstore/store"
)

// BeginRun starts a run of cfg.Name (creating the dataset on first use and
// updating its retention and guard). ErrRunInProgress if a run, GC,
// rollback or drop of the dataset is under way, in this process or
// another; ErrKeyChanged if opts.Schema.Key differs from the dataset's;
// ErrTableRequired for a dataset of named tables (BeginTablesRun).
func (db *DB) BeginRun(ctx context.Context, cfg DatasetConfig, opts RunOptions) (*Run, error) {
	if err := db.writable(); err != nil {
		return nil, err
	}
	if err := validConfig(cfg); err != nil {
		return nil, err
	}
	if err := validSchema(opts.Schema); err != nil {
		return nil, err
	}
	ds, err := db.acquireForRun(ctx, cfg.Name)
	if err != nil {
		return nil, err
	}
	r, err := db.beginAcquired(ctx, ds, cfg, opts, "run", 0)
	if err != nil {
		ds.release()
		return nil, err
	}
	return r, nil
}

// acquireForRun takes the writer slot of dataset name for a run, after
// finishing a drop of the name left unfinished.
func (db *DB) acquireForRun(ctx context.Context, name string) (*dataset, error) {
	ds, dropping := db.datasetFor(name)
	if dropping != nil {
		// A drop of the name was left unfinished: finish it first.
		if err := db.finishDrop(ctx, dropping); err != nil {
			return nil, fmt.Errorf("%w: a drop of %s is under way: %v", ErrRunInProgress, name, err)
		}
		if ds, dropping = db.datasetFor(name); dropping != nil {
			return nil, fmt.Errorf("%w: a drop of %s is under way", ErrRunInProgress, name)
		}
	}
	if err := ds.acquire("run"); err != nil {
		return nil, err
	}
	return ds, nil
}

// datasetFor returns the in-memory dataset of name, made anew when there
// is none or it was dropped, or the dataset whose drop is under way.
func (db *DB) datasetFor(name string) (ds, dropping *dataset) {
	db.mu.Lock()
	defer db.mu.Unlock()
	ds = db.datasets[name]
	if ds != nil {
		ds.mu.Lock()
		isDropping, dropped := ds.st.Dropping != nil, ds.dropped
		ds.mu.Unlock()
		switch {
		case isDropping:
			return nil, ds
		case !dropped:
			return ds, nil
		}
	}
	ds = newDataset(name, db.owner)
	db.datasets[name] = ds
	return ds, nil
}

// errIDBelow: the transaction id taken lies at or below an id the dataset
// used (another process used a later block since); take another.
var errIDBelow = errors.New("snapshot: transaction id below the dataset's")

// beginAcquired begins a run of ds, which the caller acquired for op: one
// write of the row (D9) takes the writer slot, records the configuration
// and the transaction in progress (txn.I3); then a scratch table a run
// left is cleared, and an iterator over the current version opened per
// partition.
func (db *DB) beginAcquired(ctx context.Context, ds *dataset, cfg DatasetConfig, opts RunOptions, op string, restoredFrom int64) (*Run, error) {
	ds.mu.Lock()
	created := !ds.persisted
	ds.mu.Unlock()
	id, st, err := db.beginTxn(ctx, ds, cfg, op,
		func(st *rowState) error { return refuseRun(st, ds, opts.Schema) },
		func(st *rowState) error { return configureRun(st, ds, cfg, opts.Schema) })
	if err != nil {
		return nil, err
	}
	if created {
		db.logger.Info("dataset created", "dataset", ds.name, "partitions", st.Config.Partitions)
	}
	ds.mu.Lock()
	var prev *VersionInfo
	if st.Current > 0 {
		prev = ds.versionLocked(st.Current)
	}
	parts := st.Config.Partitions
	dirty := ds.scratchDirty
	ds.mu.Unlock()
	dict := newDictionary(st.Config.Columns)
	r := &Run{db: db, ds: ds, id: id, epoch: st.Slot.Epoch, op: op, opts: opts, guard: cfg.Guard, nparts: parts, part: -1, prev: prev,
		restoredFrom: restoredFrom, digest: xxhash.New(), started: db.opts.now()}
	r.place, err = newPlacer(opts.Schema, st.Config.PartitionKey, parts)
	fail := func(err error) (*Run, error) {
		r.closeIters()
		for _, p := range r.parts {
			if p.load != nil {
				p.load.Close()
			}
		}
		if aerr := db.endTxn(context.WithoutCancel(ctx), r, "it could not begin"); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return nil, fmt.Errorf("snapshot: beginning a run of %s: %w", ds.name, err)
	}
	if err != nil {
		return fail(err)
	}
	if st.Current > 0 && prev == nil {
		return fail(fmt.Errorf("%w: current version %d is not a kept version", ErrCorrupt, st.Current))
	}
	if dirty {
		// A failed clear fails the run: it is the store failing, and the
		// run would write where it could not delete.
		if err := db.clearScratch(ctx, ds, parts, id); err != nil {
			return fail(fmt.Errorf("clearing the scratch table an earlier run left: %w", err))
		}
	}
	if err := r.setSchema(opts.Schema, dict); err != nil {
		return fail(err)
	}
	if prev != nil {
		r.prevVis = st.Txns.Visibility(prev.Version)
		r.readOpts = readOpts(r.prevVis)
	}
	if err := r.openParts(ctx); err != nil {
		return fail(err)
	}
	ds.mu.Lock()
	ds.run = r
	ds.mu.Unlock()
	db.logger.Info("run begun", "dataset", ds.name, "txn", id, "version", r.prevVersion())
	return r, nil
}

// beginTxn takes a transaction id and, in one write of the row of ds
// (D9), the writer slot for op, cfg's retention and guard, the run's
// configuration (configure: opts' schema for a run of one table, the
// tables for a run of several) and the transaction in progress (txn.I3).
// refuse is asked first whether the dataset's row admits the run; an error
// of refuse or configure gives up. An id at or below one the dataset used
// (errIDBelow) is drawn again, up to three times.
func (db *DB) beginTxn(ctx context.Context, ds *dataset, cfg DatasetConfig, op string, refuse, configure func(st *rowState) error) (int64, rowState, error) {
	var id int64
	var st rowState
	var err error
	for range 3 {
		ds.mu.Lock()
		top := ds.st.Top
		ds.mu.Unlock()
		if id, err = db.ids.Next(ctx, top); err != nil {
			return 0, rowState{}, fmt.Errorf("snapshot: beginning a run of %s: %w", ds.name, err)
		}
		now := db.opts.now()
		st, err = db.writeRow(ctx, ds, func(st *rowState) error {
			switch {
			case st.Dropping != nil:
				return fmt.Errorf("%w: a drop of %s is under way", ErrRunInProgress, ds.name)
			case st.Txns.IsInProgress(id) && st.Slot.Owner == db.owner:
				return errNoChange // this write landed already
			case id <= st.Top:
				return errIDBelow
			}
			if err := refuse(st); err != nil {
				return err
			}
			if err := db.takeSlot(st, ds.name, op, now); err != nil {
				return err
			}
			if st.Config.CreatedAt.IsZero() {
				st.Config = datasetConfig{CreatedAt: now.UTC(), Partitions: cmp.Or(cfg.Partitions, db.opts.Partitions)}
			}
			st.Config.Retention, st.Config.Guard = cfg.Retention, cfg.Guard
			if err := configure(st); err != nil {
				return err
			}
			st.Top = id
			return st.Txns.Begin(id, now)
		})
		if !errors.Is(err, errIDBelow) {
			break
		}
	}
	if err != nil {
		return 0, rowState{}, fmt.Errorf("snapshot: beginning a run of %s: %w", ds.name, err)
	}
	return id, st, nil
}

// refuseRun refuses a run of one table of schema s on a dataset of named
// tables (ErrTableRequired) or, once a version is committed, of another
// key (ErrKeyChanged).
func refuseRun(st *rowState, ds *dataset, s Schema) error {
	switch {
	case st.Config.Named:
		return fmt.Errorf("%w: dataset %s holds the tables %s, written by runs of several tables; a run of one table needs a dataset of its own", ErrTableRequired, ds.name, strings.Join(ds.tableNames(st), ", "))
	case st.Current > 0 && !slices.Equal(st.Config.Key, s.Key):
		return fmt.Errorf("%w: %s has key %v, the run has %v", ErrKeyChanged, ds.name, st.Config.Key, s.Key)
	}
	return nil
}

// configureRun sets the configuration of a run of one table of schema s:
// the partition key of cfg, s's key, and the columns of s new to the
// dataset, which join its dictionary before any row version names them.
func configureRun(st *rowState, ds *dataset, cfg DatasetConfig, s Schema) error {
	if err := setPartitionKey(st, ds.name, cfg.PartitionKey, s); err != nil {
		return err
	}
	st.Config.Key = slices.Clone(s.Key)
	for _, c := range s.Columns {
		if !slices.Contains(st.Config.Columns, c.Name) {
			st.Config.Columns = append(slices.Clip(st.Config.Columns), c.Name)
		}
	}
	return nil
}

// openParts opens the run's partitions: each one's data and scratch
// tables, a load into the store when the dataset has no version yet and
// the store can load (store.Loader), else a cursor over the previous
// version.
func (r *Run) openParts(ctx context.Context) error {
	db, ds, prev := r.db, r.ds, r.prev
	loader, _ := db.st.(store.Loader)
	for p := 0; p < r.nparts; p++ {
		rp := &runPart{table: dataTable(ds.name, p), scratch: scratchTable(ds.name, p)}
		rp.data.Table, rp.seen.Table = rp.table, rp.scratch
		if prev == nil && loader != nil {
			l, err := loader.Load(ctx, rp.table)
			if err != nil {
				return err
			}
			rp.load = l
		}
		if prev != nil {
			it, err := db.st.Scan(ctx, rp.table, store.ScanOptions{ReadOptions: r.readOpts})
			if err != nil {
				return err
			}
			rp.cur = newRowCursor(it, r.prevVis, r.n)
		}
		r.parts = append(r.parts, rp)
	}
	return nil
}

// setSchema sets the run's schema (a copy) and what Put derives from it:
// the column names, the key columns, and where each column sits in the
// dataset's dictionary (rowversion.go), which must hold every column of s
// (ErrCorrupt otherwise: a run's begin adds them before any writer opens).
func (r *Run) setSchema(s Schema, dict *dictionary) error {
	r.opts.Schema.Columns = slices.Clone(s.Columns)
	r.opts.Schema.Key = slices.Clone(s.Key)
	for _, c := range r.opts.Schema.Columns {
		r.cols = append(r.cols, []byte(c.Name))
	}
	r.keyIdx = keyIndexes(r.opts.Schema)
	r.n = len(dict.names)
	r.runOf = make([]int, r.n)
	for d := range r.runOf {
		r.runOf[d] = -1
	}
	r.inOrder = true
	for si, c := range r.opts.Schema.Columns {
		d, ok := dict.index[c.Name]
		if !ok {
			return fmt.Errorf("%w: column %q of %s is not in the dataset's dictionary", ErrCorrupt, c.Name, r.ds.name)
		}
		r.runOf[d] = si
		r.inOrder = r.inOrder && (si == 0 || d > r.dictOf[si-1])
		r.dictOf = append(r.dictOf, d)
	}
	return nil
}
