package server

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

// Rows and diffs as Apache Arrow record batches (arrow-go): an IPC stream
// written batch by batch as the rows are read, or a Parquet file
// (parquet.go). The schema is built from the version's schema
// (arrowtypes.go) before the first byte: the version's value shapes tell
// whether the values of a column fit its Arrow type, and a first pass
// over the rows looks at the columns they do not settle.

// arrowBatchRows is the most rows of one record batch: a stream holds at
// most one batch in memory.
const arrowBatchRows = 16384

// arrowBatches fills record batches of a fixed schema a row at a time and
// hands each full batch to emit. Its builders are reserved for a whole
// batch, and their data buffers for as many bytes as the last batch held,
// so a batch fills without growing them.
type arrowBatches struct {
	rb   *array.RecordBuilder
	rows int
	emit func(arrow.RecordBatch) error
	// mem reserves the batches' memory from the block cache once a
	// batch fills: the answer is then longer than one batch
	// (exportmemory.go).
	mem exportCache
}

func newArrowBatches(schema *arrow.Schema, emit func(arrow.RecordBatch) error) *arrowBatches {
	a := &arrowBatches{rb: array.NewRecordBuilder(memory.DefaultAllocator, schema), emit: emit}
	a.rb.Reserve(arrowBatchRows)
	return a
}

// endRow counts a row whose fields were appended and emits the batch once
// it holds arrowBatchRows.
func (a *arrowBatches) endRow() error {
	a.rows++
	if a.rows >= arrowBatchRows {
		return a.flush()
	}
	return nil
}

// flush emits the rows appended since the last batch, if any.
func (a *arrowBatches) flush() error {
	if a.rows == 0 {
		return nil
	}
	data := make([]int, len(a.rb.Fields()))
	for i, b := range a.rb.Fields() {
		if bb, ok := b.(*array.BinaryBuilder); ok {
			data[i] = bb.DataLen()
		} else if sb, ok := b.(*array.StringBuilder); ok {
			data[i] = sb.DataLen()
		}
	}
	if a.rows >= arrowBatchRows {
		a.mem.reserve()
	}
	rec := a.rb.NewRecordBatch()
	defer rec.Release()
	a.rows = 0
	a.rb.Reserve(arrowBatchRows)
	for i, b := range a.rb.Fields() {
		if bb, ok := b.(*array.BinaryBuilder); ok {
			bb.ReserveData(data[i])
		} else if sb, ok := b.(*array.StringBuilder); ok {
			sb.ReserveData(data[i])
		}
	}
	return a.emit(rec)
}

// release frees the builders and the memory reservation.
func (a *arrowBatches) release() {
	a.rb.Release()
	a.mem.done()
}

// arrowSchemaMeta is the metadata of an answer's schema: the dataset, its
// table read ("" for a dataset of one table: no key), the version read
// (for a diff, the to version, and from), the key columns as a JSON array.
func arrowSchemaMeta(info snapshot.VersionInfo, table string, from int64) arrow.Metadata {
	key, _ := json.Marshal(info.Schema.Key)
	keys := []string{arrowMetaDataset, arrowMetaVersion, arrowMetaKey}
	vals := []string{info.Dataset, strconv.FormatInt(info.Version, 10), string(key)}
	if table != "" {
		keys = append(keys, arrowMetaTable)
		vals = append(vals, table)
	}
	if from != 0 {
		keys = append(keys, arrowMetaFrom)
		vals = append(vals, strconv.FormatInt(from, 10))
	}
	return arrow.NewMetadata(keys, vals)
}

// scanArrow answers a scan as an Arrow stream. A stream sends its schema
// first, so it must know before its first row which columns hold a value
// their Arrow type cannot hold: the version's value shapes
// (snapshot.ValueShapes) tell for the columns they prove fit, and a first
// pass over the others (a scan of the same range at the same pinned
// version, needed for a version committed without shapes or one whose
// column holds such a value) fixes the rest.
func (s *Server) scanArrow(c echo.Context, r *snapshot.Reader, opts snapshot.ScanOptions, it snapshot.RowIterator) error {
	ctx := c.Request().Context()
	info := r.Version()
	t := newRowsTable(info.Schema, opts.Columns)
	if doubt := unproven(t.cols, info.Shapes); len(doubt) > 0 && !headOnly(c) {
		po := opts // the same rows, only the columns in doubt
		po.Columns = nil
		for _, i := range doubt {
			po.Columns = append(po.Columns, t.cols[i].col.Name)
		}
		probe, err := r.Scan(ctx, po)
		if err != nil {
			return err
		}
		err = t.probe(probe, doubt)
		probe.Close()
		if err != nil {
			return err
		}
	}
	fill := func(a *arrowBatches) error { return t.write(it, a) }
	return s.streamArrow(c, t.schema(info, r.Table()), fill)
}

// scanParquet answers a scan as a Parquet file (serveParquet), keyed by
// the version r pinned and the normalized scan (opts: the columns, the
// key ranges as typed values, the limit, the page token) and codec. A
// Parquet file is sent only once whole, so it is written at once and,
// should a value not fit its column's Arrow type, written again with
// that column as text.
func (s *Server) scanParquet(c echo.Context, r *snapshot.Reader, opts snapshot.ScanOptions, codec compress.Compression) error {
	ctx := c.Request().Context()
	info := r.Version()
	_, named, err := tableParam(c)
	if err != nil {
		return err
	}
	k := newParquetKey("rows")
	k.str(info.Dataset)
	k.str(strconv.FormatBool(named))
	k.str(r.Table())
	k.int(info.Version)
	k.int(int64(codec))
	k.strs(opts.Columns)
	k.values(opts.Start)
	k.values(opts.End)
	k.values(opts.Prefix)
	k.int(int64(opts.Limit))
	k.str(opts.PageToken)
	build := func(f parquetOut) error {
		t := newRowsTable(info.Schema, opts.Columns)
		forParquet(t.cols)
		var scan snapshot.RowIterator
		defer func() {
			if scan != nil {
				scan.Close()
			}
		}()
		return s.buildParquet(f, codec, func(bool) (*arrow.Schema, func(*arrowBatches) error, error) {
			if scan != nil {
				scan.Close()
			}
			var err error
			if scan, err = r.Scan(ctx, opts); err != nil {
				scan = nil
				return nil, nil, err
			}
			return t.schema(info, r.Table()), func(a *arrowBatches) error { return t.write(scan, a) }, nil
		})
	}
	name := fileName(info.Dataset, r.Table()) + "-v" + strconv.FormatInt(info.Version, 10) + ".parquet"
	return s.serveParquet(c, parquetAnswer{key: k, name: name, modified: info.CommittedAt, build: build})
}

// rowsTable is the Arrow form of a scan: one field per selected column.
type rowsTable struct {
	cols []arrowColumn
}

// newRowsTable maps the columns sel selects of schema (every column when
// sel is empty).
func newRowsTable(schema snapshot.Schema, sel []string) *rowsTable {
	t := &rowsTable{}
	for _, name := range SelectedColumns(sel, schema) {
		for _, col := range schema.Columns {
			if col.Name == name {
				t.cols = append(t.cols, newArrowColumn(name, col))
			}
		}
	}
	return t
}

// columnPositions returns, for each of cols, its index in names or -1.
func columnPositions(cols []arrowColumn, names []string) []int {
	pos := make([]int, len(cols))
	for i, ac := range cols {
		pos[i] = -1
		for j, n := range names {
			if n == ac.col.Name {
				pos[i] = j
				break
			}
		}
	}
	return pos
}

func (t *rowsTable) schema(info snapshot.VersionInfo, table string) *arrow.Schema {
	fields := make([]arrow.Field, len(t.cols))
	for i, ac := range t.cols {
		fields[i] = ac.field()
	}
	md := arrowSchemaMeta(info, table, 0)
	return arrow.NewSchema(fields, &md)
}

// probe reads the rows of it and turns to text each column of doubt (by
// index in t.cols) that has a value its Arrow type cannot hold; it stops
// early once no column is left in doubt.
func (t *rowsTable) probe(it snapshot.RowIterator, doubt []int) error {
	if len(doubt) == 0 {
		return nil
	}
	pos := columnPositions(t.cols, it.Columns())
	var vals []snapshot.Value
	for len(doubt) > 0 && it.Next() {
		var err error
		if vals, err = it.AppendValues(vals[:0]); err != nil {
			return err
		}
		doubt = checkFits(t.cols, doubt, pos, vals)
	}
	return it.Err()
}

// doubtful lists the columns of cols whose values may not fit.
func doubtful(cols []arrowColumn) []int {
	var d []int
	for i, ac := range cols {
		if ac.mayNotFit() {
			d = append(d, i)
		}
	}
	return d
}

// unproven lists the columns of cols whose values may not fit and whose
// fit the value shapes of some version of shapes (one per version whose
// values the answer holds) does not prove (provenFit).
func unproven(cols []arrowColumn, shapes ...*snapshot.ValueShapes) []int {
	var d []int
	for _, i := range doubtful(cols) {
		for _, vs := range shapes {
			if !cols[i].provenFit(vs) {
				d = append(d, i)
				break
			}
		}
	}
	return d
}

// checkFits turns to text each column of doubt whose value in vals (at
// pos) does not fit, and returns the columns still in doubt.
func checkFits(cols []arrowColumn, doubt, pos []int, vals []snapshot.Value) []int {
	out := doubt[:0]
	for _, i := range doubt {
		if p := pos[i]; p >= 0 && !cols[i].fits(vals[p]) {
			cols[i].enc = arrowText
			continue
		}
		out = append(out, i)
	}
	return out
}

// write appends every row of it to a. A value that does not fit its
// column's Arrow type turns the column to text and stops the write with
// errRefit: the rows are written again (Parquet, written whole before it
// is sent, learns so which columns are text without a first pass).
func (t *rowsTable) write(it snapshot.RowIterator, a *arrowBatches) error {
	fields := a.rb.Fields()
	pos := columnPositions(t.cols, it.Columns())
	var vals []snapshot.Value
	for it.Next() {
		var err error
		if vals, err = it.AppendValues(vals[:0]); err != nil {
			return err
		}
		for i := range t.cols {
			var v snapshot.Value
			if p := pos[i]; p >= 0 {
				v = vals[p]
			}
			if !t.cols[i].appendArrow(fields[i], v) {
				t.cols[i].enc = arrowText
				return errRefit
			}
		}
		if err := a.endRow(); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	return a.flush()
}

// streamArrow writes an Arrow IPC stream of schema, whose batches fill
// writes, to the client: the schema message at once, each batch as it is
// full, the end-of-stream marker at the end. An error after the first
// byte cuts the stream (no end-of-stream marker: readers see it
// truncated).
func (s *Server) streamArrow(c echo.Context, schema *arrow.Schema, fill func(*arrowBatches) error) error {
	bw := startStream(c, mediaArrowStream)
	if bw == nil {
		return nil
	}
	w := ipc.NewWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	a := newArrowBatches(schema, func(rec arrow.RecordBatch) error {
		if err := w.Write(rec); err != nil {
			return errClientGone
		}
		if err := bw.Flush(); err != nil {
			return errClientGone
		}
		return nil
	})
	a.mem.cache = s.cache
	defer a.release()
	err := fill(a)
	if err == nil {
		err = w.Close()
	}
	if err == errClientGone || c.Request().Context().Err() != nil {
		return nil
	}
	return s.endStream(c, bw, err)
}

// errClientGone stops a stream whose client no longer reads.
var errClientGone = context.Canceled
