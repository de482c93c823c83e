package hbase

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snapstore/snapstore/store"
)

// Options configure Open. The zero value of each field but Addr takes the
// default given in its doc (EnsureDefaults).
type Options struct {
	// Addr is the host:port of HBase's Thrift2 gateway
	// (org.apache.hadoop.hbase.thrift2.ThriftServer, binary protocol, not
	// framed: the server's defaults). Required.
	Addr string
	// Namespace is the HBase namespace of the table; created when absent.
	// Default "snapstore". "default" uses HBase's default namespace.
	Namespace string
	// Table is the HBase table (in Namespace) that holds every store table,
	// the metadata table included, as row-key prefixes; created when absent.
	// Two snapstore processes with the same Addr, Namespace and Table see
	// the same data. Default "cells".
	Table string
	// PoolSize is the number of Thrift connections kept open at most; calls
	// beyond it wait for a free connection. Default 8.
	PoolSize int
	// DialTimeout bounds opening one connection. Default 5s.
	DialTimeout time.Duration
	// CallTimeout bounds one Thrift call (the context's deadline, when
	// sooner, wins). A call cut by it fails with store.ErrUnavailable.
	// Default 60s.
	CallTimeout time.Duration
	// ScanBatchRows is the number of rows fetched per scanner call (and
	// HBase's scanner caching). Default 256.
	ScanBatchRows int
	// MaxCellsPerCall bounds the cells sent in one putMultiple or
	// deleteMultiple call; larger batches are split. Default 5000.
	MaxCellsPerCall int
	// MaxWriteDelay is how long after a call failed (timed out at this
	// client, or the gateway became unreachable) the gateway may still
	// apply its write (store.S9, store.LateWriter): set it to the
	// gateway's hbase.client.operation.timeout, the longest its HBase
	// client retries one operation, plus its hbase.rpc.timeout, for an
	// attempt already sent. Default DefaultMaxWriteDelay (21 minutes:
	// HBase's defaults, 20 minutes and 1 minute).
	MaxWriteDelay time.Duration
	// Logger receives the backend's logs; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the backend's metrics (snapstore_hbase_*); nil
	// means none are registered.
	Registerer prometheus.Registerer
}

// DefaultMaxWriteDelay is the default Options.MaxWriteDelay: HBase's
// default hbase.client.operation.timeout (1 200 000 ms) plus its default
// hbase.rpc.timeout (60 000 ms).
const DefaultMaxWriteDelay = 21 * time.Minute

// EnsureDefaults fills the zero fields of o with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Namespace == "" {
		o.Namespace = "snapstore"
	}
	if o.Table == "" {
		o.Table = "cells"
	}
	if o.PoolSize <= 0 {
		o.PoolSize = 8
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 60 * time.Second
	}
	if o.ScanBatchRows <= 0 {
		o.ScanBatchRows = 256
	}
	if o.MaxCellsPerCall <= 0 {
		o.MaxCellsPerCall = 5000
	}
	if o.MaxWriteDelay <= 0 {
		o.MaxWriteDelay = DefaultMaxWriteDelay
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate reports every problem of o (after EnsureDefaults), each naming
// its field, wrapped in store.ErrInvalidArgument.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field, msg string) {
		errs = append(errs, fmt.Errorf("hbase: option %s: %s: %w", field, msg, store.ErrInvalidArgument))
	}
	if o.Addr == "" {
		bad("Addr", "the Thrift2 gateway address is required")
	} else if !strings.Contains(o.Addr, ":") {
		bad("Addr", fmt.Sprintf("%q is not host:port", o.Addr))
	}
	if !validName(o.Namespace) {
		bad("Namespace", fmt.Sprintf("%q: HBase names take letters, digits and _", o.Namespace))
	}
	if !validName(strings.NewReplacer("-", "", ".", "").Replace(o.Table)) || strings.HasPrefix(o.Table, ".") || strings.HasPrefix(o.Table, "-") {
		bad("Table", fmt.Sprintf("%q: HBase table names take letters, digits, _, - and . (not first)", o.Table))
	}
	return errors.Join(errs...)
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Store is a store.Store on one HBase table through the Thrift2 gateway.
// It is safe for concurrent use.
type Store struct {
	opts    Options
	table   []byte     // "namespace:table", the name data calls take
	name    tTableName // the same, for admin calls
	pool    *pool
	log     *slog.Logger
	metrics *metrics
	closed  atomic.Bool
	// bgMu orders the start of background calls before Close's wait: bg.Add
	// happens under bgMu only while closed is false, and Close sets closed
	// under bgMu.
	bgMu sync.Mutex
	bg   sync.WaitGroup // background closeScanner calls

	// afterCall, when set (by tests, before use), is called after each
	// Thrift call with the method and its unclassified error.
	afterCall func(method string, err error)
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.LateWriter   = (*Store)(nil)
	_ store.ApplyPlanner = (*Store)(nil)
)

// Open connects to the Thrift2 gateway at opts.Addr and returns a Store on
// the table opts.Namespace:opts.Table, creating the namespace and the table
// (see the package doc for the family settings) when they are absent. An
// existing table is checked: ErrIncompatibleTable when its family would lose
// versions. Errors: store.ErrInvalidArgument for bad options,
// store.ErrUnavailable when the gateway cannot be reached, ErrServer.
func Open(ctx context.Context, opts Options) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Store{
		opts:  opts,
		table: []byte(opts.Namespace + ":" + opts.Table),
		name:  tTableName{ns: opts.Namespace, qualifier: opts.Table},
		log:   opts.Logger.With("component", "store/hbase", "table", opts.Namespace+":"+opts.Table),
	}
	s.metrics = newMetrics(opts.Registerer, func() (int, int) { return s.pool.stats() })
	s.pool = newPool(opts.Addr, opts.PoolSize, opts.DialTimeout, s.metrics)
	if err := s.ensureTable(ctx); err != nil {
		s.pool.close()
		return nil, err
	}
	s.log.Debug("opened", "addr", opts.Addr)
	return s, nil
}

// familyDescriptor is the one column family the store creates.
func familyDescriptor() tColumnFamilyDescriptor {
	return tColumnFamilyDescriptor{
		name:             family,
		attributes:       map[string]string{"NEW_VERSION_BEHAVIOR": "true"},
		bloomFilter:      bloomRow,
		compression:      compressionNone,
		dataEncoding:     encodingFastDiff,
		keepDeletedCells: keepDeletedFalse,
		maxVersions:      maxThriftVersions,
		minVersions:      0,
		timeToLive:       math.MaxInt32, // HConstants.FOREVER
	}
}

func (s *Store) call(ctx context.Context, what, method string, args callArgs, res *callResult) error {
	if res == nil {
		res = &callResult{}
	}
	err := s.pool.call(ctx, s.opts.CallTimeout, method, args, res)
	if s.afterCall != nil {
		s.afterCall(method, err)
	}
	return classify(what, err)
}

func (s *Store) ensureTable(ctx context.Context) error {
	var exists bool
	res := &callResult{success: expect(thrift.BOOL, func(ctx context.Context, p thrift.TProtocol) (err error) {
		exists, err = p.ReadBool(ctx)
		return err
	})}
	if err := s.call(ctx, "checking table "+s.name.String(), "tableExists",
		func(e *enc) { e.structure(1, s.name.write) }, res); err != nil {
		return err
	}
	if !exists {
		if s.opts.Namespace != "default" {
			err := s.call(ctx, "creating namespace "+s.opts.Namespace, "createNamespace", func(e *enc) {
				e.structure(1, func(e *enc) { e.str(1, s.opts.Namespace) })
			}, nil)
			if err != nil && !strings.Contains(err.Error(), "NamespaceExistException") {
				return err
			}
		}
		desc := tTableDescriptor{name: s.name, families: []tColumnFamilyDescriptor{familyDescriptor()}}
		err := s.call(ctx, "creating table "+s.name.String(), "createTable", func(e *enc) {
			e.structure(1, desc.write)
		}, nil)
		if err != nil && !strings.Contains(err.Error(), "TableExistsException") {
			return err
		}
		s.log.Info("created HBase table", "addr", s.opts.Addr)
	}
	var desc tTableDescriptor
	res = &callResult{success: expect(thrift.STRUCT, func(ctx context.Context, p thrift.TProtocol) error {
		desc = tTableDescriptor{} // a retried call reads its reply afresh
		return desc.read(ctx, p)
	})}
	if err := s.call(ctx, "reading the descriptor of "+s.name.String(), "getTableDescriptor",
		func(e *enc) { e.structure(1, s.name.write) }, res); err != nil {
		return err
	}
	return checkDescriptor(s.name, &desc)
}

// checkDescriptor returns ErrIncompatibleTable unless desc has family with
// the settings of familyDescriptor that keep every version.
func checkDescriptor(name tTableName, desc *tTableDescriptor) error {
	for i := range desc.families {
		f := &desc.families[i]
		if !bytes.Equal(f.name, family) {
			continue
		}
		var bad []string
		if f.maxVersions != maxThriftVersions {
			bad = append(bad, fmt.Sprintf("VERSIONS is %d, want %d", f.maxVersions, maxThriftVersions))
		}
		if f.minVersions != 0 {
			bad = append(bad, fmt.Sprintf("MIN_VERSIONS is %d, want 0", f.minVersions))
		}
		if f.hasTimeToLive && f.timeToLive != math.MaxInt32 {
			bad = append(bad, fmt.Sprintf("TTL is %d s, want FOREVER", f.timeToLive))
		}
		if f.keepDeletedCells != keepDeletedFalse {
			bad = append(bad, "KEEP_DELETED_CELLS is set, want FALSE")
		}
		if f.attributes["NEW_VERSION_BEHAVIOR"] != "true" {
			bad = append(bad, "NEW_VERSION_BEHAVIOR is not true")
		}
		if len(bad) > 0 {
			return fmt.Errorf("%w: %s family %q: %s", ErrIncompatibleTable, name, family, strings.Join(bad, "; "))
		}
		return nil
	}
	return fmt.Errorf("%w: %s has no column family %q", ErrIncompatibleTable, name, family)
}

// check returns the error of a call on a closed store or a done context.
func (s *Store) check(ctx context.Context, what string) error {
	if s.closed.Load() {
		return fmt.Errorf("hbase: %s: %w", what, store.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("hbase: %s: %w", what, err)
	}
	return nil
}

// maxRowKey is HBase's limit on a row key's length (Short.MAX_VALUE).
const maxRowKey = 32767

// rowMutations are the mutations of one row of a batch, after collapsing;
// idx are their indexes in the batch.
type rowMutations struct {
	key  []byte
	puts []tColumnValue
	dels []tColumn
	idx  []int
}

// collapse groups the mutations of b by row, in the order rows first
// appear, keeping only the last mutation of each coordinate (row, column,
// HBase timestamp), so that no row carries a put and a delete of one
// coordinate, whose order HBase would not keep within a call (M5). b has
// been validated. It returns the rows and the count of cells kept.
func collapse(b *store.Batch) ([]*rowMutations, int) {
	var last map[string]int
	if len(b.Mutations) > 1 {
		last = make(map[string]int, len(b.Mutations))
		var k []byte
		for i := range b.Mutations {
			k = coordKey(k[:0], &b.Mutations[i].Cell)
			last[string(k)] = i
		}
	}
	prefix := tablePrefix(b.Table)
	rows := map[string]*rowMutations{}
	var order []*rowMutations
	var k []byte
	cells := 0
	for i := range b.Mutations {
		m := &b.Mutations[i]
		if last != nil {
			k = coordKey(k[:0], &m.Cell)
			if last[string(k)] != i {
				continue
			}
		}
		rm := rows[string(m.Cell.Row)]
		if rm == nil {
			rm = &rowMutations{key: rowKey(prefix, m.Cell.Row)}
			rows[string(m.Cell.Row)] = rm
			order = append(order, rm)
		}
		hts, top := hbaseTimestamp(m.Cell.Timestamp)
		qual := qualifier(m.Cell.Column)
		switch m.Op {
		case store.OpPut:
			rm.puts = append(rm.puts, tColumnValue{family: family, qualifier: qual, timestamp: hts,
				value: encodeValue(m.Cell.Kind, top, m.Cell.Value)})
		case store.OpDeleteVersion:
			rm.dels = append(rm.dels, tColumn{family: family, qualifier: qual, hasQualifier: true,
				timestamp: hts, hasTimestamp: true})
		}
		rm.idx = append(rm.idx, i)
		cells++
	}
	return order, cells
}

// Thrift2 write methods a batch is sent with.
const (
	methodMutateRow      = "mutateRow"
	methodPutMultiple    = "putMultiple"
	methodDeleteMultiple = "deleteMultiple"
	methodCheckAndMutate = "checkAndMutate"
	methodIncrement      = "increment"
)

// writeCall is one Thrift call of an Apply: a mutateRow of one row with
// puts and version deletions, or a putMultiple or deleteMultiple of rows
// with only one of the two.
type writeCall struct {
	method string
	rows   []*rowMutations
}

// validateBatch checks b as Apply needs it: a table, valid mutations, row
// keys HBase takes.
func validateBatch(what string, b *store.Batch) error {
	if err := store.CheckTable(b.Table); err != nil {
		return fmt.Errorf("hbase: %s: %w", what, err)
	}
	prefix := tablePrefix(b.Table)
	for i := range b.Mutations {
		if err := b.Mutations[i].Validate(); err != nil {
			return fmt.Errorf("hbase: %s: mutation %d: %w", what, i, err)
		}
		if n := len(prefix) + len(b.Mutations[i].Cell.Row); n > maxRowKey {
			return fmt.Errorf("hbase: %s: mutation %d: %w: row key of %d bytes with the table prefix, HBase takes at most %d",
				what, i, store.ErrInvalidArgument, n, maxRowKey)
		}
	}
	return nil
}

// plan returns the calls that Apply makes for a validated b, in order: a
// row with both puts and version deletions goes out as a mutateRow when it
// is reached; the other rows gather into a putMultiple and a
// deleteMultiple, sent (in that order) once they hold MaxCellsPerCall cells,
// and at the end.
func (s *Store) plan(b *store.Batch) ([]writeCall, int) {
	rows, cells := collapse(b)
	var calls []writeCall
	var puts, dels []*rowMutations
	n := 0
	flush := func() {
		if len(puts) > 0 {
			calls = append(calls, writeCall{method: methodPutMultiple, rows: puts})
		}
		if len(dels) > 0 {
			calls = append(calls, writeCall{method: methodDeleteMultiple, rows: dels})
		}
		puts, dels, n = nil, nil, 0
	}
	for _, rm := range rows {
		switch {
		case len(rm.puts) > 0 && len(rm.dels) > 0:
			calls = append(calls, writeCall{method: methodMutateRow, rows: []*rowMutations{rm}})
			continue
		case len(rm.puts) > 0:
			puts = append(puts, rm)
			n += len(rm.puts)
		default:
			dels = append(dels, rm)
			n += len(rm.dels)
		}
		if n >= s.opts.MaxCellsPerCall {
			flush()
		}
	}
	flush()
	return calls, cells
}

// Apply implements store.Store. Mutations of one coordinate collapse to the
// last one; the rest are sent as putMultiple and deleteMultiple calls (or
// one mutateRow for a row with both puts and version deletions), each row
// applied atomically by HBase (plan). A multi-row batch is not atomic
// across rows: see the package doc and ApplyCalls.
func (s *Store) Apply(ctx context.Context, b *store.Batch) error {
	what := "applying a batch to " + fmt.Sprintf("%q", b.Table)
	if err := s.check(ctx, what); err != nil {
		return err
	}
	if err := validateBatch(what, b); err != nil {
		return err
	}
	if len(b.Mutations) == 0 {
		return nil
	}
	calls, cells := s.plan(b)
	for _, c := range calls {
		var err error
		switch c.method {
		case methodMutateRow:
			err = s.mutateRow(ctx, what, c.rows[0])
		case methodPutMultiple:
			err = s.putMultiple(ctx, what, c.rows)
		case methodDeleteMultiple:
			dels := make([]tDelete, len(c.rows))
			for i, rm := range c.rows {
				dels[i] = tDelete{row: rm.key, columns: rm.dels, deleteType: deleteColumn}
			}
			err = s.deleteMultiple(ctx, what, dels)
		}
		if err != nil {
			return err
		}
	}
	s.metrics.cellsIn.Add(float64(cells))
	return nil
}

// ApplyCalls implements store.ApplyPlanner: the parts of b that Apply
// sends in one Thrift call each, in the order it sends them, holding b's
// mutations after collapsing (M5).
func (s *Store) ApplyCalls(b *store.Batch) ([]*store.Batch, error) {
	if err := validateBatch("planning a batch", b); err != nil {
		return nil, err
	}
	calls, _ := s.plan(b)
	out := make([]*store.Batch, len(calls))
	for i, c := range calls {
		part := &store.Batch{Table: b.Table, Sync: b.Sync}
		for _, rm := range c.rows {
			for _, j := range rm.idx {
				part.Mutations = append(part.Mutations, b.Mutations[j])
			}
		}
		out[i] = part
	}
	return out, nil
}

func (s *Store) putMultiple(ctx context.Context, what string, rows []*rowMutations) error {
	return s.call(ctx, what, methodPutMultiple, func(e *enc) {
		e.binary(1, s.table)
		e.list(2, thrift.STRUCT, len(rows), func(e *enc, i int) {
			p := tPut{row: rows[i].key, cells: rows[i].puts}
			e.structBody(p.write)
		})
	}, nil)
}

// coordKey appends an unambiguous key of a cell's coordinate.
func coordKey(dst []byte, c *store.Cell) []byte {
	hts, _ := hbaseTimestamp(c.Timestamp)
	dst = binary.AppendUvarint(dst, uint64(len(c.Row)))
	dst = append(dst, c.Row...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(hts))
	return append(dst, c.Column...)
}

func (s *Store) mutateRow(ctx context.Context, what string, rm *rowMutations) error {
	rmu := rm.thrift()
	return s.call(ctx, what, methodMutateRow, func(e *enc) {
		e.binary(1, s.table)
		e.structure(2, rmu.write)
	}, nil)
}

// thrift returns the TRowMutations of rm: its puts, then its version
// deletions (collapse left no coordinate in both).
func (rm *rowMutations) thrift() tRowMutations {
	r := tRowMutations{row: rm.key}
	if len(rm.puts) > 0 {
		r.mutations = append(r.mutations, tMutation{put: &tPut{row: rm.key, cells: rm.puts}})
	}
	if len(rm.dels) > 0 {
		r.mutations = append(r.mutations, tMutation{del: &tDelete{row: rm.key, columns: rm.dels, deleteType: deleteColumn}})
	}
	return r
}

// deleteMultiple sends dels; HBase returns the deletes it could not apply.
func (s *Store) deleteMultiple(ctx context.Context, what string, dels []tDelete) error {
	failed := 0
	res := &callResult{success: expect(thrift.LIST, func(ctx context.Context, p thrift.TProtocol) error {
		failed = 0 // a retried call reads its reply afresh
		return readList(ctx, p, func(int) error {
			failed++
			return p.Skip(ctx, thrift.STRUCT)
		})
	})}
	err := s.call(ctx, what, methodDeleteMultiple, func(e *enc) {
		e.binary(1, s.table)
		e.list(2, thrift.STRUCT, len(dels), func(e *enc, i int) { e.structBody(dels[i].write) })
	}, res)
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("hbase: %s: %w: HBase did not apply %d of %d deletes", what, store.ErrUnavailable, failed, len(dels))
	}
	return nil
}

// hbaseRead translates read options: the HBase time range, the column list
// (with "" for row markers) and max versions; empty is true when the range
// selects nothing.
func hbaseRead(o store.ReadOptions) (tr tTimeRange, cols []tColumn, maxVersions int32, empty bool) {
	tr = tTimeRange{min: o.TimeRange.Min, max: o.TimeRange.Max}
	if o.TimeRange.Max == store.MaxTimestamp {
		// Unbounded; MaxTimestamp itself is stored at topHBaseTimestamp.
		tr.min = min(tr.min, topHBaseTimestamp)
	} else if tr.min >= tr.max {
		empty = true
	}
	if len(o.Columns) > 0 {
		cols = append(cols, tColumn{family: family, qualifier: qualifier(nil), hasQualifier: true})
		for _, c := range o.Columns {
			if len(c) > 0 {
				cols = append(cols, tColumn{family: family, qualifier: qualifier(c), hasQualifier: true})
			}
		}
	}
	maxVersions = maxThriftVersions
	if o.MaxVersions > 0 && o.MaxVersions < int(maxThriftVersions) {
		maxVersions = int32(o.MaxVersions)
	}
	return tr, cols, maxVersions, empty
}

// Get implements store.Store with one Thrift2 get.
func (s *Store) Get(ctx context.Context, table string, row []byte, opts store.ReadOptions) ([]store.Cell, error) {
	what := fmt.Sprintf("getting row %q of %q", row, table)
	if err := s.check(ctx, what); err != nil {
		return nil, err
	}
	if err := store.CheckTable(table); err != nil {
		return nil, fmt.Errorf("hbase: %s: %w", what, err)
	}
	if len(row) == 0 {
		return nil, fmt.Errorf("hbase: %s: %w: empty row key", what, store.ErrInvalidArgument)
	}
	opts, err := opts.Normalize()
	if err != nil {
		return nil, fmt.Errorf("hbase: %s: %w", what, err)
	}
	tr, cols, maxv, empty := hbaseRead(opts)
	if empty {
		return nil, nil
	}
	g := tGet{row: rowKey(tablePrefix(table), row), columns: cols, timeRange: tr, maxVersions: maxv}
	var r tResult
	res := &callResult{success: expect(thrift.STRUCT, func(ctx context.Context, p thrift.TProtocol) error {
		r = tResult{} // a retried call reads its reply afresh
		return r.read(ctx, p)
	})}
	if err := s.call(ctx, what, "get", func(e *enc) {
		e.binary(1, s.table)
		e.structure(2, g.write)
	}, res); err != nil {
		return nil, err
	}
	if len(r.cells) == 0 {
		return nil, nil
	}
	out := make([]store.Cell, 0, len(r.cells))
	rowCopy := bytes.Clone(row)
	for i := range r.cells {
		if isCounter(&r.cells[i]) {
			continue
		}
		var c store.Cell
		if !decodeCell(&c, rowCopy, &r.cells[i]) {
			return nil, fmt.Errorf("%w: %s: a cell of column %q has a value this package did not write", ErrServer, what, r.cells[i].qualifier)
		}
		if c.Timestamp >= opts.TimeRange.Min {
			out = append(out, c)
		}
	}
	s.metrics.cellsOut.Add(float64(len(out)))
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// VisitRow implements store.Store with one Thrift2 get, as Get.
func (s *Store) VisitRow(ctx context.Context, table string, row []byte, opts store.ReadOptions, fn func(store.Cell) bool) error {
	cells, err := s.Get(ctx, table, row, opts)
	if err != nil {
		return err
	}
	for _, c := range cells {
		if !fn(c) {
			break
		}
	}
	return nil
}

// DeleteRange implements store.Store: it scans the row keys of [start, end)
// and deletes each row with a family delete marker at the largest HBase
// timestamp, in calls of up to MaxCellsPerCall rows. It is not atomic
// across rows (see the package doc); a DeleteRange that failed may be
// retried.
func (s *Store) DeleteRange(ctx context.Context, table string, start, end []byte) error {
	what := fmt.Sprintf("deleting rows [%q, %q) of %q", start, end, table)
	if err := s.check(ctx, what); err != nil {
		return err
	}
	if err := store.CheckTable(table); err != nil {
		return fmt.Errorf("hbase: %s: %w", what, err)
	}
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		return fmt.Errorf("hbase: %s: %w: start after end", what, store.ErrInvalidArgument)
	}
	if start != nil && end != nil && bytes.Equal(start, end) {
		return nil
	}
	prefix := tablePrefix(table)
	sc := tScan{
		start:       rowKey(prefix, start),
		stop:        tableEnd(table),
		caching:     int32(min(s.opts.MaxCellsPerCall, 10000)),
		maxVersions: 1,
		timeRange:   tTimeRange{min: 0, max: math.MaxInt64},
		filter:      "FirstKeyOnlyFilter() AND KeyOnlyFilter()",
	}
	if end != nil {
		sc.stop = rowKey(prefix, end)
	}
	deleted := 0
	var lastDeleted []byte
	for {
		// A fresh scanner per round: the rows deleted by the last round are
		// gone, so each round starts at the range's start again.
		rows, err := s.scanOnce(ctx, what, &sc)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		if lastDeleted != nil && bytes.Equal(rows[0].row, lastDeleted) {
			// Without this guard a delete HBase did not apply would loop.
			return fmt.Errorf("%w: %s: row %q is still there after its delete", ErrServer, what, lastDeleted)
		}
		lastDeleted = rows[0].row
		dels := make([]tDelete, len(rows))
		for i, r := range rows {
			dels[i] = tDelete{row: r.row, deleteType: deleteFamily, columns: []tColumn{{
				family: family, timestamp: topHBaseTimestamp, hasTimestamp: true,
			}}}
		}
		if err := s.deleteMultiple(ctx, what, dels); err != nil {
			return err
		}
		deleted += len(rows)
		if len(rows) < int(sc.caching) {
			break
		}
	}
	s.log.Debug("deleted range", "rows", deleted, "store_table", table)
	return nil
}

// scanOnce returns up to sc.caching rows of sc with getScannerResults (a
// scanner opened and closed by the gateway in one call).
func (s *Store) scanOnce(ctx context.Context, what string, sc *tScan) ([]tResult, error) {
	var rows []tResult
	res := &callResult{success: expect(thrift.LIST, func(ctx context.Context, p thrift.TProtocol) error {
		rows = rows[:0] // a retried call reads its reply afresh
		return readResults(ctx, p, &rows)
	})}
	err := s.call(ctx, what, "getScannerResults", func(e *enc) {
		e.binary(1, s.table)
		e.structure(2, sc.write)
		e.i32(3, sc.caching)
	}, res)
	return rows, err
}

// Sync implements store.Store. Every batch is written with HBase's default
// durability (SYNC_WAL: the WAL edit is synced before the call returns), so
// there is nothing left to sync; Sync only checks the store and context.
func (s *Store) Sync(ctx context.Context) error {
	return s.check(ctx, "syncing")
}

// Close implements store.Store: it closes the pooled connections (those in
// use close when their call returns). Open iterators fail with
// store.ErrClosed at their next call; their HBase scanners expire on the
// gateway. A second Close returns store.ErrClosed.
func (s *Store) Close() error {
	s.bgMu.Lock()
	wasClosed := s.closed.Swap(true)
	s.bgMu.Unlock()
	if wasClosed {
		return fmt.Errorf("hbase: closing: %w", store.ErrClosed)
	}
	s.bg.Wait()
	s.pool.close()
	return nil
}

// DropTable disables and deletes the HBase table opts.Namespace:opts.Table
// with every store table in it, for tests and decommissioning. A table that
// does not exist is not an error. Errors: store.ErrInvalidArgument for bad
// options, store.ErrUnavailable, ErrServer.
func DropTable(ctx context.Context, opts Options) error {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return err
	}
	s := &Store{opts: opts, name: tTableName{ns: opts.Namespace, qualifier: opts.Table}}
	s.metrics = newMetrics(nil, func() (int, int) { return s.pool.stats() })
	s.pool = newPool(opts.Addr, 1, opts.DialTimeout, s.metrics)
	defer s.pool.close()
	for _, method := range []string{"disableTable", "deleteTable"} {
		err := s.call(ctx, method+" "+s.name.String(), method, func(e *enc) { e.structure(1, s.name.write) }, nil)
		switch {
		case err == nil:
		case strings.Contains(err.Error(), "TableNotFoundException"):
			return nil
		case method == "disableTable" && strings.Contains(err.Error(), "TableNotEnabledException"):
		default:
			return err
		}
	}
	return nil
}

// Options returns the options the store was opened with, defaults filled.
func (s *Store) Options() Options { return s.opts }
