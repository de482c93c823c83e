package snapshot

// Runs of datasets of named tables (tables.go): one transaction, the
// dataset's one writer slot, one Run per table writing that table's data
// tables as a Run of one table does (D5, D6), and one commit (D3, D9)
// covering every table. A table's Run holds no slot and never ends the
// transaction: the TablesRun does, as a PartitionedRun does for its
// partitions (run_partition.go).
//
// A table's Run holds buffers, a writer goroutine, iterators over the
// previous version and, in a first run, a load (an SSTable being written,
// run_write.go) only while its rows are written: it is opened at its
// first Put or Carry and released when the table is finished
// (TableWriter.Finish, or Commit for a table not finished), so that a
// run's memory follows the tables written at once, not the tables of the
// dataset.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/snapstore/snapstore/store"
)

// TablesRunOptions describe one run of a dataset of named tables.
type TablesRunOptions struct {
	// Tables are the tables the run writes, at least one, names unique.
	Tables []TableSpec
	Source SourceInfo
	// Force commits even when a table's guard would refuse.
	Force bool
	// VerifyUnchanged makes a Commit that finds nothing changed in any
	// table (no row inserted, updated or deleted, the same schemas, the
	// same tables) record the previous version verified instead of
	// committing a copy of it (RunOptions.VerifyUnchanged).
	VerifyUnchanged bool
	// DropMissing lets the run commit without a table the current
	// version holds: the new version lacks it, older versions keep it.
	// Without it BeginTablesRun refuses with ErrTableMissing.
	DropMissing bool
}

// TablesRun is one in-progress write of the next version of a dataset of
// named tables: BeginTablesRun starts it, each table's TableWriter takes
// its rows, Commit or Abort ends it. The TableWriters may be used from
// different goroutines at once (one goroutine per writer); Commit and
// Abort only once no Put is under way. Stats is safe from any goroutine.
type TablesRun struct {
	db           *DB
	ds           *dataset
	id, epoch    int64
	opts         TablesRunOptions
	guard        Guard
	prev         *VersionInfo // nil when the dataset has none
	restoredFrom int64
	writers      []*TableWriter // by name
	dropped      []DroppedTable // tables of prev the run does not write, by name
	started      time.Time

	mu       sync.Mutex // guards done
	done     bool
	verified bool

	open atomic.Int64 // tables opened and not finished
}

// TableWriter compares and writes the rows of one table of a TablesRun
// (D5, D6). Not safe for concurrent use, except Stats; writers of
// different tables may be used at once.
type TableWriter struct {
	tr   *TablesRun
	r    *Run
	name string
	num  int
	tc   tableConfig

	opened   bool // the Run's partitions and writer exist (open)
	finished bool // its writes are made and its buffers released (Finish)
	// parts is set when other processes write the table's partitions
	// (run_tables_partition.go).
	parts *tableParts
}

// BeginTablesRun starts a run of cfg.Name, a dataset of named tables
// (created on first use), writing opts.Tables. Errors: as BeginRun
// (ErrRunInProgress, ErrKeyChanged and ErrPartitionKey for a table whose
// key or partition key changed); ErrTableMissing (naming the tables) when
// the current version holds a table the run lacks and opts.DropMissing
// is not set; ErrInvalidArgument for bad or repeated table names, no
// table, or a dataset of one unnamed table (BeginRun's).
func (db *DB) BeginTablesRun(ctx context.Context, cfg DatasetConfig, opts TablesRunOptions) (*TablesRun, error) {
	if err := db.writable(); err != nil {
		return nil, err
	}
	if err := validConfig(cfg); err != nil {
		return nil, err
	}
	if err := validTableSpecs(opts.Tables); err != nil {
		return nil, err
	}
	ds, err := db.acquireForRun(ctx, cfg.Name)
	if err != nil {
		return nil, err
	}
	tr, err := db.beginTables(ctx, ds, cfg, opts, "run", 0)
	if err != nil {
		ds.release()
		return nil, err
	}
	return tr, nil
}

// validTableSpecs checks the tables of a run: at least one, valid and
// unique names, valid schemas.
func validTableSpecs(specs []TableSpec) error {
	if len(specs) == 0 {
		return fmt.Errorf("%w: a run of named tables needs at least one table", ErrInvalidArgument)
	}
	seen := map[string]bool{}
	for _, sp := range specs {
		if err := validTableName(sp.Name); err != nil {
			return err
		}
		if seen[sp.Name] {
			return fmt.Errorf("%w: table %q named twice", ErrInvalidArgument, sp.Name)
		}
		seen[sp.Name] = true
		if err := validSchema(sp.Schema); err != nil {
			return fmt.Errorf("table %q: %w", sp.Name, err)
		}
		if sp.Partitions < 0 {
			return fmt.Errorf("%w: table %q: %d partitions", ErrInvalidArgument, sp.Name, sp.Partitions)
		}
	}
	return nil
}

// beginTables begins a run of ds, which the caller acquired for op: one
// write of the row (D9) takes the writer slot, records the tables'
// configuration (numbers, keys, column dictionaries, partition keys) and
// the transaction in progress (txn.I3); then a scratch table a run left
// is cleared, and each table's Run opened.
func (db *DB) beginTables(ctx context.Context, ds *dataset, cfg DatasetConfig, opts TablesRunOptions, op string, restoredFrom int64) (*TablesRun, error) {
	ds.mu.Lock()
	created := !ds.persisted
	ds.mu.Unlock()
	var nums map[string]int
	var dropped []string
	id, st, err := db.beginTxn(ctx, ds, cfg, op, func(st *rowState) error {
		if !st.Config.Named && (st.Current > 0 || len(st.Config.Columns) > 0) {
			return fmt.Errorf("%w: %s holds one unnamed table (a run of named tables needs a dataset of its own)", ErrInvalidArgument, ds.name)
		}
		return nil
	}, func(st *rowState) error {
		st.Config.Named = true
		var prev *VersionInfo
		if st.Current > 0 {
			ds.mu.Lock()
			prev = ds.bodies[st.Current]
			ds.mu.Unlock()
			if prev == nil {
				return fmt.Errorf("%w: current version %d of %s has no version row read", ErrCorrupt, st.Current, ds.name)
			}
		}
		var err error
		nums, dropped, err = planTables(st, ds.name, prev, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	if created {
		db.logger.Info("dataset created", "dataset", ds.name, "tables", len(opts.Tables))
	}
	ds.mu.Lock()
	var prev *VersionInfo
	if st.Current > 0 {
		prev = ds.versionLocked(st.Current)
	}
	dirty := ds.scratchDirty
	ds.mu.Unlock()
	tr := &TablesRun{db: db, ds: ds, id: id, epoch: st.Slot.Epoch, opts: opts, guard: cfg.Guard, prev: prev,
		restoredFrom: restoredFrom, started: db.opts.now()}
	for _, name := range dropped {
		if t, ok := prev.Table(name); ok {
			tr.dropped = append(tr.dropped, DroppedTable{Name: name, Rows: t.Stats.Rows})
		}
	}
	fail := func(err error) (*TablesRun, error) {
		if aerr := tr.endTxn(context.WithoutCancel(ctx), "it could not begin"); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return nil, fmt.Errorf("snapshot: beginning a run of %s: %w", ds.name, err)
	}
	if st.Current > 0 && prev == nil {
		return fail(fmt.Errorf("%w: current version %d is not a kept version", ErrCorrupt, st.Current))
	}
	if dirty {
		if err := db.clearScratch(ctx, ds, 0, tr.id); err != nil {
			return fail(fmt.Errorf("clearing the scratch table an earlier run left: %w", err))
		}
	}
	specs := slices.Clone(opts.Tables)
	slices.SortFunc(specs, func(a, b TableSpec) int { return strings.Compare(a.Name, b.Name) })
	for _, sp := range specs {
		tc := st.Config.tableByNum(nums[sp.Name])
		if tc == nil {
			return fail(fmt.Errorf("%w: table %q has no configuration", ErrCorrupt, sp.Name))
		}
		w, err := tr.newTable(st, sp, *tc)
		if err != nil {
			return fail(fmt.Errorf("table %q: %w", sp.Name, err))
		}
		tr.writers = append(tr.writers, w)
	}
	ds.mu.Lock()
	ds.run = tr
	ds.mu.Unlock()
	db.logger.Info("run begun", "dataset", ds.name, "txn", id, "version", tr.Version(), "tables", len(tr.writers))
	return tr, nil
}

// planTables sets the configuration of the tables of a run of opts in st,
// whose current version is prev (nil: none): a table prev holds keeps
// its number, key and partition key (ErrKeyChanged, ErrPartitionKey
// otherwise); another takes the number of a table of its name no version
// ever held, or a new one. Columns new to a table join its dictionary
// before any row version names them. It returns the number of each
// table, and the tables of prev the run lacks (ErrTableMissing unless
// opts.DropMissing).
func planTables(st *rowState, name string, prev *VersionInfo, opts TablesRunOptions) (map[string]int, []string, error) {
	nums := map[string]int{}
	for _, sp := range opts.Tables {
		var tc *tableConfig
		held := false
		if prev != nil {
			if t, ok := prev.Table(sp.Name); ok {
				if tc = st.Config.tableByNum(t.Number); tc == nil {
					return nil, nil, fmt.Errorf("%w: %s version %d holds table number %d, which the configuration lacks", ErrCorrupt, name, prev.Version, t.Number)
				}
				held = true
			}
		}
		if tc == nil {
			if old := st.Config.tableByName(sp.Name); old != nil && !old.Committed {
				tc = old
			}
		}
		if tc == nil {
			st.Config.NextTable++
			st.Config.Tables = append(st.Config.Tables, tableConfig{Name: sp.Name, Num: st.Config.NextTable,
				Partitions: cmp.Or(sp.Partitions, st.Config.Partitions, 1)})
			tc = &st.Config.Tables[len(st.Config.Tables)-1]
		}
		if held && !slices.Equal(tc.Key, sp.Schema.Key) {
			return nil, nil, fmt.Errorf("%w: table %q of %s has key %v, the run has %v", ErrKeyChanged, sp.Name, name, tc.Key, sp.Schema.Key)
		}
		tc.Key = slices.Clone(sp.Schema.Key)
		if sp.PartitionKey != nil {
			want := storedPartitionKey(sp.PartitionKey, sp.Schema.Key)
			if held && !slices.Equal(want, tc.PartitionKey) {
				return nil, nil, fmt.Errorf("%w: table %q of %s stores its rows by %s, the run places them by %s", ErrPartitionKey, sp.Name, name,
					partitionKeyText(tc.PartitionKey), partitionKeyText(want))
			}
			tc.PartitionKey = want
		}
		if _, err := newPlacer(sp.Schema, tc.PartitionKey, 1); err != nil {
			return nil, nil, fmt.Errorf("table %q: %w", sp.Name, err)
		}
		for _, c := range sp.Schema.Columns {
			if !slices.Contains(tc.Columns, c.Name) {
				tc.Columns = append(slices.Clip(tc.Columns), c.Name)
			}
		}
		nums[sp.Name] = tc.Num
	}
	var missing []string
	if prev != nil {
		for _, t := range prev.Tables {
			if _, ok := nums[t.Name]; !ok {
				missing = append(missing, t.Name)
			}
		}
	}
	if len(missing) > 0 && !opts.DropMissing {
		return nil, nil, fmt.Errorf("%w: %s", ErrTableMissing, strings.Join(missing, ", "))
	}
	return nums, missing, nil
}

// newTable makes the writer of one table of tr, configured by tc in the
// row st the run's begin wrote; its Run is opened at its first write
// (TableWriter.open).
func (tr *TablesRun) newTable(st rowState, sp TableSpec, tc tableConfig) (*TableWriter, error) {
	db := tr.db
	var tprev *VersionInfo
	if tr.prev != nil {
		if t, ok := tr.prev.Table(sp.Name); ok && t.Number == tc.Num {
			tprev = tableView(tr.prev, t)
		}
	}
	r := &Run{db: db, ds: tr.ds, id: tr.id, epoch: tr.epoch, op: "run", guard: tr.guard, nparts: tc.Partitions, part: -1, prev: tprev,
		restoredFrom: tr.restoredFrom, digest: xxhash.New(), started: db.opts.now(),
		opts: RunOptions{Schema: sp.Schema, Source: tr.opts.Source, Force: tr.opts.Force, VerifyUnchanged: tr.opts.VerifyUnchanged}}
	w := &TableWriter{tr: tr, r: r, name: sp.Name, num: tc.Num, tc: tc}
	var err error
	if r.place, err = newPlacer(sp.Schema, tc.PartitionKey, tc.Partitions); err != nil {
		return nil, err
	}
	if err := r.setSchema(sp.Schema, newDictionary(tc.Columns)); err != nil {
		return nil, err
	}
	if tprev != nil {
		r.prevVis = st.Txns.Visibility(tprev.Version)
		r.readOpts = readOpts(r.prevVis)
	}
	return w, nil
}

// open opens the table's Run, once: its partitions, each with a load (a
// first run on a store that has a Loader) or an iterator over the
// previous version, and its writer.
func (w *TableWriter) open(ctx context.Context) error {
	if w.opened {
		return nil
	}
	tr, r := w.tr, w.r
	db := tr.db
	loader, _ := db.st.(store.Loader)
	for p := 0; p < w.tc.Partitions; p++ {
		rp := &runPart{table: tableDataTable(tr.ds.name, w.num, p), scratch: tableScratchTable(tr.ds.name, w.num, p)}
		rp.data.Table, rp.seen.Table = rp.table, rp.scratch
		r.parts = append(r.parts, rp)
		var err error
		switch {
		case r.prev == nil && loader != nil:
			rp.load, err = loader.Load(ctx, rp.table)
		case r.prev != nil:
			var it store.Iterator
			if it, err = db.st.Scan(ctx, rp.table, store.ScanOptions{ReadOptions: r.readOpts}); err == nil {
				rp.cur = newRowCursor(it, r.prevVis, r.n)
			}
		}
		if err != nil {
			r.closeIters()
			for _, p := range r.parts {
				if p.load != nil {
					p.load.Close()
				}
			}
			r.parts = nil
			return err
		}
	}
	w.opened = true
	db.hook("table:opened", tr.open.Add(1))
	return nil
}

// TxnID returns the run's transaction id, the version it will commit.
func (tr *TablesRun) TxnID() int64 { return tr.id }

// Version returns the version the run compares with, 0 when none.
func (tr *TablesRun) Version() int64 {
	if tr.prev == nil {
		return 0
	}
	return tr.prev.Version
}

// Dropped returns the tables of the current version the run does not
// write (TablesRunOptions.DropMissing), by name, each with the rows it
// holds: the version the run commits lacks them, and counts their rows
// as deleted.
func (tr *TablesRun) Dropped() []DroppedTable { return slices.Clone(tr.dropped) }

// Tables returns the run's writers, by table name.
func (tr *TablesRun) Tables() []*TableWriter { return slices.Clone(tr.writers) }

// Table returns the writer of the table name, nil when the run does not
// write it.
func (tr *TablesRun) Table(name string) *TableWriter {
	for _, w := range tr.writers {
		if w.name == name {
			return w
		}
	}
	return nil
}

// Stats returns the counts so far of every table, summed (the checksum
// is the sum of theirs modulo 2^64), the rows of the tables the run
// drops counted as deleted from its begin; safe from any goroutine.
func (tr *TablesRun) Stats() RunStats {
	var sum RunStats
	var ck uint64
	for _, w := range tr.writers {
		addStats(&sum, &ck, w.r.Stats())
	}
	sum.Deleted += droppedRows(tr.dropped)
	sum.Checksum = fmt.Sprintf("%016x", ck)
	return sum
}

// droppedRows sums the rows of the tables ts.
func droppedRows(ts []DroppedTable) int64 {
	var n int64
	for _, t := range ts {
		n += t.Rows
	}
	return n
}

// addStats adds t to sum, and t's checksum to ck.
func addStats(sum *RunStats, ck *uint64, t RunStats) {
	sum.Rows += t.Rows
	sum.Inserted += t.Inserted
	sum.Updated += t.Updated
	sum.Deleted += t.Deleted
	sum.Unchanged += t.Unchanged
	sum.BytesWritten += t.BytesWritten
	var c uint64
	if _, err := fmt.Sscanf(t.Checksum, "%x", &c); err == nil {
		*ck += c
	}
}

// Verified reports whether Commit found nothing changed in any table and
// recorded the previous version verified instead of committing.
func (tr *TablesRun) Verified() bool { return tr.verified }

// Name returns the writer's table.
func (w *TableWriter) Name() string { return w.name }

// Schema returns the table's schema in this run.
func (w *TableWriter) Schema() Schema { return w.r.opts.Schema }

// Version returns the version of the table the writer compares with, 0
// when the current version does not hold the table.
func (w *TableWriter) Version() int64 { return w.r.prevVersion() }

// Put adds one source row of the table, as Run.Put (D5).
func (w *TableWriter) Put(ctx context.Context, vals []Value) error {
	err := w.writable(ctx)
	if err == nil {
		err = w.r.Put(ctx, vals)
	}
	if err != nil {
		return fmt.Errorf("table %q: %w", w.name, err)
	}
	return nil
}

// Carry takes rows of the table's previous version over unchanged, as
// Run.Carry.
func (w *TableWriter) Carry(ctx context.Context, after, through []Value, rows int64, sum uint64) error {
	err := w.writable(ctx)
	if err == nil {
		err = w.r.Carry(ctx, after, through, rows, sum)
	}
	if err != nil {
		return fmt.Errorf("table %q: %w", w.name, err)
	}
	return nil
}

// writable opens the table's Run for a write, or says why it takes none.
func (w *TableWriter) writable(ctx context.Context) error {
	if w.finished {
		return fmt.Errorf("%w: the table is finished", ErrRunClosed)
	}
	if w.parts != nil {
		return fmt.Errorf("%w: the table's partitions are written by their writers (PartitionSpec)", ErrInvalidArgument)
	}
	if err := w.r.usable(); err != nil {
		return err
	}
	return w.open(ctx)
}

// Finish makes the table's last writes, as Commit does for each table
// (D3: delete markers for the rows of its previous version not Put,
// every batch written, a first run's load sealed: Commit flushes every
// table's at once), then releases its Run's buffers, iterators and
// writer; Commit checks its guards. A table
// is finished when its rows are all written, so that the memory of a run
// follows the tables being written rather than the tables of the run. No
// Put or Carry may follow; a second Finish does nothing. On an error the
// run can only be aborted.
func (w *TableWriter) Finish(ctx context.Context) error {
	if err := w.finish(ctx); err != nil {
		return fmt.Errorf("table %q: %w", w.name, err)
	}
	return nil
}

func (w *TableWriter) finish(ctx context.Context) error {
	if w.finished {
		return nil
	}
	if w.parts != nil {
		return w.finishPartitioned()
	}
	if err := w.writable(ctx); err != nil {
		return err
	}
	r := w.r
	if err := r.lastWrites(ctx, true); err != nil {
		return err
	}
	r.publishStats()
	r.parts = nil // its batches and their buffers
	w.finished = true
	w.tr.db.hook("table:finished", w.tr.open.Add(-1))
	return nil
}

// SetSourceDigest sets the digest stored with the table in the version
// the run commits (DB.TableSourceDigest reads it back).
func (w *TableWriter) SetSourceDigest(digest []byte) { w.r.SetSourceDigest(digest) }

// Stats returns the table's counts so far; safe from any goroutine.
func (w *TableWriter) Stats() RunStats { return w.r.Stats() }

// Progress returns the table's counts and checksum sum so far, as
// Run.Progress; from the goroutine that puts the table's rows.
func (w *TableWriter) Progress() (RunStats, uint64) { return w.r.Progress() }

// Commit finishes every table (D3: delete markers for rows not seen,
// guards per table, data flushed and synced), writes the version's record
// listing every table, then commits the version in one conditional write
// of the dataset's row (D9), made only while the run holds the writer
// slot at its epoch (W3). With VerifyUnchanged and nothing changed, the
// previous version is recorded verified instead (Verified). On any error
// the run is aborted and nothing of it is visible, except
// ErrOutcomeUnknown (Run.Commit). A table's error names it.
func (tr *TablesRun) Commit(ctx context.Context) (vi VersionInfo, err error) {
	if err := tr.usable(); err != nil {
		return VersionInfo{}, err
	}
	start := time.Now()
	defer func() {
		if err != nil && !tr.isDone() {
			if aerr := tr.Abort(context.WithoutCancel(ctx), err.Error()); aerr != nil {
				err = errors.Join(err, aerr)
			}
		}
	}()
	if err := tr.finishTables(ctx); err != nil {
		return VersionInfo{}, err
	}
	if tr.unchanged() {
		return tr.verifyInstead(ctx)
	}
	db, ds := tr.db, tr.ds
	if err := tr.flushLoads(ctx); err != nil {
		return VersionInfo{}, err
	}
	if err := db.st.Sync(ctx); err != nil {
		return VersionInfo{}, fmt.Errorf("snapshot: syncing %s txn %d: %w", ds.name, tr.id, err)
	}
	db.hook("commit:synced", 0)
	vi = VersionInfo{Dataset: ds.name, Version: tr.id, CommittedAt: db.opts.now().UTC(), Source: tr.opts.Source, RestoredFrom: tr.restoredFrom,
		Tables: make([]TableInfo, 0, len(tr.writers))}
	digests := map[int][]byte{}
	var ck uint64
	for _, w := range tr.writers {
		w.r.publishStats()
		t := TableInfo{Name: w.name, Number: w.num, Stats: w.r.statsNow(), Schema: w.r.opts.Schema, Shapes: w.r.shapesNow(), Partitions: w.tc.Partitions,
			PartitionKey: w.tc.PartitionKey}
		vi.Tables = append(vi.Tables, t)
		addStats(&vi.Stats, &ck, t.Stats)
		if w.r.srcDigest != nil {
			digests[w.num] = w.r.srcDigest
		}
	}
	// A dropped table's rows are gone from the version: deleted, as a
	// diff of the two versions counts them (DiffTables, TableDropped).
	vi.DroppedTables = slices.Clone(tr.dropped)
	vi.Stats.Deleted += droppedRows(tr.dropped)
	vi.Stats.Checksum = fmt.Sprintf("%016x", ck)
	sortTables(vi.Tables)
	if _, err := db.slotDeadline(ds, tr.epoch); err != nil { // W3
		return VersionInfo{}, fmt.Errorf("snapshot: committing %s txn %d: %w", ds.name, tr.id, err)
	}
	if err := db.writeBody(ctx, &vi, nil, digests); err != nil {
		return VersionInfo{}, err
	}
	db.hook("commit:recorded", tr.id)
	stored := vi
	ds.mu.Lock()
	ds.bodies[tr.id] = &stored
	ds.mu.Unlock()
	if err := tr.commitTxn(ctx, &stored); err != nil {
		if !errors.Is(err, ErrOutcomeUnknown) {
			return VersionInfo{}, fmt.Errorf("snapshot: committing %s txn %d: %w", ds.name, tr.id, err)
		}
		tr.setDone()
		db.setPending(ds, fmt.Sprintf("commit of txn %d", tr.id), func(ctx context.Context) error {
			err := tr.commitTxn(ctx, &stored)
			switch {
			case err == nil:
				return nil
			case errors.Is(err, ErrOutcomeUnknown), retryable(err):
				return err
			}
			return db.abortTxn(ctx, ds, tr.id, tr.epoch)
		})
		ds.release()
		return VersionInfo{}, fmt.Errorf("snapshot: committing %s txn %d: %w", ds.name, tr.id, err)
	}
	db.hook("commit:committed", tr.id)
	tr.setDone()
	ds.mu.Lock()
	vi = ds.infoLocked(&stored)
	ds.mu.Unlock()
	ds.release()
	db.clearScratchIfDirty(context.WithoutCancel(ctx), ds, 0, tr.id)
	db.metrics.runs.WithLabelValues("committed").Inc()
	db.metrics.commitSecs.Observe(time.Since(start).Seconds())
	db.logger.Info("run committed", "dataset", ds.name, "txn", tr.id, "version", tr.id, "tables", len(vi.Tables),
		"rows", vi.Stats.Rows, "inserted", vi.Stats.Inserted, "updated", vi.Stats.Updated,
		"deleted", vi.Stats.Deleted, "bytes_written", vi.Stats.BytesWritten)
	return vi, nil
}

// finishParallel bounds the tables a Commit finishes at once.
const finishParallel = 4

// finishTables finishes every table not finished yet (TableWriter.Finish:
// delete markers, loads flushed), up to finishParallel at once, then
// checks every table's guards; the first error, naming its table, is
// returned once every table stopped.
func (tr *TablesRun) finishTables(ctx context.Context) error {
	errs := make([]error, len(tr.writers))
	sem := make(chan struct{}, finishParallel)
	var wg sync.WaitGroup
	for i, w := range tr.writers {
		if w.finished {
			continue
		}
		if err := w.r.usable(); err != nil {
			errs[i] = err
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = w.finish(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("table %q: %w", tr.writers[i].name, err)
		}
	}
	return tr.checkGuards()
}

// flushLoads flushes the loads the tables sealed (Run.lastWrites) in one
// FlushLoads, whose fixed cost (an ingest: Pebble's manifest written and
// synced) the run then pays once rather than per table; within the
// slot's deadline, as every write of the run (W3).
func (tr *TablesRun) flushLoads(ctx context.Context) error {
	var loads []store.Load
	for _, w := range tr.writers {
		loads = append(loads, w.r.sealed...)
	}
	if len(loads) == 0 {
		return nil
	}
	db, ds := tr.db, tr.ds
	lctx, cancel, err := db.slotContext(ctx, ds, tr.epoch)
	if err == nil {
		err = db.st.(store.Loader).FlushLoads(lctx, loads)
	}
	cancel()
	if err != nil {
		return fmt.Errorf("snapshot: writing %s txn %d: %w", ds.name, tr.id, err)
	}
	for _, w := range tr.writers {
		w.r.dropSealed()
	}
	return nil
}

// commitTxn is the commit point of tr (D3, D9), as Run's commitTxn; the
// write also marks the version's tables as held by a committed version
// (tableConfig.Committed).
func (tr *TablesRun) commitTxn(ctx context.Context, vi *VersionInfo) error {
	db := tr.db
	_, err := db.writeRow(ctx, tr.ds, func(st *rowState) error {
		if st.kept(tr.id) {
			return errNoChange
		}
		if err := db.holdsSlot(st, tr.epoch); err != nil {
			return err
		}
		if err := st.Txns.Commit(tr.id); err != nil {
			return fmt.Errorf("%w: %v", ErrSlotLost, err)
		}
		for _, t := range vi.Tables {
			tc := st.Config.tableByNum(t.Number)
			if tc == nil {
				return fmt.Errorf("%w: table %q (number %d) left the configuration", ErrCorrupt, t.Name, t.Number)
			}
			tc.Committed = true
		}
		st.Current = tr.id
		st.Versions = append(st.Versions, versionRef{Version: tr.id, CommittedAt: vi.CommittedAt})
		releaseSlot(st)
		return nil
	})
	return err
}

// unchanged reports whether the finished run may be recorded as a
// verification of the previous version: every table unchanged (Run's
// unchanged), and the same tables.
func (tr *TablesRun) unchanged() bool {
	if !tr.opts.VerifyUnchanged || tr.prev == nil || len(tr.dropped) > 0 || len(tr.writers) != len(tr.prev.Tables) {
		return false
	}
	for _, w := range tr.writers {
		if !w.r.unchanged() {
			return false
		}
	}
	return true
}

// verifyInstead ends a run that changed nothing as Run's verifyInstead:
// the tables' digests go to the previous version's row, then one write of
// the dataset's row records it verified, ends the transaction invalid and
// frees the slot.
func (tr *TablesRun) verifyInstead(ctx context.Context) (VersionInfo, error) {
	db, ds := tr.db, tr.ds
	for _, w := range tr.writers {
		w.r.dropSealed() // a table's empty first load: nothing to keep
	}
	dctx, cancel, err := db.slotContext(ctx, ds, tr.epoch)
	defer cancel()
	if err != nil {
		return VersionInfo{}, err
	}
	b := &store.Batch{Table: db.meta}
	for _, w := range tr.writers {
		if w.r.srcDigest != nil {
			b.Put(versionKey(ds.name, tr.prev.Version), tableDigestColumn(w.num), 0, w.r.srcDigest)
		}
	}
	if b.Len() > 0 {
		if err := db.st.MutateRow(dctx, b); err != nil {
			return VersionInfo{}, fmt.Errorf("snapshot: recording the verification of %s version %d: %w", ds.name, tr.prev.Version, err)
		}
	}
	now := db.opts.now()
	vi, err := db.recordVerified(ctx, ds, tr.prev.Version, now, nil, dctx, func(st *rowState) error {
		if err := db.holdsSlot(st, tr.epoch); err != nil {
			return err
		}
		if st.Txns.IsInProgress(tr.id) {
			if err := st.Txns.Abort(tr.id, now); err != nil {
				return err
			}
		}
		releaseSlot(st)
		return nil
	})
	if err != nil {
		return VersionInfo{}, err
	}
	tr.verified = true
	tr.setDone()
	db.clearScratchIfDirty(context.WithoutCancel(ctx), ds, 0, tr.id)
	ds.release()
	db.metrics.runs.WithLabelValues("verified").Inc()
	return vi, nil
}

// Abort ends the run without committing (D4): its transaction becomes
// invalid, so nothing any table wrote is ever visible and GC removes it.
// reason is logged. Safe to call after Commit (no-op). As Run.Abort when
// the abort's write cannot be made (ErrOutcomeUnknown).
func (tr *TablesRun) Abort(ctx context.Context, reason string) error {
	if tr.isDone() {
		return nil
	}
	tr.setDone()
	for _, w := range tr.writers {
		w.r.publishStats()
		w.r.closeIters()
		// Writes in flight end before the transaction is invalid, so
		// that GC, which may run once it is, finds every cell of it.
		w.r.endWrites()
		w.r.dropSealed()
	}
	db, ds := tr.db, tr.ds
	err := tr.endTxn(ctx, reason)
	db.clearScratchIfDirty(ctx, ds, 0, tr.id)
	ds.release()
	db.metrics.runs.WithLabelValues("aborted").Inc()
	db.logger.Warn("run aborted", "dataset", ds.name, "txn", tr.id, "reason", reason)
	if err != nil {
		return fmt.Errorf("snapshot: aborting %s txn %d: %w", ds.name, tr.id, err)
	}
	return nil
}

// endTxn aborts tr's transaction; when its write fails, the abort is made
// pending (the keeper makes it) and the dataset stays held.
func (tr *TablesRun) endTxn(ctx context.Context, reason string) error {
	db, ds := tr.db, tr.ds
	err := db.abortTxn(ctx, ds, tr.id, tr.epoch)
	if err != nil {
		db.setPending(ds, fmt.Sprintf("abort of txn %d (%s)", tr.id, reason), func(ctx context.Context) error {
			return db.abortTxn(ctx, ds, tr.id, tr.epoch)
		})
	}
	return err
}

// usable returns why the run can take no Commit, or nil.
func (tr *TablesRun) usable() error {
	if tr.isDone() {
		return ErrRunClosed
	}
	return tr.db.check()
}

func (tr *TablesRun) isDone() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.done
}

// setDone marks the run and its tables' Runs ended.
func (tr *TablesRun) setDone() {
	tr.mu.Lock()
	tr.done = true
	tr.mu.Unlock()
	for _, w := range tr.writers {
		w.r.done = true
		w.r.publishStats()
	}
}
