package hbase

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/snapstore/snapstore/store"
)

// Single-row operations (store.S6, store.S7, store.S8) and their Thrift2 calls: mutateRow,
// checkAndMutate and increment, each one call on one HBase row, applied
// atomically by HBase under the row's lock.

// rowBatch validates b for MutateRow and CheckAndMutate and returns its
// collapsed row (nil for an empty batch).
func (s *Store) rowBatch(what string, b *store.Batch) (*rowMutations, error) {
	if _, err := store.CheckRowBatch(b); err != nil {
		return nil, fmt.Errorf("hbase: %s: %w", what, err)
	}
	if err := validateBatch(what, b); err != nil {
		return nil, err
	}
	if len(b.Mutations) == 0 {
		return nil, nil
	}
	rows, _ := collapse(b)
	return rows[0], nil
}

// MutateRow implements store.Store with one mutateRow call (store.S6).
func (s *Store) MutateRow(ctx context.Context, b *store.Batch) error {
	what := fmt.Sprintf("mutating a row of %q", b.Table)
	if err := s.check(ctx, what); err != nil {
		return err
	}
	rm, err := s.rowBatch(what, b)
	if err != nil || rm == nil {
		return err
	}
	if err := s.mutateRow(ctx, what, rm); err != nil {
		return err
	}
	s.metrics.cellsIn.Add(float64(len(rm.idx)))
	return nil
}

// CheckAndMutate implements store.Store with one checkAndMutate call
// (store.S7): compare operator EQUAL against the encoded put of
// check.Value (M1), or an empty value for absence. The call is never repeated on a broken
// connection (pool.call): a repeat could find its own write and report
// "not applied".
func (s *Store) CheckAndMutate(ctx context.Context, b *store.Batch, check store.Check) (bool, error) {
	what := fmt.Sprintf("checking and mutating a row of %q", b.Table)
	if err := s.check(ctx, what); err != nil {
		return false, err
	}
	rm, err := s.rowBatch(what, b)
	if err != nil {
		return false, err
	}
	if rm == nil {
		return false, fmt.Errorf("hbase: %s: %w: no mutation", what, store.ErrInvalidArgument)
	}
	rmu := rm.thrift()
	var applied bool
	res := &callResult{success: expect(thrift.BOOL, func(ctx context.Context, p thrift.TProtocol) (err error) {
		applied, err = p.ReadBool(ctx)
		return err
	})}
	err = s.call(ctx, what, methodCheckAndMutate, func(e *enc) {
		e.binary(1, s.table)
		e.binary(2, rm.key)
		e.binary(3, family)
		e.binary(4, qualifier(check.Column))
		e.i32(5, compareEqual)
		// For absence, an empty value: HBase's checkAndMutate takes an
		// empty expected value as "no cell, or an empty one", and no cell
		// of the store is empty (M1). (Sending no value, as the IDL offers,
		// fails in the 2.6 gateway, which passes it on as null.)
		var want []byte
		if !check.Absent() {
			want = encodeValue(store.KindPut, false, check.Value)
		}
		e.binary(6, want)
		e.structure(7, rmu.write)
	}, res)
	if err != nil {
		return false, err
	}
	if applied {
		s.metrics.cellsIn.Add(float64(len(rm.idx)))
	}
	return applied, nil
}

// Increment implements store.Store with one increment call (store.S8) on
// the counter's own qualifier (M6), asking for the result. Never repeated
// on a broken connection: a repeat would count twice.
func (s *Store) Increment(ctx context.Context, table string, row, column []byte, delta int64) (int64, error) {
	what := fmt.Sprintf("incrementing a counter of %q", table)
	if err := s.check(ctx, what); err != nil {
		return 0, err
	}
	if err := store.CheckTable(table); err != nil {
		return 0, fmt.Errorf("hbase: %s: %w", what, err)
	}
	if len(row) == 0 {
		return 0, fmt.Errorf("hbase: %s: %w: empty row key", what, store.ErrInvalidArgument)
	}
	key := rowKey(tablePrefix(table), row)
	if len(key) > maxRowKey {
		return 0, fmt.Errorf("hbase: %s: %w: row key of %d bytes with the table prefix, HBase takes at most %d",
			what, store.ErrInvalidArgument, len(key), maxRowKey)
	}
	q := counterQualifier(column)
	if delta == 0 {
		return s.readCounter(ctx, what, key, q)
	}
	in := tIncrement{row: key, columns: []tColumnIncrement{{family: family, qualifier: q, amount: delta}}}
	var r tResult
	res := &callResult{success: expect(thrift.STRUCT, func(ctx context.Context, p thrift.TProtocol) error {
		r = tResult{}
		return r.read(ctx, p)
	})}
	if err := s.call(ctx, what, methodIncrement, func(e *enc) {
		e.binary(1, s.table)
		e.structure(2, in.write)
	}, res); err != nil {
		return 0, err
	}
	n, ts, ok, err := counterOf(what, &r, q)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%w: %s: the reply holds no counter", ErrServer, what)
	}
	// HBase's increment writes a new version at the server's clock and the
	// family keeps every version (M2): remove the older ones, best effort
	// (a failure leaves them for the next increment to remove).
	del := tDelete{row: key, deleteType: deleteColumns, columns: []tColumn{{
		family: family, qualifier: q, hasQualifier: true, timestamp: ts - 1, hasTimestamp: true,
	}}}
	if err := s.call(ctx, what, "deleteSingle", func(e *enc) {
		e.binary(1, s.table)
		e.structure(2, del.write)
	}, nil); err != nil {
		s.log.Debug("removing the older versions of a counter", "err", err)
	}
	return n, nil
}

// readCounter reads a counter's newest version with one get (an increment
// of 0 would write a version).
func (s *Store) readCounter(ctx context.Context, what string, key, q []byte) (int64, error) {
	g := tGet{row: key, columns: []tColumn{{family: family, qualifier: q, hasQualifier: true}},
		timeRange: tTimeRange{min: 0, max: math.MaxInt64}, maxVersions: 1}
	var r tResult
	res := &callResult{success: expect(thrift.STRUCT, func(ctx context.Context, p thrift.TProtocol) error {
		r = tResult{}
		return r.read(ctx, p)
	})}
	if err := s.call(ctx, what, "get", func(e *enc) {
		e.binary(1, s.table)
		e.structure(2, g.write)
	}, res); err != nil {
		return 0, err
	}
	n, _, _, err := counterOf(what, &r, q)
	return n, err
}

// counterOf finds the counter of qualifier q in r: its value, its HBase
// timestamp, and whether it is there.
func counterOf(what string, r *tResult, q []byte) (n, ts int64, ok bool, err error) {
	for i := range r.cells {
		c := &r.cells[i]
		if !bytes.Equal(c.qualifier, q) {
			continue
		}
		if len(c.value) != 8 {
			return 0, 0, false, fmt.Errorf("%w: %s: the counter holds %d bytes, not 8", ErrServer, what, len(c.value))
		}
		return int64(binary.BigEndian.Uint64(c.value)), c.timestamp, true, nil
	}
	return 0, 0, false, nil
}

// MaxWriteDelay implements store.LateWriter: Options.MaxWriteDelay.
func (s *Store) MaxWriteDelay() time.Duration { return s.opts.MaxWriteDelay }
