package snapshot

import (
	"context"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/snapstore/snapstore/store"
)

// BeginRun starts a run of cfg.Name (creating the dataset on first use and
// updating its retention and guard). ErrRunInProgress if one is running;
// ErrKeyChanged if opts.Schema.Key differs from the dataset's.
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
	db.mu.Lock()
	ds := db.datasets[cfg.Name]
	created := false
	if ds == nil {
		ds = newDataset(cfg.Name)
		ds.cfg = datasetConfig{CreatedAt: db.opts.now().UTC(), Partitions: db.opts.Partitions, Format: dataFormat}
		db.datasets[cfg.Name] = ds
		created = true
	}
	db.mu.Unlock()
	if err := ds.acquire("run"); err != nil {
		return nil, err
	}
	r, err := db.beginAcquired(ctx, ds, cfg, opts, created)
	if err != nil {
		ds.release()
		return nil, err
	}
	return r, nil
}

// beginAcquired begins a run of ds, whose writer slot the caller holds:
// it persists the configuration, clears a dirty scratch table, allocates
// the transaction id and opens an iterator over the current version per
// partition.
func (db *DB) beginAcquired(ctx context.Context, ds *dataset, cfg DatasetConfig, opts RunOptions, created bool) (*Run, error) {
	ds.mu.Lock()
	var prev *VersionInfo
	if ds.current > 0 {
		prev = ds.versionLocked(ds.current)
	}
	if prev != nil && !slices.Equal(prev.Schema.Key, opts.Schema.Key) {
		ds.mu.Unlock()
		return nil, fmt.Errorf("%w: %s has key %v, the run has %v", ErrKeyChanged, ds.name, prev.Schema.Key, opts.Schema.Key)
	}
	var err error
	// Columns new to the dataset join its dictionary before any row
	// version names them.
	newCols := false
	for _, c := range opts.Schema.Columns {
		if !slices.Contains(ds.cfg.Columns, c.Name) {
			ds.cfg.Columns = append(slices.Clip(ds.cfg.Columns), c.Name)
			newCols = true
		}
	}
	if created || newCols || ds.cfg.Retention != cfg.Retention || ds.cfg.Guard != cfg.Guard || !slices.Equal(ds.cfg.Key, opts.Schema.Key) {
		ds.cfg.Retention, ds.cfg.Guard, ds.cfg.Key = cfg.Retention, cfg.Guard, slices.Clone(opts.Schema.Key)
		err = db.putConfigLocked(ctx, ds)
	}
	dict := newDictionary(ds.cfg.Columns)
	parts := ds.cfg.Partitions
	dirty := ds.scratchDirty
	ds.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("snapshot: beginning a run of %s: %w", ds.name, err)
	}
	if created {
		db.logger.Info("dataset created", "dataset", ds.name, "partitions", parts)
	}
	if dirty {
		db.clearScratch(ctx, ds, parts)
	}
	id, err := db.txm.Begin(ctx, ds.name)
	if err != nil {
		return nil, fmt.Errorf("snapshot: beginning a run of %s: %w", ds.name, err)
	}
	r := &Run{db: db, ds: ds, id: id, opts: opts, guard: cfg.Guard, nparts: parts, prev: prev,
		digest: xxhash.New(), started: db.opts.now()}
	r.opts.Schema.Columns = slices.Clone(opts.Schema.Columns)
	r.opts.Schema.Key = slices.Clone(opts.Schema.Key)
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
		d := dict.index[c.Name]
		r.runOf[d] = si
		r.inOrder = r.inOrder && (si == 0 || d > r.dictOf[si-1])
		r.dictOf = append(r.dictOf, d)
	}
	if prev != nil {
		r.prevVis = db.txm.Visibility(ds.name, prev.Version)
		r.readOpts = readOpts(r.prevVis)
	}
	loader, _ := db.st.(store.Loader)
	for p := 0; p < parts; p++ {
		rp := &runPart{table: dataTable(ds.name, p), scratch: scratchTable(ds.name, p)}
		rp.data.Table, rp.seen.Table = rp.table, rp.scratch
		if prev == nil && loader != nil {
			l, err := loader.Load(ctx, rp.table)
			if err != nil {
				for _, q := range r.parts {
					q.load.Close()
				}
				db.txm.Abort(ctx, id, nil)
				return nil, fmt.Errorf("snapshot: beginning a run of %s: %w", ds.name, err)
			}
			rp.load = l
		}
		if prev != nil {
			it, err := db.st.Scan(ctx, rp.table, store.ScanOptions{ReadOptions: r.readOpts})
			if err != nil {
				r.closeIters()
				db.txm.Abort(ctx, id, nil)
				return nil, fmt.Errorf("snapshot: beginning a run of %s: %w", ds.name, err)
			}
			rp.cur = newRowCursor(it, r.prevVis, r.n)
		}
		r.parts = append(r.parts, rp)
	}
	r.startWriter(ctx)
	ds.mu.Lock()
	ds.run = r
	ds.mu.Unlock()
	db.logger.Info("run begun", "dataset", ds.name, "txn", id, "version", r.prevVersion())
	return r, nil
}
