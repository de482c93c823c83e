package snapshot

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"

	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// datasetConfig is the persisted configuration of a dataset.
type datasetConfig struct {
	CreatedAt  time.Time `json:"created_at"`
	Partitions int       `json:"partitions"`
	Retention  Retention `json:"retention"`
	Guard      Guard     `json:"guard"`
	// Key is the key column list; fixed once a version is committed.
	Key []string `json:"key"`
}

// dataset is the in-memory state of one dataset.
type dataset struct {
	name string

	// mu guards the fields below. Lock order: DB.mu, then dataset.mu, then
	// the txn manager's. Not held across store I/O except the short
	// metadata writes of Tag/Untag/SetConfig.
	mu       sync.Mutex
	cfg      datasetConfig
	current  int64
	versions []*VersionInfo // kept versions, ascending; Current and Tags unset
	// expired lists, ascending, the committed versions GC expired whose
	// cells may still be visible in later versions (G7): a rollback past
	// them must invalidate them too.
	expired []int64
	tags    map[string]int64
	// writer names the exclusive operation holding the dataset ("run",
	// "gc", "rollback", "drop"), "" when none (DESIGN 6).
	writer  string
	run     *Run
	readers map[*Reader]struct{}
	dropped bool
	// scratchDirty is set while the scratch tables may hold keys (from a
	// run begun and not yet cleaned up, or an earlier process).
	scratchDirty bool
}

func (ds *dataset) versionLocked(v int64) *VersionInfo {
	i, ok := slices.BinarySearchFunc(ds.versions, v, func(vi *VersionInfo, v int64) int { return cmp.Compare(vi.Version, v) })
	if !ok {
		return nil
	}
	return ds.versions[i]
}

// infoLocked returns a copy of vi with Current and Tags filled in.
func (ds *dataset) infoLocked(vi *VersionInfo) VersionInfo {
	out := *vi
	out.Current = vi.Version == ds.current
	out.Tags = nil
	for t, v := range ds.tags {
		if v == vi.Version {
			out.Tags = append(out.Tags, t)
		}
	}
	sort.Strings(out.Tags)
	return out
}

func (ds *dataset) describeLocked() DatasetInfo {
	di := DatasetInfo{
		Name: ds.name, CreatedAt: ds.cfg.CreatedAt, Partitions: ds.cfg.Partitions,
		Current: ds.current, Retention: ds.cfg.Retention, Guard: ds.cfg.Guard, Versions: len(ds.versions),
	}
	if vi := ds.versionLocked(ds.current); vi != nil {
		info := ds.infoLocked(vi)
		di.CurrentInfo = &info
	}
	return di
}

// acquire takes the dataset's writer slot for op. ErrRunInProgress when
// another exclusive operation holds it; ErrDatasetNotFound when dropped.
func (ds *dataset) acquire(op string) error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.dropped {
		return fmt.Errorf("%w: %s", ErrDatasetNotFound, ds.name)
	}
	if ds.writer != "" {
		return fmt.Errorf("%w: %s of %s holds it", ErrRunInProgress, ds.writer, ds.name)
	}
	ds.writer = op
	return nil
}

func (ds *dataset) release() {
	ds.mu.Lock()
	ds.writer = ""
	ds.run = nil
	ds.mu.Unlock()
}

type metrics struct {
	runs       *prometheus.CounterVec
	cellsWrite prometheus.Counter
	gcDeleted  prometheus.Counter
	commitSecs prometheus.Histogram
	reg        prometheus.Registerer
	colls      []prometheus.Collector
}

func newMetrics() *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snapstore_snapshot_runs_total",
			Help: "Runs ended, by result (committed, aborted)."}, []string{"result"}),
		cellsWrite: prometheus.NewCounter(prometheus.CounterOpts{Name: "snapstore_snapshot_cells_written_total",
			Help: "Data cells and delete markers written by runs."}),
		gcDeleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "snapstore_snapshot_gc_cells_deleted_total",
			Help: "Cell versions physically removed by GC."}),
		commitSecs: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "snapstore_snapshot_commit_duration_seconds",
			Help: "Time of Run.Commit (delete detection, flush, durable commit)."}),
	}
	return m
}

// register registers the metrics with reg; Close unregisters them.
func (m *metrics) register(reg prometheus.Registerer, db *DB) error {
	m.reg = reg
	for _, c := range []prometheus.Collector{m.runs, m.cellsWrite, m.gcDeleted, m.commitSecs,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "snapstore_snapshot_readers_open",
			Help: "Readers currently pinning a version."}, func() float64 { return float64(db.openReaders.Load()) })} {
		if err := reg.Register(c); err != nil {
			m.unregister()
			return err
		}
		m.colls = append(m.colls, c)
	}
	return nil
}

func (m *metrics) unregister() {
	for _, c := range m.colls {
		m.reg.Unregister(c)
	}
	m.colls = nil
}

// Open opens the datasets of st, turning every transaction left in progress
// by a previous process into an invalid one (DESIGN semantics 3, txn I5).
// The metadata lives in st's table "meta" (txn.DefaultTable). With
// Options.WriterLease it first takes the writer lease (ErrWriterLeaseHeld);
// with Options.ReadOnly it writes nothing (doc.go S1). A SharedStore fills
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
		// S1: before txn.Open, which invalidates what it takes for a dead
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
	// S2: metadata before the txn state it needs; txn.Open read that
	// state already, so a read-only DB reads it once more after.
	if err := db.loadInto(ctx, db.datasets); err == nil && opts.ReadOnly {
		err = txm.Refresh(ctx)
	}
	if err != nil {
		txm.Close()
		return nil, errors.Join(fmt.Errorf("snapshot: opening: %w", err), db.releaseLease())
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

// loadInto reads every dataset's metadata into datasets.
func (db *DB) loadInto(ctx context.Context, datasets map[string]*dataset) error {
	get := func(prefix []byte, fn func(c store.Cell) error) error {
		it, err := db.st.Scan(ctx, db.meta, store.ScanOptions{Start: prefix, End: prefixEnd(prefix)})
		if err != nil {
			return err
		}
		for it.Next() {
			c := it.Cell()
			if c.Kind != store.KindPut {
				continue
			}
			if err := fn(c); err != nil {
				it.Close()
				return err
			}
		}
		return it.Close()
	}
	err := get(prefixDataset, func(c store.Cell) error {
		name := string(c.Row[len(prefixDataset):])
		ds := datasets[name]
		if ds == nil {
			ds = &dataset{name: name, tags: map[string]int64{}, readers: map[*Reader]struct{}{}}
			datasets[name] = ds
		}
		switch {
		case bytes.Equal(c.Column, colCfg):
			if err := json.Unmarshal(c.Value, &ds.cfg); err != nil {
				return fmt.Errorf("%w: config of %s: %v", ErrCorrupt, name, err)
			}
		case bytes.Equal(c.Column, colExp):
			ids, ok := decodeIDs(c.Value)
			if !ok {
				return fmt.Errorf("%w: expired versions of %s", ErrCorrupt, name)
			}
			ds.expired = ids
		case bytes.Equal(c.Column, colCur):
			if len(c.Value) != 8 {
				return fmt.Errorf("%w: current version of %s", ErrCorrupt, name)
			}
			ds.current = int64(binary.BigEndian.Uint64(c.Value))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, ds := range datasets {
		if ds.cfg.Partitions <= 0 {
			ds.cfg.Partitions = 1
		}
		err := get(versionPrefix(ds.name), func(c store.Cell) error {
			vi := new(VersionInfo)
			if err := json.Unmarshal(c.Value, vi); err != nil {
				return fmt.Errorf("%w: version of %s: %v", ErrCorrupt, ds.name, err)
			}
			ds.versions = append(ds.versions, vi)
			return nil
		})
		if err != nil {
			return err
		}
		slices.SortFunc(ds.versions, func(a, b *VersionInfo) int { return cmp.Compare(a.Version, b.Version) })
		err = get(tagPrefix(ds.name), func(c store.Cell) error {
			if len(c.Value) != 8 {
				return fmt.Errorf("%w: tag of %s", ErrCorrupt, ds.name)
			}
			ds.tags[string(c.Row[len(tagPrefix(ds.name)):])] = int64(binary.BigEndian.Uint64(c.Value))
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// clearScratchIfDirty clears the scratch tables of ds when a run may have
// written them.
func (db *DB) clearScratchIfDirty(ctx context.Context, ds *dataset, parts int) {
	ds.mu.Lock()
	dirty := ds.scratchDirty
	ds.mu.Unlock()
	if dirty {
		db.clearScratch(ctx, ds, parts)
	}
}

// clearScratch empties the scratch tables of ds; on success they are
// known clean, so the next run need not clear them first.
func (db *DB) clearScratch(ctx context.Context, ds *dataset, parts int) {
	for p := 0; p < parts; p++ {
		if err := db.st.DeleteRange(ctx, scratchTable(ds.name, p), nil, nil); err != nil {
			db.logger.Warn("clearing a run's scratch table", "dataset", ds.name, "err", err)
			return
		}
	}
	ds.mu.Lock()
	ds.scratchDirty = false
	ds.mu.Unlock()
}

func (db *DB) check() error {
	if db == nil || db.closed.Load() {
		return ErrClosed
	}
	return nil
}

// lookup returns the dataset or ErrDatasetNotFound.
func (db *DB) lookup(name string) (*dataset, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	db.mu.Lock()
	ds := db.datasets[name]
	db.mu.Unlock()
	if ds == nil {
		return nil, fmt.Errorf("%w: %q", ErrDatasetNotFound, name)
	}
	return ds, nil
}

// validName checks a dataset name: 1 to 200 bytes of ASCII letters,
// digits and "_.:@-".
func validName(what, name string) error {
	if len(name) == 0 || len(name) > 200 {
		return fmt.Errorf("%w: %s name must have 1 to 200 bytes", ErrInvalidArgument, what)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '@' || c == '-') {
			return fmt.Errorf("%w: %s name %q may hold only letters, digits and _.:@-", ErrInvalidArgument, what, name)
		}
	}
	return nil
}

func (db *DB) putConfigLocked(ctx context.Context, ds *dataset) error {
	b, err := json.Marshal(ds.cfg)
	if err != nil {
		return err
	}
	batch := &store.Batch{Table: db.meta, Sync: true}
	batch.Put(datasetKey(ds.name), colCfg, 0, b)
	return db.st.Apply(ctx, batch)
}

// Close closes the DB (not the store). Open runs are aborted.
func (db *DB) closeImpl() error {
	if db == nil || db.closed.Swap(true) {
		return nil
	}
	db.mu.Lock()
	var runs []*Run
	for _, ds := range db.datasets {
		ds.mu.Lock()
		if ds.run != nil {
			runs = append(runs, ds.run)
		}
		ds.mu.Unlock()
	}
	db.mu.Unlock()
	var errs []error
	for _, r := range runs {
		if err := r.abort(context.Background(), "database closed"); err != nil {
			errs = append(errs, err)
		}
	}
	db.metrics.unregister()
	db.txm.Close()
	if err := db.releaseLease(); err != nil {
		errs = append(errs, fmt.Errorf("releasing the writer lease: %w", err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("snapshot: closing: %w", errs[0])
	}
	return nil
}

// Datasets lists every dataset, by name.
func (db *DB) datasetsImpl() ([]DatasetInfo, error) {
	if err := db.check(); err != nil {
		return nil, err
	}
	db.mu.Lock()
	all := make([]*dataset, 0, len(db.datasets))
	for _, ds := range db.datasets {
		all = append(all, ds)
	}
	db.mu.Unlock()
	out := make([]DatasetInfo, 0, len(all))
	for _, ds := range all {
		ds.mu.Lock()
		if !ds.dropped {
			out = append(out, ds.describeLocked())
		}
		ds.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b DatasetInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

func (db *DB) datasetImpl(name string) (DatasetInfo, error) {
	ds, err := db.lookup(name)
	if err != nil {
		return DatasetInfo{}, err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.dropped {
		return DatasetInfo{}, fmt.Errorf("%w: %q", ErrDatasetNotFound, name)
	}
	return ds.describeLocked(), nil
}

func (db *DB) versionsImpl(name string) ([]VersionInfo, error) {
	ds, err := db.lookup(name)
	if err != nil {
		return nil, err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	out := make([]VersionInfo, 0, len(ds.versions))
	for i := len(ds.versions) - 1; i >= 0; i-- {
		out = append(out, ds.infoLocked(ds.versions[i]))
	}
	return out, nil
}

func (db *DB) versionInfoImpl(name string, v int64) (VersionInfo, error) {
	ds, err := db.lookup(name)
	if err != nil {
		return VersionInfo{}, err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	vi := ds.versionLocked(v)
	if vi == nil {
		return VersionInfo{}, fmt.Errorf("%w: %s version %d", ErrVersionNotKept, name, v)
	}
	return ds.infoLocked(vi), nil
}

func (db *DB) setConfigImpl(ctx context.Context, cfg DatasetConfig) error {
	if err := validConfig(cfg); err != nil {
		return err
	}
	if err := db.writable(); err != nil {
		return err
	}
	ds, err := db.lookup(cfg.Name)
	if err != nil {
		return err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	ds.cfg.Retention, ds.cfg.Guard = cfg.Retention, cfg.Guard
	if err := db.putConfigLocked(ctx, ds); err != nil {
		return fmt.Errorf("snapshot: setting config of %s: %w", cfg.Name, err)
	}
	return nil
}

func validConfig(cfg DatasetConfig) error {
	if err := validName("dataset", cfg.Name); err != nil {
		return err
	}
	if cfg.Retention.TTL < 0 {
		return fmt.Errorf("%w: negative retention ttl", ErrInvalidArgument)
	}
	if cfg.Guard.MaxShrink < 0 || cfg.Guard.MaxShrink > 1 {
		return fmt.Errorf("%w: guard max_shrink %v outside 0..1", ErrInvalidArgument, cfg.Guard.MaxShrink)
	}
	return nil
}

func (db *DB) dropImpl(ctx context.Context, name string) error {
	if err := db.writable(); err != nil {
		return err
	}
	ds, err := db.lookup(name)
	if err != nil {
		return err
	}
	if err := ds.acquire("drop"); err != nil {
		return err
	}
	defer ds.release()
	ds.mu.Lock()
	parts := ds.cfg.Partitions
	versions := slices.Clone(ds.versions)
	tags := make([]string, 0, len(ds.tags))
	for t := range ds.tags {
		tags = append(tags, t)
	}
	ds.mu.Unlock()
	// Metadata first: once it is gone the dataset does not exist, even if
	// we crash before the cells are removed (they are then unreachable
	// under a new dataset of the same name only through new txn ids... so
	// remove them before reporting success).
	b := &store.Batch{Table: db.meta, Sync: true}
	b.DeleteVersion(datasetKey(name), colCfg, 0)
	b.DeleteVersion(datasetKey(name), colCur, 0)
	b.DeleteVersion(datasetKey(name), colExp, 0)
	for _, vi := range versions {
		b.DeleteVersion(versionKey(name, vi.Version), colInfo, 0)
	}
	for _, t := range tags {
		b.DeleteVersion(tagKey(name, t), colV, 0)
	}
	for p := 0; p < parts; p++ {
		if err := db.st.DeleteRange(ctx, dataTable(name, p), nil, nil); err != nil {
			return fmt.Errorf("snapshot: dropping %s: %w", name, err)
		}
	}
	db.clearScratch(ctx, ds, parts)
	if err := db.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("snapshot: dropping %s: %w", name, err)
	}
	if err := db.txm.Prune(ctx, db.txm.Invalid(name)); err != nil {
		db.logger.Warn("pruning invalid transactions of a dropped dataset", "dataset", name, "err", err)
	}
	db.mu.Lock()
	delete(db.datasets, name)
	db.mu.Unlock()
	ds.mu.Lock()
	ds.dropped = true
	ds.mu.Unlock()
	db.logger.Info("dataset dropped", "dataset", name)
	return nil
}

// Records.

func validRecord(kind, name string) error {
	if kind == "" || bytes.IndexByte([]byte(kind), 0) >= 0 {
		return fmt.Errorf("%w: record kind must be non-empty without NUL", ErrInvalidArgument)
	}
	if name == "" || bytes.IndexByte([]byte(name), 0) >= 0 {
		return fmt.Errorf("%w: record name must be non-empty without NUL", ErrInvalidArgument)
	}
	return nil
}

func (db *DB) putRecordImpl(ctx context.Context, kind, name string, value []byte) error {
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

func (db *DB) getRecordImpl(ctx context.Context, kind, name string) ([]byte, error) {
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

func (db *DB) listRecordsImpl(ctx context.Context, kind string) ([]Record, error) {
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

func (db *DB) deleteRecordImpl(ctx context.Context, kind, name string) error {
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

// Tags.

func (db *DB) tagImpl(ctx context.Context, name, tag string, v int64) error {
	if err := validName("tag", tag); err != nil {
		return err
	}
	if err := db.writable(); err != nil {
		return err
	}
	ds, err := db.lookup(name)
	if err != nil {
		return err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.versionLocked(v) == nil {
		return fmt.Errorf("%w: %s version %d", ErrVersionNotKept, name, v)
	}
	b := &store.Batch{Table: db.meta, Sync: true}
	b.Put(tagKey(name, tag), colV, 0, be64(v))
	if err := db.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("snapshot: tagging %s version %d: %w", name, v, err)
	}
	ds.tags[tag] = v
	return nil
}

func (db *DB) untagImpl(ctx context.Context, name, tag string) error {
	if err := db.writable(); err != nil {
		return err
	}
	ds, err := db.lookup(name)
	if err != nil {
		return err
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if _, ok := ds.tags[tag]; !ok {
		return fmt.Errorf("%w: %s tag %q", ErrTagNotFound, name, tag)
	}
	b := &store.Batch{Table: db.meta, Sync: true}
	b.DeleteVersion(tagKey(name, tag), colV, 0)
	if err := db.st.Apply(ctx, b); err != nil {
		return fmt.Errorf("snapshot: untagging %s: %w", name, err)
	}
	delete(ds.tags, tag)
	return nil
}

// Rollback.

func (db *DB) rollbackImpl(ctx context.Context, name string, to int64) (VersionInfo, error) {
	if err := db.writable(); err != nil {
		return VersionInfo{}, err
	}
	ds, err := db.lookup(name)
	if err != nil {
		return VersionInfo{}, err
	}
	if err := ds.acquire("rollback"); err != nil {
		return VersionInfo{}, err
	}
	defer ds.release()
	ds.mu.Lock()
	target := ds.versionLocked(to)
	if target == nil {
		ds.mu.Unlock()
		return VersionInfo{}, fmt.Errorf("%w: %s version %d", ErrVersionNotKept, name, to)
	}
	var later []int64
	for _, vi := range ds.versions {
		if vi.Version > to {
			later = append(later, vi.Version)
		}
	}
	// Expired versions after the target may still have visible cells
	// (G7): they become invalid too.
	var keepExpired []int64
	for _, v := range ds.expired {
		if v > to {
			later = append(later, v)
		} else {
			keepExpired = append(keepExpired, v)
		}
	}
	var tags []string
	for t, v := range ds.tags {
		if v > to {
			tags = append(tags, t)
		}
	}
	ds.mu.Unlock()
	b := &store.Batch{Table: db.meta}
	b.Put(datasetKey(name), colCur, 0, be64(to))
	b.Put(datasetKey(name), colExp, 0, encodeIDs(keepExpired))
	for _, v := range later {
		b.DeleteVersion(versionKey(name, v), colInfo, 0)
	}
	for _, t := range tags {
		b.DeleteVersion(tagKey(name, t), colV, 0)
	}
	// One durable write: the later versions become invalid transactions
	// (txn I4) and the target becomes current.
	if err := db.txm.Invalidate(ctx, name, later, b); err != nil {
		return VersionInfo{}, fmt.Errorf("snapshot: rolling %s back to %d: %w", name, to, err)
	}
	ds.mu.Lock()
	ds.current = to
	ds.expired = keepExpired
	ds.versions = slices.DeleteFunc(ds.versions, func(vi *VersionInfo) bool { return vi.Version > to })
	for _, t := range tags {
		delete(ds.tags, t)
	}
	info := ds.infoLocked(target)
	ds.mu.Unlock()
	db.logger.Info("dataset rolled back", "dataset", name, "version", to, "invalidated", len(later))
	return info, nil
}
