package hbase

// The few structs and calls of HBase's Thrift2 service (THBaseService) that
// the store uses, written by hand from the protocol's field ids in HBase's
// IDL (hbase-thrift, org/apache/hadoop/hbase/thrift2/hbase.thrift). Only
// the fields the store sets or reads are here; unknown fields in replies are
// skipped, as every Thrift reader does. Field ids are given in comments as
// "id: name" so they can be checked against the IDL.

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/thrift/lib/go/thrift"
)

// TDeleteType values (enum TDeleteType).
const (
	deleteColumn  int32 = 0 // DELETE_COLUMN: one exact version
	deleteColumns int32 = 1 // DELETE_COLUMNS: versions <= timestamp
	deleteFamily  int32 = 2 // DELETE_FAMILY: every column <= timestamp
)

// TKeepDeletedCells values.
const keepDeletedFalse int32 = 0

// TBloomFilterType and TDataBlockEncoding values used at table creation.
const (
	bloomRow          int32 = 1 // ROW
	encodingFastDiff  int32 = 4 // FAST_DIFF
	compressionNone   int32 = 2 // NONE
	tDurabilitySync   int32 = 3 // SYNC_WAL
	tDurabilityAsync  int32 = 2 // ASYNC_WAL
	tDurabilityUnset  int32 = 0 // USE_DEFAULT: field not sent
	maxThriftVersions int32 = 1<<31 - 1
)

// enc writes Thrift fields, keeping the first error.
type enc struct {
	ctx context.Context
	p   thrift.TProtocol
	err error
}

func (e *enc) begin(id int16, t thrift.TType) bool {
	if e.err != nil {
		return false
	}
	e.err = e.p.WriteFieldBegin(e.ctx, "", t, id)
	return e.err == nil
}

func (e *enc) end() {
	if e.err == nil {
		e.err = e.p.WriteFieldEnd(e.ctx)
	}
}

func (e *enc) binary(id int16, b []byte) {
	if e.begin(id, thrift.STRING) {
		if b == nil {
			b = []byte{}
		}
		e.err = e.p.WriteBinary(e.ctx, b)
		e.end()
	}
}

func (e *enc) str(id int16, s string) {
	if e.begin(id, thrift.STRING) {
		e.err = e.p.WriteString(e.ctx, s)
		e.end()
	}
}

func (e *enc) i64(id int16, v int64) {
	if e.begin(id, thrift.I64) {
		e.err = e.p.WriteI64(e.ctx, v)
		e.end()
	}
}

func (e *enc) i32(id int16, v int32) {
	if e.begin(id, thrift.I32) {
		e.err = e.p.WriteI32(e.ctx, v)
		e.end()
	}
}

func (e *enc) boolean(id int16, v bool) {
	if e.begin(id, thrift.BOOL) {
		e.err = e.p.WriteBool(e.ctx, v)
		e.end()
	}
}

// structure writes field id as a struct whose fields body writes.
func (e *enc) structure(id int16, body func(*enc)) {
	if e.begin(id, thrift.STRUCT) {
		e.structBody(body)
		e.end()
	}
}

func (e *enc) structBody(body func(*enc)) {
	if e.err != nil {
		return
	}
	if e.err = e.p.WriteStructBegin(e.ctx, ""); e.err != nil {
		return
	}
	body(e)
	if e.err == nil {
		e.err = e.p.WriteFieldStop(e.ctx)
	}
	if e.err == nil {
		e.err = e.p.WriteStructEnd(e.ctx)
	}
}

// list writes field id as a list of n elements of type t, element i written
// by elem.
func (e *enc) list(id int16, t thrift.TType, n int, elem func(e *enc, i int)) {
	if !e.begin(id, thrift.LIST) {
		return
	}
	if e.err = e.p.WriteListBegin(e.ctx, t, n); e.err != nil {
		return
	}
	for i := 0; i < n && e.err == nil; i++ {
		elem(e, i)
	}
	if e.err == nil {
		e.err = e.p.WriteListEnd(e.ctx)
	}
	e.end()
}

// binaryMap writes field id as a map<binary, binary>.
func (e *enc) binaryMap(id int16, m map[string]string) {
	if !e.begin(id, thrift.MAP) {
		return
	}
	if e.err = e.p.WriteMapBegin(e.ctx, thrift.STRING, thrift.STRING, len(m)); e.err != nil {
		return
	}
	for k, v := range m {
		if e.err = e.p.WriteBinary(e.ctx, []byte(k)); e.err != nil {
			return
		}
		if e.err = e.p.WriteBinary(e.ctx, []byte(v)); e.err != nil {
			return
		}
	}
	if e.err == nil {
		e.err = e.p.WriteMapEnd(e.ctx)
	}
	e.end()
}

// readStruct reads a struct, calling field for each field; field returns
// false for a field it does not take, which is then skipped.
func readStruct(ctx context.Context, p thrift.TProtocol, field func(id int16, t thrift.TType) (bool, error)) error {
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return err
	}
	for {
		_, t, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return err
		}
		if t == thrift.STOP {
			break
		}
		ok, err := field(id, t)
		if err != nil {
			return err
		}
		if !ok {
			if err := p.Skip(ctx, t); err != nil {
				return err
			}
		}
		if err := p.ReadFieldEnd(ctx); err != nil {
			return err
		}
	}
	return p.ReadStructEnd(ctx)
}

// readList reads a list header and calls elem for each element.
func readList(ctx context.Context, p thrift.TProtocol, elem func(i int) error) error {
	_, n, err := p.ReadListBegin(ctx)
	if err != nil {
		return err
	}
	for i := range n {
		if err := elem(i); err != nil {
			return err
		}
	}
	return p.ReadListEnd(ctx)
}

// tTimeRange is struct TTimeRange: 1: minStamp, 2: maxStamp, [min, max).
type tTimeRange struct{ min, max int64 }

func (r tTimeRange) write(e *enc) {
	e.i64(1, r.min)
	e.i64(2, r.max)
}

// tColumn is struct TColumn: 1: family, 2: qualifier (optional),
// 3: timestamp (optional).
type tColumn struct {
	family, qualifier []byte
	hasQualifier      bool
	timestamp         int64
	hasTimestamp      bool
}

func (c *tColumn) write(e *enc) {
	e.binary(1, c.family)
	if c.hasQualifier {
		e.binary(2, c.qualifier)
	}
	if c.hasTimestamp {
		e.i64(3, c.timestamp)
	}
}

// tColumnValue is struct TColumnValue: 1: family, 2: qualifier, 3: value,
// 4: timestamp (optional); 5: tags and 6: type are not used.
type tColumnValue struct {
	family, qualifier, value []byte
	timestamp                int64
}

func (c *tColumnValue) write(e *enc) {
	e.binary(1, c.family)
	e.binary(2, c.qualifier)
	e.binary(3, c.value)
	e.i64(4, c.timestamp)
}

func (c *tColumnValue) read(ctx context.Context, p thrift.TProtocol) error {
	return readStruct(ctx, p, func(id int16, t thrift.TType) (bool, error) {
		var err error
		switch {
		case id == 1 && t == thrift.STRING:
			c.family, err = p.ReadBinary(ctx)
		case id == 2 && t == thrift.STRING:
			c.qualifier, err = p.ReadBinary(ctx)
		case id == 3 && t == thrift.STRING:
			c.value, err = p.ReadBinary(ctx)
		case id == 4 && t == thrift.I64:
			c.timestamp, err = p.ReadI64(ctx)
		default:
			return false, nil
		}
		return true, err
	})
}

// tResult is struct TResult: 1: row (optional), 2: columnValues.
type tResult struct {
	row   []byte
	cells []tColumnValue
}

func (r *tResult) read(ctx context.Context, p thrift.TProtocol) error {
	return readStruct(ctx, p, func(id int16, t thrift.TType) (bool, error) {
		switch {
		case id == 1 && t == thrift.STRING:
			var err error
			r.row, err = p.ReadBinary(ctx)
			return true, err
		case id == 2 && t == thrift.LIST:
			return true, readList(ctx, p, func(int) error {
				var c tColumnValue
				if err := c.read(ctx, p); err != nil {
					return err
				}
				r.cells = append(r.cells, c)
				return nil
			})
		}
		return false, nil
	})
}

func readResults(ctx context.Context, p thrift.TProtocol, out *[]tResult) error {
	return readList(ctx, p, func(int) error {
		var r tResult
		if err := r.read(ctx, p); err != nil {
			return err
		}
		*out = append(*out, r)
		return nil
	})
}

// tGet is struct TGet: 1: row, 2: columns, 4: timeRange, 5: maxVersions.
type tGet struct {
	row         []byte
	columns     []tColumn
	timeRange   tTimeRange
	maxVersions int32
}

func (g *tGet) write(e *enc) {
	e.binary(1, g.row)
	if len(g.columns) > 0 {
		e.list(2, thrift.STRUCT, len(g.columns), func(e *enc, i int) { e.structBody(g.columns[i].write) })
	}
	e.structure(4, g.timeRange.write)
	e.i32(5, g.maxVersions)
}

// tPut is struct TPut: 1: row, 2: columnValues, 6: durability (optional).
type tPut struct {
	row        []byte
	cells      []tColumnValue
	durability int32
}

func (u *tPut) write(e *enc) {
	e.binary(1, u.row)
	e.list(2, thrift.STRUCT, len(u.cells), func(e *enc, i int) { e.structBody(u.cells[i].write) })
	if u.durability != tDurabilityUnset {
		e.i32(6, u.durability)
	}
}

// tDelete is struct TDelete: 1: row, 2: columns, 4: deleteType,
// 7: durability (optional).
type tDelete struct {
	row        []byte
	columns    []tColumn
	deleteType int32
	durability int32
}

func (d *tDelete) write(e *enc) {
	e.binary(1, d.row)
	e.list(2, thrift.STRUCT, len(d.columns), func(e *enc, i int) { e.structBody(d.columns[i].write) })
	e.i32(4, d.deleteType)
	if d.durability != tDurabilityUnset {
		e.i32(7, d.durability)
	}
}

// tScan is struct TScan: 1: startRow, 2: stopRow, 3: columns, 4: caching,
// 5: maxVersions, 6: timeRange, 7: filterString.
type tScan struct {
	start, stop []byte
	columns     []tColumn
	caching     int32
	maxVersions int32
	timeRange   tTimeRange
	filter      string
}

func (s *tScan) write(e *enc) {
	if len(s.start) > 0 {
		e.binary(1, s.start)
	}
	if len(s.stop) > 0 {
		e.binary(2, s.stop)
	}
	if len(s.columns) > 0 {
		e.list(3, thrift.STRUCT, len(s.columns), func(e *enc, i int) { e.structBody(s.columns[i].write) })
	}
	if s.caching > 0 {
		e.i32(4, s.caching)
	}
	e.i32(5, s.maxVersions)
	e.structure(6, s.timeRange.write)
	if s.filter != "" {
		e.binary(7, []byte(s.filter))
	}
}

// tMutation is union TMutation: 1: put, 2: deleteSingle.
type tMutation struct {
	put *tPut
	del *tDelete
}

func (m *tMutation) write(e *enc) {
	if m.put != nil {
		e.structure(1, m.put.write)
	} else {
		e.structure(2, m.del.write)
	}
}

// tRowMutations is struct TRowMutations: 1: row, 2: mutations.
type tRowMutations struct {
	row       []byte
	mutations []tMutation
}

func (r *tRowMutations) write(e *enc) {
	e.binary(1, r.row)
	e.list(2, thrift.STRUCT, len(r.mutations), func(e *enc, i int) { e.structBody(r.mutations[i].write) })
}

// TCompareOperator values (enum TCompareOperator).
const compareEqual int32 = 2 // EQUAL

// tColumnIncrement is struct TColumnIncrement: 1: family, 2: qualifier,
// 3: amount.
type tColumnIncrement struct {
	family, qualifier []byte
	amount            int64
}

func (c *tColumnIncrement) write(e *enc) {
	e.binary(1, c.family)
	e.binary(2, c.qualifier)
	e.i64(3, c.amount)
}

// tIncrement is struct TIncrement: 1: row, 2: columns,
// 7: returnResults.
type tIncrement struct {
	row     []byte
	columns []tColumnIncrement
}

func (in *tIncrement) write(e *enc) {
	e.binary(1, in.row)
	e.list(2, thrift.STRUCT, len(in.columns), func(e *enc, i int) { e.structBody(in.columns[i].write) })
	e.boolean(7, true)
}

// tColumnFamilyDescriptor is struct TColumnFamilyDescriptor: 1: name,
// 2: attributes, 5: bloomnFilterType, 6: compressionType,
// 8: dataBlockEncoding, 9: keepDeletedCells, 10: maxVersions,
// 11: minVersions, 13: timeToLive.
type tColumnFamilyDescriptor struct {
	name             []byte
	attributes       map[string]string
	bloomFilter      int32
	compression      int32
	dataEncoding     int32
	keepDeletedCells int32
	maxVersions      int32
	minVersions      int32
	timeToLive       int32
	hasTimeToLive    bool
}

func (f *tColumnFamilyDescriptor) write(e *enc) {
	e.binary(1, f.name)
	if len(f.attributes) > 0 {
		e.binaryMap(2, f.attributes)
	}
	e.i32(5, f.bloomFilter)
	e.i32(6, f.compression)
	e.i32(8, f.dataEncoding)
	e.i32(9, f.keepDeletedCells)
	e.i32(10, f.maxVersions)
	e.i32(11, f.minVersions)
	e.i32(13, f.timeToLive)
}

func (f *tColumnFamilyDescriptor) read(ctx context.Context, p thrift.TProtocol) error {
	return readStruct(ctx, p, func(id int16, t thrift.TType) (bool, error) {
		var err error
		switch {
		case id == 1 && t == thrift.STRING:
			f.name, err = p.ReadBinary(ctx)
		case id == 2 && t == thrift.MAP:
			f.attributes = map[string]string{}
			var n int
			if _, _, n, err = p.ReadMapBegin(ctx); err != nil {
				return true, err
			}
			for range n {
				k, err := p.ReadBinary(ctx)
				if err != nil {
					return true, err
				}
				v, err := p.ReadBinary(ctx)
				if err != nil {
					return true, err
				}
				f.attributes[string(k)] = string(v)
			}
			err = p.ReadMapEnd(ctx)
		case id == 9 && t == thrift.I32:
			f.keepDeletedCells, err = p.ReadI32(ctx)
		case id == 10 && t == thrift.I32:
			f.maxVersions, err = p.ReadI32(ctx)
		case id == 11 && t == thrift.I32:
			f.minVersions, err = p.ReadI32(ctx)
		case id == 13 && t == thrift.I32:
			f.timeToLive, err = p.ReadI32(ctx)
			f.hasTimeToLive = true
		default:
			return false, nil
		}
		return true, err
	})
}

// tTableName is struct TTableName: 1: ns, 2: qualifier.
type tTableName struct{ ns, qualifier string }

func (n tTableName) write(e *enc) {
	e.binary(1, []byte(n.ns))
	e.binary(2, []byte(n.qualifier))
}

func (n tTableName) String() string { return n.ns + ":" + n.qualifier }

// tTableDescriptor is struct TTableDescriptor: 1: tableName, 2: columns.
type tTableDescriptor struct {
	name     tTableName
	families []tColumnFamilyDescriptor
}

func (d *tTableDescriptor) write(e *enc) {
	e.structure(1, d.name.write)
	e.list(2, thrift.STRUCT, len(d.families), func(e *enc, i int) { e.structBody(d.families[i].write) })
}

func (d *tTableDescriptor) read(ctx context.Context, p thrift.TProtocol) error {
	return readStruct(ctx, p, func(id int16, t thrift.TType) (bool, error) {
		if id != 2 || t != thrift.LIST {
			return false, nil
		}
		return true, readList(ctx, p, func(int) error {
			var f tColumnFamilyDescriptor
			if err := f.read(ctx, p); err != nil {
				return err
			}
			d.families = append(d.families, f)
			return nil
		})
	})
}

// tIOError is exception TIOError: 1: message, 2: canRetry. HBase's Thrift2
// handler sets canRetry unless the server-side exception was a
// DoNotRetryIOException.
type tIOError struct {
	message  string
	canRetry bool
}

func (e *tIOError) Error() string { return e.message }

func (e *tIOError) read(ctx context.Context, p thrift.TProtocol) error {
	return readStruct(ctx, p, func(id int16, t thrift.TType) (bool, error) {
		var err error
		switch {
		case id == 1 && t == thrift.STRING:
			e.message, err = p.ReadString(ctx)
		case id == 2 && t == thrift.BOOL:
			e.canRetry, err = p.ReadBool(ctx)
		default:
			return false, nil
		}
		return true, err
	})
}

// tIllegalArgument is exception TIllegalArgument: 1: message.
type tIllegalArgument struct{ message string }

func (e *tIllegalArgument) Error() string { return e.message }

func (e *tIllegalArgument) read(ctx context.Context, p thrift.TProtocol) error {
	return readStruct(ctx, p, func(id int16, t thrift.TType) (bool, error) {
		if id != 1 || t != thrift.STRING {
			return false, nil
		}
		var err error
		e.message, err = p.ReadString(ctx)
		return true, err
	})
}

// callArgs is the argument struct of a service call: its fields are the
// method's parameters, by their ids.
type callArgs func(e *enc)

// Write implements thrift.TStruct.
func (a callArgs) Write(ctx context.Context, p thrift.TProtocol) error {
	e := &enc{ctx: ctx, p: p}
	e.structBody(a)
	return e.err
}

// Read implements thrift.TStruct; arguments are never read by a client.
func (a callArgs) Read(context.Context, thrift.TProtocol) error {
	return errors.New("hbase: reading call arguments is not supported")
}

// callResult is the result struct of a service call: field 0 is the return
// value (read by success, nil for void), field 1 the TIOError, field 2 the
// TIllegalArgument of the methods that declare it.
type callResult struct {
	success func(ctx context.Context, p thrift.TProtocol, t thrift.TType) error
	io      *tIOError
	ia      *tIllegalArgument
}

// Write implements thrift.TStruct; results are never written by a client.
func (r *callResult) Write(context.Context, thrift.TProtocol) error {
	return errors.New("hbase: writing call results is not supported")
}

// Read implements thrift.TStruct.
func (r *callResult) Read(ctx context.Context, p thrift.TProtocol) error {
	return readStruct(ctx, p, func(id int16, t thrift.TType) (bool, error) {
		switch {
		case id == 0 && r.success != nil:
			return true, r.success(ctx, p, t)
		case id == 1 && t == thrift.STRUCT:
			r.io = &tIOError{}
			return true, r.io.read(ctx, p)
		case id == 2 && t == thrift.STRUCT:
			r.ia = &tIllegalArgument{}
			return true, r.ia.read(ctx, p)
		}
		return false, nil
	})
}

// exception returns the exception the server declared in r, if any.
func (r *callResult) exception() error {
	switch {
	case r.io != nil:
		return r.io
	case r.ia != nil:
		return r.ia
	}
	return nil
}

// expect returns a success reader that checks the type of field 0.
func expect(want thrift.TType, read func(ctx context.Context, p thrift.TProtocol) error) func(context.Context, thrift.TProtocol, thrift.TType) error {
	return func(ctx context.Context, p thrift.TProtocol, t thrift.TType) error {
		if t != want {
			return fmt.Errorf("hbase: reply field 0 has type %v, want %v", t, want)
		}
		return read(ctx, p)
	}
}
