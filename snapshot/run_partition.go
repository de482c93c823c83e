package snapshot

// Partitioned runs (docs/rfcs/20261202_partitioned_runs.md): one run of a
// dataset whose partitions are compared and written by several processes.
// The coordinator begins it (BeginPartitionedRun: the writer slot, the
// transaction id, the previous version; W1) and commits it (D3) once
// every partition has reported; each partition's rows go to one
// PartitionWriter (OpenPartition), in whichever process owns the
// partition, which is a Run restricted to that partition: the same
// comparison with the previous version and delta writes (D5), the same
// delete markers and checksum (D6). The counts of the partitions add up,
// and their checksums add modulo 2^64, so that the version's stats and
// checksum are those one Run of the same rows computes.
//
// A PartitionWriter holds no writer slot: the coordinator's slot fences
// the commit (W3), and the writer's cells at the run's id stay invisible
// unless that commit is made (D4). A partition written again from its
// first row (the coordinator sent its stream again) writes the same cells
// at the same id, so the earlier attempt's cells need no undoing; its
// phase-B keys are cleared when it opens.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/snapstore/snapstore/store"
)

// ErrPartitionCount is returned by BeginPartitionedRun for a dataset that
// has another count of partitions than the run.
var ErrPartitionCount = errors.New("snapshot: the dataset has another partition count")

// PartitionReport is what the writer of one partition of a partitioned
// run did: its counts and checksum (D6), for the coordinator to add up.
type PartitionReport struct {
	Partition int      `json:"partition"`
	Stats     RunStats `json:"stats"`
	// Shapes is the partition's value shapes; nil loses the run's.
	Shapes *ValueShapes `json:"shapes,omitempty"`
	// Compared is what a writer that carries ranges over compared
	// (run_partition_carry.go); nil when it carries none.
	Compared *ComparedRows `json:"compared,omitempty"`
}

// PartitionSpec names one partition of a partitioned run, as the
// coordinator began it.
type PartitionSpec struct {
	Dataset string
	// Txn is the run's transaction id; Version the version it compares
	// with (0: the dataset had none).
	Txn, Version int64
	Schema       Schema
	// Partitions is the dataset's count of partitions; Partition the one
	// written.
	Partitions, Partition int
	// PartitionKey is the dataset's partition key (PartitionedRun.
	// PartitionKey), nil for the row key.
	PartitionKey []string
	// Carried are the key ranges of the previous version the run carries
	// over unsent, in key order (PartitionedRun.Carry;
	// run_partition_carry.go).
	Carried []KeyRange
	// Table and TableNumber name the table of a dataset of named tables
	// the partition is of (TableWriter.PartitionSpec,
	// run_tables_partition.go); empty for a dataset of one table. Version
	// is then the dataset's, and Partitions and PartitionKey the table's.
	Table       string
	TableNumber int
}

// Router computes, on a coordinator, the row key and partition of each
// source row, as Put does.
type Router struct {
	schema Schema
	keyIdx []int
	place  placer
	buf    []byte
}

// NewRouter returns the router of rows of schema over partitions by the
// partition key pk (nil: the row key; PartitionedRun.PartitionKey).
func NewRouter(schema Schema, partitions int, pk []string) (*Router, error) {
	if err := validSchema(schema); err != nil {
		return nil, err
	}
	pl, err := newPlacer(schema, pk, partitions)
	if err != nil {
		return nil, err
	}
	return &Router{schema: schema, keyIdx: keyIndexes(schema), place: pl}, nil
}

// Route returns the encoded row key of vals (valid until the next call)
// and its partition. ErrBadKey for a NULL key column, a key value that
// does not encode, or a row key equal to the last one routed when rows
// are placed by a partition key other than the row key.
func (rt *Router) Route(vals []Value) ([]byte, int, error) {
	if len(vals) != len(rt.schema.Columns) {
		return nil, 0, fmt.Errorf("%w: %d values for %d columns", ErrInvalidArgument, len(vals), len(rt.schema.Columns))
	}
	rt.buf = rt.buf[:0]
	var err error
	for _, i := range rt.keyIdx {
		if rt.buf, err = appendKeyValue(rt.buf, vals[i]); err != nil {
			return nil, 0, fmt.Errorf("%w (column %q)", err, rt.schema.Columns[i].Name)
		}
	}
	p, err := rt.place.partition(rt.buf, vals)
	if errors.Is(err, ErrDuplicateKey) {
		key := make([]Value, len(rt.keyIdx))
		for j, i := range rt.keyIdx {
			key[j] = vals[i]
		}
		err = duplicateKeyError([]string{FormatKey(rt.schema.Key, key)})
	}
	return rt.buf, p, err
}

// AppendCell appends v's cell value encoding (D1) to dst: the form in
// which a coordinator sends values to a partition's owner.
func AppendCell(dst []byte, v Value) []byte { return appendCellValue(dst, v) }

// DecodeCell decodes a cell value that AppendCell encoded; the result's
// Bytes alias b.
func DecodeCell(b []byte) (Value, error) { return decodeCellValue(b, false) }

// PartitionedRun is the coordinator's side of a partitioned run: it holds
// the writer slot and the transaction, and commits once every partition
// has reported. Not safe for concurrent use, except Stats.
type PartitionedRun struct {
	r        *Run
	reported []bool
	n        int
	carry    *partitionCarry // the ranges carried over (Carry), nil when none
}

// BeginPartitionedRun begins a run of cfg.Name (creating the dataset with
// partitions partitions on first use) whose partitions PartitionWriters
// write: as BeginRun, with ErrPartitionCount when the dataset has another
// count of partitions (the run is then aborted).
func (db *DB) BeginPartitionedRun(ctx context.Context, cfg DatasetConfig, opts RunOptions, partitions int) (*PartitionedRun, error) {
	if partitions < 1 {
		return nil, fmt.Errorf("%w: %d partitions", ErrInvalidArgument, partitions)
	}
	cfg.Partitions = partitions
	if cfg.PartitionKey == nil {
		cfg.PartitionKey = opts.Schema.Key
	}
	r, err := db.BeginRun(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	r.closeIters()
	if r.nparts != partitions {
		err := fmt.Errorf("%w: dataset %s has %d partitions, a partitioned run of this cluster needs %d (drop the dataset, or name another)",
			ErrPartitionCount, cfg.Name, r.nparts, partitions)
		return nil, errors.Join(err, r.Abort(context.WithoutCancel(ctx), err.Error()))
	}
	// Written by the partitions' writers: a load a first run opened for
	// a partition here is dropped unused.
	for _, p := range r.parts {
		if p.load != nil {
			p.load.Close()
		}
	}
	r.parts = nil
	return &PartitionedRun{r: r, reported: make([]bool, partitions)}, nil
}

// TxnID returns the run's transaction id.
func (pr *PartitionedRun) TxnID() int64 { return pr.r.id }

// Version returns the version the run compares with, 0 when none.
func (pr *PartitionedRun) Version() int64 { return pr.r.prevVersion() }

// Partitions returns the dataset's count of partitions.
func (pr *PartitionedRun) Partitions() int { return pr.r.nparts }

// PartitionKey returns the partition key the dataset stores its rows by,
// nil for the row key: what NewRouter and PartitionSpec take.
func (pr *PartitionedRun) PartitionKey() []string {
	pr.r.ds.mu.Lock()
	defer pr.r.ds.mu.Unlock()
	return slices.Clone(pr.r.ds.st.Config.PartitionKey)
}

// Schema returns the run's schema.
func (pr *PartitionedRun) Schema() Schema { return pr.r.opts.Schema }

// Add adds the report of one partition. A partition reported twice, or a
// checksum that does not parse, is ErrInvalidArgument.
func (pr *PartitionedRun) Add(rep PartitionReport) error {
	if rep.Partition < 0 || rep.Partition >= len(pr.reported) {
		return fmt.Errorf("%w: partition %d of %d", ErrInvalidArgument, rep.Partition, len(pr.reported))
	}
	if pr.reported[rep.Partition] {
		return fmt.Errorf("%w: partition %d reported twice", ErrInvalidArgument, rep.Partition)
	}
	sum, err := strconv.ParseUint(rep.Stats.Checksum, 16, 64)
	if err != nil {
		return fmt.Errorf("%w: partition %d: checksum %q", ErrInvalidArgument, rep.Partition, rep.Stats.Checksum)
	}
	if err := pr.addCompared(rep); err != nil {
		return err
	}
	pr.reported[rep.Partition] = true
	pr.n++
	pr.r.addReport(rep, sum)
	return nil
}

// addReport adds a partition's report to the run that commits its
// partitions: its counts, its part sum of the checksum (D6) and its value
// shapes.
func (r *Run) addReport(rep PartitionReport, sum uint64) {
	s, t := &r.stats, rep.Stats
	s.Rows += t.Rows
	s.Inserted += t.Inserted
	s.Updated += t.Updated
	s.Deleted += t.Deleted
	s.Unchanged += t.Unchanged
	s.BytesWritten += t.BytesWritten
	r.sum += sum
	r.shapes.merge(r.opts.Schema, rep.Shapes)
	r.publishStats()
}

// SetSourceDigest sets the digest stored with the version the run
// commits, or with the previous one when it is verified (Run.
// SetSourceDigest).
func (pr *PartitionedRun) SetSourceDigest(digest []byte) { pr.r.SetSourceDigest(digest) }

// Stats returns the counts of the partitions reported so far; safe from
// any goroutine.
func (pr *PartitionedRun) Stats() RunStats { return pr.r.Stats() }

// Commit commits the run (D3) with the sums of the reports: the guards
// (D7) apply to them. Every partition must have reported
// (ErrInvalidArgument otherwise, and the run is aborted).
func (pr *PartitionedRun) Commit(ctx context.Context) (VersionInfo, error) {
	if pr.n != len(pr.reported) {
		err := fmt.Errorf("%w: %d of %d partitions reported", ErrInvalidArgument, pr.n, len(pr.reported))
		return VersionInfo{}, errors.Join(err, pr.r.Abort(context.WithoutCancel(ctx), err.Error()))
	}
	if err := pr.addCarried(); err != nil {
		return VersionInfo{}, errors.Join(err, pr.r.Abort(context.WithoutCancel(ctx), err.Error()))
	}
	return pr.r.Commit(ctx)
}

// Verified reports whether Commit found nothing changed in any partition
// and recorded the previous version verified instead of committing
// (RunOptions.VerifyUnchanged, Run.Verified).
func (pr *PartitionedRun) Verified() bool { return pr.r.Verified() }

// Abort aborts the run (D4): none of its cells, in any partition, is ever
// visible.
func (pr *PartitionedRun) Abort(ctx context.Context, reason string) error {
	return pr.r.Abort(ctx, reason)
}

// PartitionWriter compares and writes the rows of one partition of a
// partitioned run (D5, D6). Not safe for concurrent use, except Stats.
type PartitionWriter struct {
	r *Run
	p *runPart
}

// OpenPartition opens the writer of one partition of the run spec names,
// which a coordinator began: the dataset's row must show the run's
// transaction in progress and spec.Version current (the DB's view is
// refreshed when it does not), with spec.Partitions partitions. The
// partition's phase-B keys of an earlier attempt are cleared.
func (db *DB) OpenPartition(ctx context.Context, spec PartitionSpec) (*PartitionWriter, error) {
	if err := db.writable(); err != nil {
		return nil, err
	}
	if err := validSchema(spec.Schema); err != nil {
		return nil, err
	}
	if spec.Partition < 0 || spec.Partition >= spec.Partitions {
		return nil, fmt.Errorf("%w: partition %d of %d", ErrInvalidArgument, spec.Partition, spec.Partitions)
	}
	ds, st, tc, err := db.partitionView(ctx, spec)
	if err != nil {
		return nil, err
	}
	ds.mu.Lock()
	var prev *VersionInfo
	if spec.Version > 0 {
		prev = ds.versionLocked(spec.Version)
	}
	ds.mu.Unlock()
	if spec.Version > 0 && prev == nil {
		return nil, fmt.Errorf("%w: version %d of %s is not a kept version", ErrCorrupt, spec.Version, spec.Dataset)
	}
	// The dictionary is the dataset's row's: the coordinator's begin
	// added the run's new columns to it before any partition opens, so
	// that every writer packs a column under the same index (rowversion.go).
	columns := st.Config.Columns
	p := &runPart{table: dataTable(ds.name, spec.Partition), scratch: scratchTable(ds.name, spec.Partition)}
	if tc != nil {
		prev = tablePrevious(prev, *tc)
		columns = tc.Columns
		p.table, p.scratch = tableDataTable(ds.name, tc.Num, spec.Partition), tableScratchTable(ds.name, tc.Num, spec.Partition)
	}
	r := &Run{db: db, ds: ds, id: spec.Txn, op: "partition", nparts: spec.Partitions, part: spec.Partition, prev: prev,
		digest: xxhash.New(), started: db.opts.now()}
	if err := r.setSchema(spec.Schema, newDictionary(columns)); err != nil {
		return nil, err
	}
	if r.place, err = newPlacer(spec.Schema, spec.PartitionKey, spec.Partitions); err != nil {
		return nil, err
	}
	if prev != nil {
		r.prevVis = st.Txns.Visibility(prev.Version)
		r.readOpts = readOpts(r.prevVis)
	}
	p.data.Table, p.seen.Table = p.table, p.scratch
	if err := db.st.DeleteRange(ctx, p.scratch, scratchRow(nil, r.id, nil), scratchRow(nil, r.id+1, nil)); err != nil {
		return nil, fmt.Errorf("snapshot: clearing partition %d's seen keys of %s txn %d: %w", spec.Partition, ds.name, r.id, err)
	}
	if prev != nil {
		it, err := db.st.Scan(ctx, p.table, store.ScanOptions{ReadOptions: r.readOpts})
		if err != nil {
			return nil, fmt.Errorf("snapshot: reading %s version %d: %w", ds.name, prev.Version, err)
		}
		p.cur = newRowCursor(it, r.prevVis, r.n)
	} else if loader, ok := db.st.(store.Loader); ok {
		// A first run's partition loads SSTables as a Run's does
		// (run_write.go): its cells, at the run's id, are invisible until
		// the coordinator commits, like those of an applied batch, and an
		// attempt written again loads the same cells at the same id.
		l, err := loader.Load(ctx, p.table)
		if err != nil {
			return nil, fmt.Errorf("snapshot: loading partition %d of %s txn %d: %w", spec.Partition, ds.name, r.id, err)
		}
		p.load = l
	}
	if err := r.setCarried(spec.Carried); err != nil {
		if p.cur != nil {
			p.cur.close()
		}
		return nil, err
	}
	r.parts = make([]*runPart, spec.Partitions)
	r.parts[spec.Partition] = p
	return &PartitionWriter{r: r, p: p}, nil
}

// partitionView returns the dataset of spec, its row's state and, for a
// partition of a table, the table's configuration; read again when this
// DB's view does not show the run yet.
func (db *DB) partitionView(ctx context.Context, spec PartitionSpec) (*dataset, rowState, *tableConfig, error) {
	for attempt := 0; ; attempt++ {
		ds, err := db.lookup(ctx, spec.Dataset)
		var st rowState
		var tc *tableConfig
		if err == nil {
			ds.mu.Lock()
			st = ds.st.clone()
			ds.mu.Unlock()
			if tc, err = checkPartitionView(ds, &st, spec); err == nil {
				return ds, st, tc, nil
			}
		}
		if attempt > 0 {
			return nil, rowState{}, nil, err
		}
		if rerr := db.Refresh(ctx); rerr != nil {
			return nil, rowState{}, nil, errors.Join(err, rerr)
		}
	}
}

// checkPartitionView returns the table a partition of spec is of (nil
// for a dataset of one table) when the row st shows spec's run in
// progress at spec's version and partitions, an error saying what differs
// otherwise.
func checkPartitionView(ds *dataset, st *rowState, spec PartitionSpec) (*tableConfig, error) {
	tc, parts, pk, err := partitionLayout(ds, st, spec)
	switch {
	case err != nil:
		return nil, err
	case !st.Txns.IsInProgress(spec.Txn):
		return nil, fmt.Errorf("%w: transaction %d of %s is not in progress (committed, aborted, or begun by none)", ErrRunClosed, spec.Txn, spec.Dataset)
	case st.Current != spec.Version:
		return nil, fmt.Errorf("%w: %s is at version %d, the run compares with %d", ErrRunClosed, spec.Dataset, st.Current, spec.Version)
	case parts != spec.Partitions:
		return nil, fmt.Errorf("%w: %s has %d partitions, the run %d", ErrPartitionCount, partitionOwner(spec), parts, spec.Partitions)
	case !slices.Equal(pk, spec.PartitionKey):
		return nil, fmt.Errorf("%w: %s stores its rows by %s, the run by %s", ErrPartitionKey, partitionOwner(spec),
			partitionKeyText(pk), partitionKeyText(spec.PartitionKey))
	}
	return tc, nil
}

// partitionLayout returns the table a partition of spec is of (nil for a
// dataset of one table), and its count of partitions and partition key
// in st; an error when spec and the dataset disagree on its tables.
func partitionLayout(ds *dataset, st *rowState, spec PartitionSpec) (*tableConfig, int, []string, error) {
	switch {
	case spec.Table == "" && st.Config.Named:
		return nil, 0, nil, fmt.Errorf("%w: dataset %s holds the tables %s; a partition of it is of one of them", ErrTableRequired, spec.Dataset, strings.Join(ds.tableNames(st), ", "))
	case spec.Table == "":
		return nil, st.Config.Partitions, st.Config.PartitionKey, nil
	case !st.Config.Named:
		return nil, 0, nil, fmt.Errorf("%w: dataset %s holds one unnamed table, not %q", ErrTableNotFound, spec.Dataset, spec.Table)
	}
	tc := st.Config.tableByNum(spec.TableNumber)
	if tc == nil || tc.Name != spec.Table {
		return nil, 0, nil, fmt.Errorf("%w: dataset %s has no table %q numbered %d", ErrTableNotFound, spec.Dataset, spec.Table, spec.TableNumber)
	}
	return tc, tc.Partitions, tc.PartitionKey, nil
}

// partitionOwner names what spec's partitions divide in errors: the
// dataset, or its table.
func partitionOwner(spec PartitionSpec) string {
	if spec.Table == "" {
		return "dataset " + spec.Dataset
	}
	return fmt.Sprintf("table %q of %s", spec.Table, spec.Dataset)
}

// Put adds one source row of the partition, as Run.Put (D5);
// ErrInvalidArgument for a row of another partition.
func (w *PartitionWriter) Put(ctx context.Context, vals []Value) error { return w.r.Put(ctx, vals) }

// Stats returns the partition's counts so far; safe from any goroutine.
func (w *PartitionWriter) Stats() RunStats { return w.r.Stats() }

// Finish writes the partition's remaining delete markers (D5), flushes
// and syncs its writes, clears its phase-B keys, and returns its report.
// After an error the writer can only be discarded.
func (w *PartitionWriter) Finish(ctx context.Context) (PartitionReport, error) {
	r, p := w.r, w.p
	if err := r.usable(); err != nil {
		return PartitionReport{}, err
	}
	if err := r.finishCarried(ctx, p); err != nil {
		return PartitionReport{}, err
	}
	if err := r.flushSeen(ctx, p); err != nil {
		return PartitionReport{}, err
	}
	if err := r.syncWrites(ctx, r.parts[r.part:r.part+1], false, false); err != nil {
		return PartitionReport{}, err
	}
	if err := r.markDeleted(ctx, p); err != nil {
		return PartitionReport{}, err
	}
	if err := r.syncWrites(ctx, r.parts[r.part:r.part+1], true, false); err != nil {
		return PartitionReport{}, err
	}
	r.closeIters()
	r.endWrites()
	if err := r.db.st.Sync(ctx); err != nil {
		return PartitionReport{}, fmt.Errorf("snapshot: syncing %s txn %d partition %d: %w", r.ds.name, r.id, r.part, err)
	}
	if p.switched {
		if err := r.db.st.DeleteRange(ctx, p.scratch, scratchRow(nil, r.id, nil), scratchRow(nil, r.id+1, nil)); err != nil {
			r.db.logger.Warn("clearing a partition's seen keys", "dataset", r.ds.name, "txn", r.id, "partition", r.part, "err", err)
		}
	}
	r.done = true
	r.publishStats()
	return PartitionReport{Partition: r.part, Stats: r.statsNow(), Shapes: r.shapesNow(), Compared: r.comparedRows()}, nil
}

// Discard ends the writer without a report: what it wrote stays at the
// run's id, invisible unless the run commits (which it cannot without
// this partition's report).
func (w *PartitionWriter) Discard() {
	w.r.closeIters()
	w.r.endWrites()
	w.r.done = true
}

// writeContext bounds a run's data write: by the writer slot's deadline
// (W3) for a Run; a PartitionWriter holds no slot.
func (r *Run) writeContext(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if r.part >= 0 {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, nil
	}
	return r.db.slotContext(ctx, r.ds, r.epoch)
}

// notThisPartition is Put's error for a row of another partition than a
// PartitionWriter's.
func (r *Run) notThisPartition(vals []Value) error {
	return fmt.Errorf("%w: row %s belongs to partition %d of %s, this writer writes partition %d",
		ErrInvalidArgument, r.putKeyText(vals), r.placed, r.ds.name, r.part)
}
