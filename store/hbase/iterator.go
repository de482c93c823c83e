package hbase

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/snapstore/snapstore/store"
)

// Scan implements store.Store. It opens an HBase scanner on the gateway at
// once, so the view is taken when Scan is called (store.S3; see the package doc
// for what HBase guarantees), and fetches ScanBatchRows rows per call as
// the iterator advances.
func (s *Store) Scan(ctx context.Context, table string, opts store.ScanOptions) (store.Iterator, error) {
	what := fmt.Sprintf("scanning %q", table)
	if err := s.check(ctx, what); err != nil {
		return nil, err
	}
	if err := store.CheckTable(table); err != nil {
		return nil, fmt.Errorf("hbase: %s: %w", what, err)
	}
	ro, err := opts.ReadOptions.Normalize()
	if err != nil {
		return nil, fmt.Errorf("hbase: %s: %w", what, err)
	}
	if opts.Start != nil && opts.End != nil && bytes.Compare(opts.Start, opts.End) > 0 {
		return nil, fmt.Errorf("hbase: %s: %w: start row after end row", what, store.ErrInvalidArgument)
	}
	tr, cols, maxv, empty := hbaseRead(ro)
	prefix := tablePrefix(table)
	it := &iterator{
		s:      s,
		ctx:    ctx,
		what:   what,
		prefix: prefix,
		start:  rowKey(prefix, opts.Start),
		stop:   tableEnd(table),
		minTS:  ro.TimeRange.Min,
		scan: tScan{
			columns:     cols,
			caching:     int32(s.opts.ScanBatchRows),
			maxVersions: maxv,
			timeRange:   tr,
		},
	}
	if opts.End != nil {
		it.stop = rowKey(prefix, opts.End)
	}
	if empty || bytes.Compare(it.start, it.stop) >= 0 {
		it.exhausted = true
		return it, nil
	}
	if err := it.open(it.start); err != nil {
		return nil, err
	}
	return it, nil
}

// iterator walks the rows of one HBase scanner. Cells handed out point into
// the fetched rows, valid until the next Next (store.Iterator's contract).
type iterator struct {
	s      *Store
	ctx    context.Context
	what   string
	prefix []byte // HBase row key prefix of the store table
	start  []byte // HBase row key the scan starts at
	stop   []byte // HBase row key the scan stops before
	minTS  int64  // the time range's Min, applied again after decoding
	scan   tScan

	id        int32 // gateway scanner id, valid while hasScanner
	hasScan   bool
	exhausted bool // the scanner has no more rows

	buf     []tResult // fetched rows
	bi, ci  int       // next cell: buf[bi].cells[ci]
	lastRow []byte    // HBase row key of the last cell returned
	cur     store.Cell
	err     error
	closed  bool
}

func (it *iterator) open(from []byte) error {
	sc := it.scan
	sc.start, sc.stop = from, it.stop
	res := &callResult{success: expect(thrift.I32, func(ctx context.Context, p thrift.TProtocol) (err error) { // idempotent on retry
		it.id, err = p.ReadI32(ctx)
		return err
	})}
	if err := it.s.call(it.ctx, it.what, "openScanner", func(e *enc) {
		e.binary(1, it.s.table)
		e.structure(2, sc.write)
	}, res); err != nil {
		return err
	}
	it.hasScan, it.exhausted = true, false
	it.buf, it.bi, it.ci = nil, 0, 0
	return nil
}

// closeScanner releases the gateway's scanner in the background, best
// effort (an unreleased scanner expires on the gateway), so that the end of
// a scan costs no round trip. Store.Close waits for these calls.
func (it *iterator) closeScanner() {
	if !it.hasScan {
		return
	}
	it.hasScan = false
	s, id, what := it.s, it.id, it.what
	ctx := context.WithoutCancel(it.ctx)
	s.bgMu.Lock()
	if s.closed.Load() {
		s.bgMu.Unlock()
		return
	}
	s.bg.Add(1)
	s.bgMu.Unlock()
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := s.call(ctx, what, "closeScanner", func(e *enc) { e.i32(1, id) }, nil); err != nil {
			s.log.Debug("closing a scanner", "err", err)
		}
	}()
}

func (it *iterator) fetch() error {
	var rows []tResult
	res := &callResult{success: expect(thrift.LIST, func(ctx context.Context, p thrift.TProtocol) error {
		return readResults(ctx, p, &rows)
	})}
	id, n := it.id, it.scan.caching
	if err := it.s.call(it.ctx, it.what, "getScannerRows", func(e *enc) {
		e.i32(1, id)
		e.i32(2, n)
	}, res); err != nil {
		if res.ia != nil {
			// The gateway no longer knows the scanner: its lease expired
			// (the iterator sat idle too long) or the gateway restarted.
			// Scanning again may work.
			it.hasScan = false
			return fmt.Errorf("hbase: %s: %w: the gateway lost scanner %d (lease expired or gateway restarted): %s",
				it.what, store.ErrUnavailable, id, clip(res.ia.message))
		}
		return err
	}
	it.buf, it.bi, it.ci = rows, 0, 0
	// The gateway answers with ResultScanner.next(n), which returns fewer
	// than n rows only when the scanner has no more: then no further call
	// is needed to learn that the scan is over.
	if len(rows) < int(n) {
		it.exhausted = true
		it.closeScanner()
	}
	return nil
}

// Next implements store.Iterator.
func (it *iterator) Next() bool {
	for {
		if it.err != nil || it.closed {
			return false
		}
		if it.s.closed.Load() {
			it.err = fmt.Errorf("hbase: %s: %w", it.what, store.ErrClosed)
			return false
		}
		for it.bi < len(it.buf) && it.ci >= len(it.buf[it.bi].cells) {
			it.bi, it.ci = it.bi+1, 0
		}
		if it.bi >= len(it.buf) {
			if it.exhausted {
				return false
			}
			if err := it.ctx.Err(); err != nil {
				it.err = fmt.Errorf("hbase: %s: %w", it.what, err)
				return false
			}
			if err := it.fetch(); err != nil {
				it.err = err
				return false
			}
			continue
		}
		r := &it.buf[it.bi]
		cv := &r.cells[it.ci]
		it.ci++
		if !bytes.HasPrefix(r.row, it.prefix) {
			it.err = fmt.Errorf("%w: %s: row %q outside the table's prefix", ErrServer, it.what, r.row)
			return false
		}
		if isCounter(cv) {
			continue
		}
		if !decodeCell(&it.cur, r.row[len(it.prefix):], cv) {
			it.err = fmt.Errorf("%w: %s: a cell of column %q has a value this package did not write", ErrServer, it.what, cv.qualifier)
			return false
		}
		it.lastRow = r.row
		if it.cur.Timestamp < it.minTS {
			continue
		}
		it.s.metrics.cellsOut.Inc()
		return true
	}
}

// Cell implements store.Iterator.
func (it *iterator) Cell() store.Cell { return it.cur }

// SeekRow implements store.Iterator. A target among the rows already fetched
// ahead of the cursor is reached in the buffer; any other target (backwards,
// or past the fetched rows) reopens the scanner at it, which takes a new
// view of the table (see the package doc).
func (it *iterator) SeekRow(row []byte) {
	if it.err != nil || it.closed {
		return
	}
	target := rowKey(it.prefix, row)
	if bytes.Compare(target, it.start) < 0 {
		target = it.start
	}
	if bytes.Compare(target, it.stop) >= 0 {
		it.closeScanner()
		it.buf, it.bi, it.ci, it.exhausted = nil, 0, 0, true
		return
	}
	if it.lastRow == nil || bytes.Compare(target, it.lastRow) > 0 {
		for j := it.bi; j < len(it.buf); j++ {
			if bytes.Compare(it.buf[j].row, target) >= 0 {
				it.bi, it.ci = j, 0
				return
			}
		}
		if it.exhausted {
			it.buf, it.bi, it.ci = nil, 0, 0
			return
		}
	}
	if it.s.closed.Load() {
		it.err = fmt.Errorf("hbase: %s: %w", it.what, store.ErrClosed)
		return
	}
	it.closeScanner()
	it.lastRow = nil
	if err := it.open(target); err != nil {
		it.err = err
	}
}

// Err implements store.Iterator.
func (it *iterator) Err() error { return it.err }

// Close implements store.Iterator: it releases the gateway's scanner and
// returns Err.
func (it *iterator) Close() error {
	if !it.closed {
		it.closed = true
		it.closeScanner()
		it.buf = nil
	}
	return it.err
}
