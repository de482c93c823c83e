package adapters

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// tablesPull is one run of an adapter of several tables
// (api.Adapter.ManyTables), in steps: select (the connection's resources
// listed, the adapter's selection resolved, source.SelectTables), point
// (one point of the source, source.PointOpener), describe (each table's
// schema at the point), begin (one snapshot.TablesRun), read (the tables
// in parallel over the point's connections, each by a pull of its own into
// its TableWriter: chunk mode and digests as for one table) and commit (one
// version, or the current one recorded verified when nothing changed
// anywhere). Any table's error cancels the others and aborts the run:
// nothing of it is visible, the current version stays whole (P5).
type tablesPull struct {
	s     *Service
	ar    *activeRun
	spec  api.Adapter
	force bool
	runID string

	l      *lease
	pt     source.Point
	info   source.PointInfo
	tables []tableRead
	run    *snapshot.TablesRun
	// spread, for a partition-by-key adapter, sends each table's rows to
	// the owners of their partitions (partitioned.go); nil otherwise.
	spread TablesWriter
	cur    *snapshot.VersionInfo // the dataset's current version once the run began, if any

	created time.Time // the dataset's creation time when it exists, for TableRequest.DatasetCreated
	diff    bool      // the tables' readers can read a diff (source.DiffReader): the version records the point's position

	mu   sync.Mutex // guards rows
	rows int64      // rows read so far, every table
}

// tableRead is one table of a tablesPull.
type tableRead struct {
	name     string // in the dataset: "schema.table", or "table" for a source without schemas
	resource string // as TableRequest.Resource takes it, quoted
	schema   snapshot.Schema
	jsonCols []int
	est      int64
	res      pullResult
	rows     int64
	done     bool
	full     bool // its diff disagreed with the source's checksum: read in full
	diff     bool // its reader can read a diff (source.DiffReader)
}

// RunTable is one table of a run of several tables, in its record.
type RunTable struct {
	// Name is the table's name in the dataset.
	Name string `json:"name"`
	// Mode, RowsRead, Chunks and ChunksSkipped are as RunRecord's, for
	// this table; Stats are its counts in the version committed.
	Mode string `json:"mode,omitempty"`
	// ModeReason says why a table was read in full although its source
	// computes checksums (checksums.go): no checksums recorded yet (a
	// table new to the dataset, or whose last run inserted every row),
	// its schema changed, more than half its ranges changed at the last
	// run (a table of one range whenever it changed), more than half of
	// the first ranges checked changed, ... Empty for the other modes and
	// for a source without checksums.
	ModeReason    string            `json:"mode_reason,omitempty"`
	RowsRead      int64             `json:"rows_read"`
	Chunks        int               `json:"chunks,omitempty"`
	ChunksSkipped int               `json:"chunks_skipped,omitempty"`
	Stats         snapshot.RunStats `json:"stats"`
	// Dropped marks a table of the dataset's current version the run
	// did not read (gone from the source or from the selection, with
	// allow_dropped_tables): the version it commits lacks it, and Stats
	// count its rows as deleted.
	Dropped bool `json:"dropped,omitempty"`
}

// TablesInFull counts the tables of a run of several tables that were
// read in full, of all its tables: a run is ModeFull when one of them
// was, and its record says how many.
func (r RunRecord) TablesInFull() (full, all int) {
	for _, t := range r.Tables {
		if t.Mode == ModeFull {
			full++
		}
	}
	return full, len(r.Tables)
}

// defaultParallelism is the connections of a run of several tables on a
// shared or pooled connection when the adapter sets none: pgx's pool
// holds at least 4 by default.
const defaultParallelism = 4

// parallelism is how many connections a run of spec's tables reads over
// through l: the adapter's parallelism, else 1 for a single-use
// connection (one connection per run) and defaultParallelism for a shared
// or pooled one; never more than a pooled connection's max_open.
func parallelism(spec api.Adapter, l *lease) int {
	n := spec.Parallelism
	if n <= 0 {
		n = defaultParallelism
		if l.sharing == SharingSingleUse {
			n = 1
		}
	}
	if l.maxOpen > 0 {
		n = min(n, l.maxOpen)
	}
	return n
}

// pullTables runs an adapter of several tables (see the type tablesPull).
func (s *Service) pullTables(ctx context.Context, ar *activeRun, spec api.Adapter, force bool) (pullResult, error) {
	tp := &tablesPull{s: s, ar: ar, spec: spec, force: force}
	ar.mu.Lock()
	tp.runID = ar.rec.ID
	ar.mu.Unlock()
	l, err := s.acquire(ctx, spec.Connection)
	if err != nil {
		return pullResult{}, err
	}
	defer l.release()
	tp.l = l
	sel, warnings, err := s.selectTables(ctx, l, spec)
	if err != nil {
		return pullResult{}, err
	}
	if len(warnings) > 0 {
		ar.mu.Lock()
		ar.rec.Warnings = append(ar.rec.Warnings, warnings...)
		ar.mu.Unlock()
		for _, w := range warnings {
			s.log.Warn("run selection", "run", tp.runID, "adapter", spec.Name, "warning", w)
		}
	}
	if d, err := s.db.Dataset(ctx, spec.Dataset); err == nil {
		tp.created = d.CreatedAt
	}
	if err := tp.openPoint(ctx, sel); err != nil {
		return pullResult{}, err
	}
	defer func() {
		if err := tp.pt.Close(); err != nil {
			s.log.Warn("ending the point of the source", "run", tp.runID, "err", l.scrub(err))
		}
	}()
	if err := tp.describe(ctx, sel); err != nil {
		return pullResult{}, err
	}
	if err := tp.begin(ctx); err != nil {
		return pullResult{}, err
	}
	committed := false
	defer func() {
		if !committed {
			tp.abort(ctx)
		}
	}()
	err = tp.read(ctx)
	for i := 0; i < len(tp.tables); i++ {
		var dm *errDiffMismatch
		if !errors.As(err, &dm) {
			break
		}
		if err = tp.readAgain(ctx, dm.table); err == nil {
			err = tp.read(ctx)
		}
	}
	tp.record()
	if err != nil {
		return pullResult{}, err
	}
	committed = true
	return tp.commit(ctx)
}

// errNoPoint: a connection whose type cannot read several tables at one
// point (no source.PointOpener) or list its tables.
var errNoPoint = errors.New("adapters: the data connection cannot read several tables at one point")

// selectTables resolves spec's selection against the resources l lists.
// The warnings name the include patterns that match no table of the
// source (source.TableSelection.Unmatched), which the selection passes
// over when another pattern matches.
func (s *Service) selectTables(ctx context.Context, l *lease, spec api.Adapter) (sel []source.Resource, warnings []string, err error) {
	if _, ok := l.src.(source.PointOpener); !ok {
		return nil, nil, fmt.Errorf("%w: adapter %q: data connection %q is of type %s; name one resource", errNoPoint, spec.Name, spec.Connection, l.typ)
	}
	rl, ok := l.src.(ResourceLister)
	if !ok {
		return nil, nil, fmt.Errorf("%w: adapter %q: data connection %q of type %s cannot list its tables", errNoPoint, spec.Name, spec.Connection, l.typ)
	}
	all, err := rl.Resources(ctx)
	if err != nil {
		return nil, nil, connectOrReadError(ctx, l, spec.Connection, err)
	}
	ts := source.TableSelection{Resources: spec.Resources, Include: spec.Include, Exclude: spec.Exclude}
	cat := source.Catalog{Resources: all, Quote: source.QuoteOf(l.src)}
	if d, ok := l.src.(source.DefaultSchemaer); ok && len(spec.Resources) > 0 {
		if cat.DefaultSchema, err = d.DefaultSchema(ctx); err != nil {
			return nil, nil, connectOrReadError(ctx, l, spec.Connection, err)
		}
	}
	sel, err = source.SelectTables(ts, cat)
	if err != nil {
		return nil, nil, fmt.Errorf("adapter %q, data connection %q: %w", spec.Name, spec.Connection, err)
	}
	for _, p := range ts.Unmatched(cat) {
		warnings = append(warnings, fmt.Sprintf("%s matches no table of data connection %q (a typo in the pattern?); the run reads the tables the other patterns select", p, spec.Connection))
	}
	warnings = append(warnings, unusedTableKeys(spec, sel)...)
	if pc, ok := l.src.(source.PointChecker); ok {
		req := source.PointCheck{Tables: sel, Dataset: spec.Dataset}
		if d, err := s.db.Dataset(ctx, spec.Dataset); err == nil {
			req.DatasetCreated = d.CreatedAt
		}
		if err := pc.CheckPoint(ctx, req); err != nil {
			return nil, nil, fmt.Errorf("adapter %q, data connection %q: %w", spec.Name, spec.Connection, l.scrub(readError(ctx, spec.Connection, err)))
		}
	}
	return sel, warnings, nil
}

// unusedTableKeys are the warnings of the entries of spec's table_keys
// that name no table of the selection sel (a typo, or a table the source
// lacks for now); a run reads the selection all the same. An entry that
// names a selected table by its name without its schema, or in another
// case, is told the name to write instead; one named as the selected
// tables are (with a schema when they have one) but of none, a table
// dropped or left out, is told so, not how tables are named.
func unusedTableKeys(spec api.Adapter, sel []source.Resource) []string {
	schemas := slices.ContainsFunc(sel, func(r source.Resource) bool { return r.Schema != "" })
	var out []string
	for _, name := range slices.Sorted(maps.Keys(spec.TableKeys)) {
		if slices.ContainsFunc(sel, func(r source.Resource) bool { return tableName(r) == name }) {
			continue
		}
		var like []string
		for _, r := range sel {
			if n := tableName(r); r.Name == name || strings.EqualFold(n, name) {
				like = append(like, n)
			}
		}
		if len(like) > 0 {
			out = append(out, fmt.Sprintf("table_keys.%s names no selected table: did you mean %s? %s", name, strings.Join(like, " or "), tableNaming))
			continue
		}
		if len(sel) > 0 && strings.Contains(name, ".") == schemas {
			out = append(out, fmt.Sprintf("table_keys.%s names no selected table: the source has no such table now, or the adapter's selection leaves it out", name))
			continue
		}
		out = append(out, fmt.Sprintf("table_keys.%s names no selected table %s", name, tableNaming))
	}
	return out
}

// tableNaming says how an entry of table_keys names its table
// (tableName).
const tableNaming = "(tables are named schema.table, or table for a source without schemas)"

// connectOrReadError is err of the source, scrubbed: a *SourceError (the
// connect failed) already names the connection and its server and comes
// back as it is, as openResource returns it; any other is a readError.
func connectOrReadError(ctx context.Context, l *lease, conn string, err error) error {
	err = l.scrub(err)
	if se := (*SourceError)(nil); errors.As(err, &se) {
		return err
	}
	return readError(ctx, conn, err)
}

// quoteIdent quotes one identifier with q, doubling q inside it.
func quoteIdent(s string, q byte) string {
	qs := string(q)
	return qs + strings.ReplaceAll(s, qs, qs+qs) + qs
}

// openPoint opens the point of the source every table is read at, and
// records how it was made.
func (tp *tablesPull) openPoint(ctx context.Context, sel []source.Resource) error {
	po := tp.l.src.(source.PointOpener)
	pt, err := po.OpenPoint(ctx, source.PointRequest{Tables: len(sel), Resources: sel, Parallelism: parallelism(tp.spec, tp.l)})
	if err != nil {
		return fmt.Errorf("opening one point of the source of %d tables: %w", len(sel), connectOrReadError(ctx, tp.l, tp.spec.Connection, err))
	}
	tp.pt = pt
	tp.recordPoint()
	return nil
}

// recordPoint records the point's info in the run record: once opened,
// and again once the tables were opened (a snapstore point's position,
// the version read, is fixed by its first table).
func (tp *tablesPull) recordPoint() {
	tp.info = tp.pt.Info()
	tp.ar.mu.Lock()
	info := tp.info
	tp.ar.rec.Point = &info
	tp.ar.mu.Unlock()
}

// describe opens each selected table at the point for its schema, and
// closes it again: the run's tables are known before it begins. The
// tables are described over the point's connections at once, as they
// are read (a few catalog queries each, which add up over many tables).
// Tables without a usable key do not stop the others' description: the
// error names the first of them and counts the rest (keylessError), so
// that one run tells every table_keys entry or exclusion needed.
func (tp *tablesPull) describe(ctx context.Context, sel []source.Resource) error {
	q := source.QuoteOf(tp.l.src)
	tables := make([]tableRead, len(sel))
	keyless := make([]error, len(sel))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(tp.info.Connections, 1))
	for i, r := range sel {
		g.Go(func() error {
			t := tableRead{name: tableName(r), resource: quotedResource(r, q)}
			src, err := tp.pt.OpenTable(gctx, tp.tableRequest(&t))
			if err != nil {
				err = tableError(t.name, tp.l.scrub(readError(gctx, tp.spec.Connection, err)))
				if errors.Is(err, ErrNoKey) {
					keyless[i] = err
					return nil
				}
				return err
			}
			_, t.diff = src.(source.DiffReader)
			t.schema = src.Schema()
			t.jsonCols = embedJSON(&t.schema, tp.spec.EmbedJSON)
			t.est = max(src.Table().EstimatedRows, 0)
			if err := src.Close(); err != nil {
				return fmt.Errorf("table %s: %w", t.name, tp.l.scrub(err))
			}
			tables[i] = t
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := keylessError(sel, keyless); err != nil {
		return err
	}
	var est int64
	tp.diff = len(tables) > 0
	for _, t := range tables {
		est += t.est
		tp.diff = tp.diff && t.diff
	}
	tp.tables = tables
	tp.recordPoint()
	tp.ar.mu.Lock()
	tp.ar.rec.RowsEstimated = est
	tp.ar.mu.Unlock()
	return nil
}

// begin begins the snapshot run of every table, and enters the read
// phase.
func (tp *tablesPull) begin(ctx context.Context) error {
	s, spec := tp.s, tp.spec
	tsp, parts, err := tp.partitioner()
	if err != nil {
		return err
	}
	specs := make([]snapshot.TableSpec, len(tp.tables))
	for i, t := range tp.tables {
		specs[i] = snapshot.TableSpec{Name: t.name, Schema: t.schema, Partitions: parts}
	}
	var resource string
	if tp.diff {
		// The source version read, as a one-table copy records its own:
		// what a later run's diffs start from (diffread.go).
		resource = tp.info.Position
	}
	run, err := s.db.BeginTablesRun(ctx,
		snapshot.DatasetConfig{Name: spec.Dataset, Retention: retentionOf(spec), Guard: guardOf(spec)},
		snapshot.TablesRunOptions{Tables: specs, Force: tp.force, VerifyUnchanged: !spec.CommitUnchanged, DropMissing: spec.AllowDroppedTables,
			Source: snapshot.SourceInfo{Adapter: spec.Name, Connection: spec.Connection, Revision: tp.l.revision, Resource: resource, RunID: tp.runID}})
	switch {
	case errors.Is(err, snapshot.ErrTableMissing):
		return fmt.Errorf("%w: dataset %q: %w (set allow_dropped_tables to commit without them)", ErrResourceNotFound, spec.Dataset, err)
	case errors.Is(err, snapshot.ErrKeyChanged):
		// A table's key is fixed, but a table dropped and added again is
		// a new one: the rest of the dataset and its versions need not go.
		return fmt.Errorf("the source key of a table differs from its key in dataset %q; commit a run without the table "+
			"(exclude it, with allow_dropped_tables) and select it again, which adds it as a new table, or drop the dataset: %w", spec.Dataset, err)
	case err != nil:
		return fmt.Errorf("starting a run of dataset %q: %w", spec.Dataset, err)
	}
	tp.run, tp.spread = run, nil
	if tsp != nil {
		tp.spread, err = tsp.PartitionTables(ctx, run, PartitionedTables{Compression: spec.TransferCompression, RunID: tp.runID})
		if err != nil {
			return errors.Join(fmt.Errorf("starting a run of dataset %q: %w", spec.Dataset, err), run.Abort(context.WithoutCancel(ctx), err.Error()))
		}
	}
	if d, err := s.db.Dataset(ctx, spec.Dataset); err == nil {
		tp.cur = d.CurrentInfo
	}
	tp.ar.mu.Lock()
	tp.ar.rec.TxnID = run.TxnID()
	tp.ar.beginPhaseLocked(PhaseRead, s.now().UTC())
	tp.ar.mu.Unlock()
	s.checkpoint(ctx, tp.ar)
	return nil
}

// partitioner returns, for a partition-by-key adapter, what spreads the
// tables' partitions over the cluster and the count of partitions every
// table must have; nil and 0 otherwise.
func (tp *tablesPull) partitioner() (TablesPartitioner, int, error) {
	if Strategy(tp.spec.Strategy) != StrategyPartitionByKey {
		return nil, 0, nil
	}
	tsp, ok := tp.s.partitioner.(TablesPartitioner)
	if !ok {
		return nil, 0, tp.s.notPartitioned(tp.spec)
	}
	n := tp.s.partitioner.Partitions()
	if n < 1 {
		return nil, 0, fmt.Errorf("starting a run of dataset %q: the cluster's partition table has no partitions yet", tp.spec.Dataset)
	}
	return tsp, n, nil
}

// abort aborts the snapshot run.
func (tp *tablesPull) abort(ctx context.Context) {
	abortCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	abort := tp.run.Abort
	if tp.spread != nil {
		abort = tp.spread.Abort
	}
	if err := abort(abortCtx, "run "+tp.runID+" did not finish"); err != nil {
		tp.s.log.Warn("aborting run", "run", tp.runID, "txn", tp.run.TxnID(), "err", err)
	}
}

// read reads every table, up to the point's connections at once; the
// first error cancels the other reads and is returned once they stopped.
func (tp *tablesPull) read(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(tp.info.Connections, 1))
	for i := range tp.tables {
		g.Go(func() error { return tp.readTable(gctx, &tp.tables[i]) })
	}
	return g.Wait()
}

// tableRequest is what the run asks of table t: its key columns are its
// entry of table_keys, when it has one.
func (tp *tablesPull) tableRequest(t *tableRead) TableRequest {
	return TableRequest{Resource: t.resource, KeyColumns: tp.spec.TableKeys[t.name], Dataset: tp.spec.Dataset, DatasetCreated: tp.created}
}

// tableName is r's name in a dataset of several tables: "schema.table",
// or "table" for a source without schemas.
func tableName(r source.Resource) string {
	if r.Schema == "" {
		return r.Name
	}
	return r.Schema + "." + r.Name
}

// quotedResource is r as TableRequest.Resource takes it, each part quoted
// with q.
func quotedResource(r source.Resource, q byte) string {
	if r.Schema == "" {
		return quoteIdent(r.Name, q)
	}
	return quoteIdent(r.Schema, q) + "." + quoteIdent(r.Name, q)
}

// keylessError is the error of the tables of sel without a usable key,
// errs[i] that of sel[i] (nil: it has one): the first one's, with the
// names of the others; nil when every table has a key.
func keylessError(sel []source.Resource, errs []error) error {
	var first error
	var others []string
	for i, err := range errs {
		switch {
		case err == nil:
		case first == nil:
			first = err
		default:
			others = append(others, tableName(sel[i]))
		}
	}
	switch len(others) {
	case 0:
		return first
	case 1:
		return fmt.Errorf("%w; table %s has no usable key either", first, others[0])
	}
	return fmt.Errorf("%w; tables %s have no usable key either", first, strings.Join(others, ", "))
}

// tableError is err of the table name in a run of several tables. A
// table without a usable key says what such an adapter can do: name its
// key in table_keys (openResource's advice for one table is key_columns).
func tableError(name string, err error) error {
	if errors.Is(err, ErrNoKey) {
		return fmt.Errorf("table %s: %w; exclude the table, give it a primary key, or name its key columns in table_keys", name, err)
	}
	return fmt.Errorf("table %s: %w", name, err)
}

// readTable reads table t at the point into its TableWriter, as a run of
// one table reads it (pull.go): chunk mode when its digest allows, its
// new digest sealed at the end, then the writer finished
// (snapshot.TableWriter.Finish), so that the run holds a writer only for
// each table being read.
func (tp *tablesPull) readTable(ctx context.Context, t *tableRead) error {
	src, err := tp.pt.OpenTable(ctx, tp.tableRequest(t))
	if err != nil {
		return tableError(t.name, tp.l.scrub(readError(ctx, tp.spec.Connection, err)))
	}
	defer src.Close()
	// The table was described when the run began (describe), and is
	// described again here. A source whose catalog is not part of its
	// snapshot (MySQL's information_schema) shows a DDL of a table not
	// yet read in between: its rows would not fit the schema the run
	// declared.
	now := src.Schema()
	embedJSON(&now, tp.spec.EmbedJSON)
	if !slices.Equal(now.Columns, t.schema.Columns) || !slices.Equal(now.Key, t.schema.Key) {
		return fmt.Errorf("table %s: %w (its schema changed while the run read the source: columns %s, then %s); nothing is committed, the next run reads the new schema",
			t.name, ErrTableChanged, columnNames(t.schema), columnNames(now))
	}
	w := tp.run.Table(t.name)
	p := &pull{s: tp.s, ar: tp.ar, spec: tp.spec, force: tp.force, runID: tp.runID, l: tp.l, src: src,
		resource: t.name, schema: t.schema, jsonCols: t.jsonCols, w: w, local: w, tables: tp, first: w.Version() == 0}
	defer func() {
		if !t.done {
			// A table whose read failed counts the rows it read, in the
			// run's sum and its own entry, as the run's stats count them:
			// the record of a failed run says how far each table got.
			tp.progress(p.n % progressEvery)
			t.rows = p.n
		}
	}()
	finish := w.Finish
	if tp.spread != nil {
		// The table's partitions are written on their owners: no digest,
		// carrying over or diff, which need the rows here (the table is
		// read in full).
		rows := tp.spread.Table(t.name)
		p.w, p.local, finish = rows, nil, rows.Finish
	}
	p.cur = tp.tableCur(t)
	cs, _ := src.(checksummer)
	p.useChecksums(cs)
	p.digestWhy = "its partitions are written on their owners (partition by key)"
	if tp.spread == nil {
		p.prev, p.digestWhy = tp.s.readTableDigest(ctx, tp.spec.Dataset, t.name, tp.cur, t.schema, p.signature)
	}
	if err := p.passChunks(ctx); err != nil {
		return fmt.Errorf("table %s: %w", t.name, err)
	}
	p.startDigest()
	if err := p.read(ctx); err != nil {
		return fmt.Errorf("table %s: %w", t.name, err)
	}
	if err := p.seal(ctx); err != nil {
		return fmt.Errorf("table %s: %w", t.name, err)
	}
	// The table's writes end here, not at the commit: its writer's
	// buffers go before the next table's read opens another.
	if err := finish(ctx); err != nil {
		return fmt.Errorf("table %s: %w", t.name, err)
	}
	tp.progress(p.n % progressEvery)
	t.res, t.rows, t.done = p.res, p.n, true
	return nil
}

// tableCur is the dataset's current version as a read of table t sees it
// (diffread.go): the table's schema and stats in the place of the
// version's; nil when it does not hold t, or once t's diff disagreed.
func (tp *tablesPull) tableCur(t *tableRead) *snapshot.VersionInfo {
	if tp.cur == nil || t.full {
		return nil
	}
	ti, ok := tp.cur.Table(t.name)
	if !ok {
		return nil
	}
	c := *tp.cur
	c.Schema, c.Stats, c.Tables = ti.Schema, ti.Stats, nil
	return &c
}

// readAgain begins the run again after table's diff disagreed with the
// source's checksum (errDiffMismatch), that table to be read in full: a
// TableWriter cannot be begun again alone.
func (tp *tablesPull) readAgain(ctx context.Context, table string) error {
	tp.abort(ctx)
	for i := range tp.tables {
		t := &tp.tables[i]
		t.full = t.full || t.name == table
		t.res, t.rows, t.done = pullResult{}, 0, false
	}
	tp.mu.Lock()
	tp.rows = 0
	tp.mu.Unlock()
	return tp.begin(ctx)
}

// progress adds n rows read to the live run record. tp.mu is held over
// the record's update too, so that tables reading at once write their
// sums in the order they make them, never an older over a newer.
func (tp *tablesPull) progress(n int64) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.rows += n
	st := tp.run.Stats()
	tp.ar.mu.Lock()
	tp.ar.rec.RowsRead, tp.ar.rec.Stats = tp.rows, st
	tp.ar.mu.Unlock()
}

// record lists the tables read in the run record, each with how it was
// read, then the tables the run drops, by name.
func (tp *tablesPull) record() {
	dropped := tp.run.Dropped()
	out := make([]RunTable, 0, len(tp.tables)+len(dropped))
	for _, t := range tp.tables {
		rt := RunTable{Name: t.name, RowsRead: t.rows}
		if w := tp.run.Table(t.name); w != nil {
			rt.Stats = w.Stats()
		}
		if t.done {
			rt.Mode, rt.ModeReason, rt.Chunks, rt.ChunksSkipped = t.res.mode, t.res.reason, t.res.chunks, t.res.skipped
		}
		out = append(out, rt)
	}
	for _, d := range dropped {
		out = append(out, RunTable{Name: d.Name, Dropped: true, Stats: snapshot.RunStats{Deleted: d.Rows}})
	}
	tp.ar.mu.Lock()
	tp.ar.rec.Tables = out
	tp.ar.mu.Unlock()
}

// commit enters the commit phase and commits the run of every table.
func (tp *tablesPull) commit(ctx context.Context) (pullResult, error) {
	ar, run := tp.ar, tp.run
	// The run's mode: "full" when a table was read in full, else "diff"
	// when one was read by diff, else "chunks".
	res := pullResult{mode: ModeChunks}
	for _, t := range tp.tables {
		res.chunks += t.res.chunks
		res.skipped += t.res.skipped
		switch {
		case t.res.mode == ModeDiff && res.mode == ModeChunks:
			res.mode = ModeDiff
		case t.res.mode != ModeChunks && t.res.mode != ModeDiff:
			res.mode = ModeFull
		}
	}
	ar.mu.Lock()
	ar.rec.Stats = run.Stats()
	ar.beginPhaseLocked(PhaseCommit, tp.s.now().UTC())
	ar.mu.Unlock()
	tp.s.checkpoint(ctx, ar)
	if err := context.Cause(ctx); err != nil {
		tp.abort(ctx)
		return pullResult{}, err
	}
	commit := run.Commit
	if tp.spread != nil {
		commit = tp.spread.Commit
	}
	vi, err := commit(ctx)
	if err != nil {
		ar.mu.Lock()
		ar.rec.Stats = run.Stats()
		ar.mu.Unlock()
		if errors.Is(err, snapshot.ErrGuardRefused) {
			return pullResult{}, fmt.Errorf("committing dataset %q: %w (start the run with force=true to commit anyway)", tp.spec.Dataset, err)
		}
		return pullResult{}, fmt.Errorf("committing dataset %q: %w", tp.spec.Dataset, err)
	}
	tp.record() // each table's stats as committed
	res.vi, res.verified = vi, run.Verified()
	if res.verified {
		res.mode = ModeVerify
	}
	return res, nil
}

// columnNames lists a schema's columns by name and source type, for an
// error.
func columnNames(s snapshot.Schema) string {
	names := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		names[i] = strings.TrimSpace(c.Name + " " + c.SourceType)
	}
	return strings.Join(names, ", ")
}
