package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/snapstore/snapstore/snapshot"
)

// typeCase is one source column and value, and what arrow-go's readers
// must give back: the Arrow type and the value as the array's ValueStr.
type typeCase struct {
	col      snapshot.Column
	val      snapshot.Value
	wantType string
	want     string
}

func text(k snapshot.Kind, s string) snapshot.Value {
	return snapshot.Value{Kind: k, Bytes: []byte(s)}
}

var typeCases = []typeCase{
	{snapshot.Column{Kind: snapshot.KindInt, SourceType: "bigint"}, snapshot.Value{Kind: snapshot.KindInt, Int: -9223372036854775808}, "int64", "-9223372036854775808"},
	{snapshot.Column{Kind: snapshot.KindUint, SourceType: "bigint(20) unsigned"}, snapshot.Value{Kind: snapshot.KindUint, Uint: 18446744073709551615}, "uint64", "18446744073709551615"},
	{snapshot.Column{Kind: snapshot.KindFloat, SourceType: "double"}, snapshot.Value{Kind: snapshot.KindFloat, Float: 0.30000000000000004}, "float64", "0.30000000000000004"},
	{snapshot.Column{Kind: snapshot.KindDecimal, SourceType: "decimal(5,2)"}, text(snapshot.KindDecimal, "-12.50"), "decimal(5, 2)", "-12.5"},
	{snapshot.Column{Kind: snapshot.KindDecimal, SourceType: "decimal(65,30)"}, text(snapshot.KindDecimal, "12345678901234567890123456789012345.123456789012345678901234567890"), "decimal256(65, 30)", "12345678901234567890123456789012345.12345678901234567890123456789"},
	{snapshot.Column{Kind: snapshot.KindDecimal, SourceType: "numeric"}, text(snapshot.KindDecimal, "1.2345678901234567890123"), "utf8", "1.2345678901234567890123"},
	{snapshot.Column{Kind: snapshot.KindDecimal, SourceType: "numeric(10,2)"}, text(snapshot.KindDecimal, "NaN"), "utf8", "NaN"},
	{snapshot.Column{Kind: snapshot.KindString, SourceType: "varchar(20)"}, text(snapshot.KindString, ""), "utf8", ""},
	{snapshot.Column{Kind: snapshot.KindString, SourceType: "enum('G','NC-17')"}, text(snapshot.KindString, "NC-17"), "dictionary<values=utf8, indices=int32, ordered=false>", "NC-17"},
	{snapshot.Column{Kind: snapshot.KindBytes, SourceType: "blob"}, text(snapshot.KindBytes, "\x00\xff"), "binary", "AP8="},
	{snapshot.Column{Kind: snapshot.KindDate, SourceType: "date"}, text(snapshot.KindDate, "2026-11-29"), "date32", "2026-11-29"},
	{snapshot.Column{Kind: snapshot.KindDate, SourceType: "date"}, text(snapshot.KindDate, "0000-00-00"), "utf8", "0000-00-00"},
	{snapshot.Column{Kind: snapshot.KindDateTime, SourceType: "datetime(6)"}, text(snapshot.KindDateTime, "2026-11-29 21:07:43.123456"), "timestamp[us]", "2026-11-29T21:07:43.123456"},
	{snapshot.Column{Kind: snapshot.KindDateTime, SourceType: "timestamp(3)"}, text(snapshot.KindDateTime, "2026-06-01 07:00:00.250"), "timestamp[us, tz=UTC]", "2026-06-01T07:00:00.25Z"},
	{snapshot.Column{Kind: snapshot.KindDateTime, SourceType: "timestamp with time zone"}, text(snapshot.KindDateTime, "infinity"), "utf8", "infinity"},
	{snapshot.Column{Kind: snapshot.KindTime, SourceType: "time"}, text(snapshot.KindTime, "-838:59:59"), "duration[us]", "-3020399000000us"},
	{snapshot.Column{Kind: snapshot.KindJSON, SourceType: "json"}, text(snapshot.KindJSON, `{"a": 1.10}`), "extension<arrow.json>", `{"a": 1.10}`},
	{snapshot.Column{Kind: snapshot.KindInt, SourceType: "int"}, snapshot.Value{}, "int64", "(null)"},
	{snapshot.Column{Kind: snapshot.KindNull}, snapshot.Value{}, "null", "(null)"},
	{snapshot.Column{Kind: snapshot.KindDecimal, SourceType: "decimal(10,2)"}, text(snapshot.KindDecimal, "-0.05"), "decimal(10, 2)", "-0.05"},
	{snapshot.Column{Kind: snapshot.KindDecimal, SourceType: "DECIMAL(10,2)"}, text(snapshot.KindDecimal, "1.234"), "utf8", "1.234"},
	{snapshot.Column{Kind: snapshot.KindTime, SourceType: "time(6)"}, text(snapshot.KindTime, "12:00:00.5"), "duration[us]", "43200500000us"},
}

// typeCaseTable is a one-row table of the type cases, column cN each.
func typeCaseTable(t *testing.T, parquet bool) (*rowsTable, []snapshot.Value, []string) {
	t.Helper()
	var schema snapshot.Schema
	var vals []snapshot.Value
	for i, tc := range typeCases {
		tc.col.Name = "c" + string(rune('a'+i))
		schema.Columns = append(schema.Columns, tc.col)
		vals = append(vals, tc.val)
	}
	schema.Key = []string{"ca"}
	tab := newRowsTable(schema, nil)
	if parquet {
		forParquet(tab.cols)
	}
	names := SelectedColumns(nil, schema)
	doubt := doubtful(tab.cols)
	checkFits(tab.cols, doubt, columnPositions(tab.cols, names), vals)
	return tab, vals, names
}

// fillOne writes the one row of the type cases.
func fillOne(tab *rowsTable, vals []snapshot.Value) func(*arrowBatches) error {
	return func(a *arrowBatches) error {
		for i, ac := range tab.cols {
			ac.appendArrow(a.rb.Field(i), vals[i])
		}
		if err := a.endRow(); err != nil {
			return err
		}
		return a.flush()
	}
}

func checkTypeCases(t *testing.T, rec arrow.RecordBatch, parquet bool) {
	t.Helper()
	if rec.NumRows() != 1 {
		t.Fatalf("%d rows, want 1", rec.NumRows())
	}
	for i, tc := range typeCases {
		col := rec.Column(i)
		typ := col.DataType().String()
		if ext, ok := col.DataType().(arrow.ExtensionType); ok {
			typ = "extension<" + ext.ExtensionName() + ">"
		}
		want, wantType := tc.want, tc.wantType
		if parquet && wantType == "duration[us]" {
			// Parquet has no duration: a time of day, or text outside a day
			want, wantType = string(tc.val.Bytes), "utf8"
			if d, _ := parseDuration(tc.val.Bytes); d >= 0 && d < 24*3600*1_000_000 {
				want, wantType = arrow.Time64(d).ToTime(arrow.Microsecond).Format("15:04:05.000000"), "time64[us]"
			}
		}
		if parquet && wantType == "extension<arrow.json>" {
			wantType = "utf8"
		}
		if typ != wantType {
			t.Errorf("%s %q: Arrow type %s, want %s", tc.col.SourceType, tc.val.Bytes, typ, wantType)
		}
		got := col.ValueStr(0)
		if d, ok := col.(*array.Dictionary); ok {
			got = d.Dictionary().ValueStr(d.GetValueIndex(0))
		}
		if got != want {
			t.Errorf("%s %q: value %q, want %q", tc.col.SourceType, tc.val.Bytes, got, want)
		}
		src, _ := rec.Schema().Field(i).Metadata.GetValue(arrowMetaSourceType)
		if src != tc.col.SourceType {
			t.Errorf("field %d: source type %q, want %q", i, src, tc.col.SourceType)
		}
	}
}

// TestArrowTypes_IPC: every type case through an IPC stream, read back by
// arrow-go's own reader.
func TestArrowTypes_IPC(t *testing.T) {
	tab, vals, _ := typeCaseTable(t, false)
	info := snapshot.VersionInfo{Dataset: "types", Version: 7, Schema: snapshot.Schema{Key: []string{"ca"}}}
	schema := tab.schema(info, "")
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	a := newArrowBatches(schema, w.Write)
	if err := fillOne(tab, vals)(a); err != nil {
		t.Fatal(err)
	}
	a.release()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	md := r.Schema().Metadata()
	for k, want := range map[string]string{arrowMetaDataset: "types", arrowMetaVersion: "7", arrowMetaKey: `["ca"]`} {
		if got, _ := md.GetValue(k); got != want {
			t.Errorf("schema metadata %s = %q, want %q", k, got, want)
		}
	}
	if md.FindKey(arrowMetaTable) >= 0 {
		t.Errorf("schema metadata of a dataset of one table has %s", arrowMetaTable)
	}
	if !r.Next() {
		t.Fatalf("no record: %v", r.Err())
	}
	checkTypeCases(t, r.RecordBatch(), false)
}

// TestArrowTypes_Parquet: every type case through a Parquet file, read
// back by arrow-go's Parquet reader with the stored Arrow schema.
func TestArrowTypes_Parquet(t *testing.T) {
	tab, vals, _ := typeCaseTable(t, true)
	info := snapshot.VersionInfo{Dataset: "types", Version: 7, Schema: snapshot.Schema{Key: []string{"ca"}}}
	schema := tab.schema(info, "")
	for _, codec := range []compress.Compression{compress.Codecs.Zstd, compress.Codecs.Snappy} {
		var buf bytes.Buffer
		if err := writeParquetFile(&buf, schema, codec, nil, fillOne(tab, vals)); err != nil {
			t.Fatal(err)
		}
		pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		rg := pf.MetaData().RowGroup(0)
		for i := range schema.NumFields() {
			cc, err := rg.ColumnChunk(i)
			if err != nil {
				t.Fatal(err)
			}
			if cc.Compression() != codec {
				t.Errorf("column %d compressed %v, want %v", i, cc.Compression(), codec)
			}
			if ok, _ := cc.StatsSet(); !ok && schema.Field(i).Type.ID() != arrow.NULL {
				t.Errorf("column %d has no statistics", i)
			}
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rec := array.NewTableReader(tbl, -1)
		if !rec.Next() {
			t.Fatal("no record")
		}
		checkTypeCases(t, rec.RecordBatch(), true)
		if got := pf.MetaData().KeyValueMetadata().FindValue(arrowMetaDataset); got == nil || *got != "types" {
			t.Errorf("file metadata dataset %v, want types", got)
		}
		rec.Release()
		tbl.Release()
	}
}

// TestArrowScan: a scan as an Arrow stream and as Parquet holds the rows
// of its JSON read, NULL included, with the key range and limit applied;
// bad formats are refused before the first byte.
func TestArrowScan(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v := f.run("products")
	r := f.must(200, "GET", "/v1/datasets/products/rows?format=arrow&start=2&limit=6", "")
	if ct := r.header.Get("Content-Type"); ct != mediaArrowStream {
		t.Fatalf("Content-Type %q", ct)
	}
	rd, err := ipc.NewReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	var prices, stocks []string
	for rd.Next() {
		rec := rd.RecordBatch()
		for i := range int(rec.NumRows()) {
			ids = append(ids, rec.Column(0).(*array.Int64).Value(i))
			prices = append(prices, rec.Column(2).ValueStr(i))
			stocks = append(stocks, rec.Column(3).ValueStr(i))
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if got := rd.Schema().Field(2).Type.String(); got != "decimal(8, 2)" {
		t.Errorf("price is %s, want decimal(8, 2)", got)
	}
	if want := "[2 3 4 5 6 7]"; strings.Trim(jsonOf(ids), "") != "[2,3,4,5,6,7]" {
		t.Errorf("ids %v, want %s", ids, want)
	}
	if prices[0] != "8.9" || stocks[5] != "(null)" {
		t.Errorf("prices %v stocks %v", prices, stocks)
	}
	rd.Release()

	r = f.must(200, "GET", "/v1/datasets/products/rows?format=parquet&compression=snappy", "")
	if ct := r.header.Get("Content-Type"); ct != mediaParquet {
		t.Fatalf("Content-Type %q", ct)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if n := pf.NumRows(); n != 8 {
		t.Errorf("Parquet file has %d rows, want 8", n)
	}
	if got := pf.MetaData().KeyValueMetadata().FindValue(arrowMetaVersion); got == nil || *got != jsonOf(v) {
		t.Errorf("Parquet version metadata %v, want %d", got, v)
	}
	r = f.must(200, "GET", "/v1/datasets/products/rows", "", "Accept", mediaParquet)
	if ct := r.header.Get("Content-Type"); ct != mediaParquet {
		t.Fatalf("Accept parquet: Content-Type %q", ct)
	}

	f.wantProblem(400, "bad_format", "format", "GET", "/v1/datasets/products/rows?format=xlsx", "")
	f.wantProblem(400, "bad_request", "compression", "GET", "/v1/datasets/products/rows?format=parquet&compression=lzma", "")
	f.wantProblem(406, "format_not_offered", "format", "GET", "/v1/datasets/products/diff?format=csv", "")
}

// TestArrowDiff: a diff as Arrow carries the change kind, the key, the
// changed columns and both sides.
func TestArrowDiff(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.run("products")
	f.exec(`UPDATE products SET stock = 7 WHERE id = 1`)
	f.exec(`DELETE FROM products WHERE id = 3`)
	f.exec(`INSERT INTO products VALUES (9, 'tray', 12, NULL)`)
	f.run("products")
	for _, format := range []string{"arrow", "parquet"} {
		r := f.must(200, "GET", "/v1/datasets/products/diff?format="+format, "")
		var tbl arrow.Table
		if format == "arrow" {
			rd, err := ipc.NewReader(bytes.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			var recs []arrow.RecordBatch
			for rd.Next() {
				rec := rd.RecordBatch()
				rec.Retain()
				recs = append(recs, rec)
			}
			tbl = array.NewTableFromRecords(rd.Schema(), recs)
		} else {
			pf, err := file.NewParquetReader(bytes.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			if tbl, err = fr.ReadTable(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		tr := array.NewTableReader(tbl, -1)
		for tr.Next() {
			rec := tr.RecordBatch()
			s := rec.Schema()
			col := func(name string) arrow.Array { return rec.Column(s.FieldIndices(name)[0]) }
			for i := range int(rec.NumRows()) {
				op := col("_change").(*array.Dictionary)
				got = append(got, strings.Join([]string{
					op.Dictionary().ValueStr(op.GetValueIndex(i)),
					col("id").ValueStr(i),
					col("_changed").ValueStr(i),
					col("before_stock").ValueStr(i),
					col("after_stock").ValueStr(i),
				}, " "))
			}
		}
		tr.Release()
		want := []string{`update 1 ["stock"] 120 7`, `delete 3 (null) 12 (null)`, `insert 9 (null) (null) (null)`}
		if jsonOf(got) != jsonOf(want) {
			t.Errorf("%s diff:\n%v\nwant\n%v", format, got, want)
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestArrowScan_ClientGoesAway: a client that stops reading an Arrow
// stream midway ends the scan without an error logged, and the server
// goes on answering.
func TestArrowScan_ClientGoesAway(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.exec(`WITH RECURSIVE n(i) AS (SELECT 9 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
		INSERT INTO products SELECT i, 'product ' || i, 1.25, i FROM n`)
	f.run("products")
	resp, err := http.Get(f.ts.URL + "/v1/datasets/products/rows?format=arrow")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The handler has returned once the request is counted.
	deadline := time.Now().Add(30 * time.Second)
	for scansCounted(t, f) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the scan did not end after its client went away")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if logs := f.logs.String(); strings.Contains(logs, "stream cut") || strings.Contains(logs, "panic") {
		t.Errorf("a client that went away was logged as an error:\n%s", logs)
	}
	f.must(200, "GET", "/v1/datasets/products/rows?limit=1", "")
}

// scansCounted is the number of finished GET .../rows requests the HTTP
// metrics have counted.
func scansCounted(t *testing.T, f *fixture) uint64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetHistogram() == nil {
				continue
			}
			for _, l := range m.GetLabel() {
				if l.GetValue() == "/v1/datasets/:dataset/rows" || l.GetValue() == "/v1/datasets/{dataset}/rows" {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

// TestArrowTimeParsing: the date and timestamp readers agree with the
// time package on every day of the years around the edges, and refuse
// what no Arrow date holds.
func TestArrowTimeParsing(t *testing.T) {
	for _, year := range []int{1, 2, 1899, 1900, 1969, 1970, 2000, 2024, 2100, 9999} {
		for d := time.Date(year, 1, 1, 23, 59, 59, 999999000, time.UTC); d.Year() == year; d = d.AddDate(0, 0, 1) {
			text := d.Format("2006-01-02 15:04:05.000000")
			ts, ok := parseTimestamp([]byte(text))
			if !ok || int64(ts) != d.UnixMicro() {
				t.Fatalf("%s: %d %v, want %d", text, ts, ok, d.UnixMicro())
			}
			day, ok := parseDate32([]byte(text[:10]))
			if !ok || int64(day) != d.Truncate(24*time.Hour).Unix()/86400 {
				t.Fatalf("%s: day %d %v", text[:10], day, ok)
			}
		}
	}
	for _, bad := range []string{"0000-00-00", "2026-00-00", "2026-02-29", "2026-13-01", "infinity", "0044-03-15 BC", "2026-1-01"} {
		if _, ok := parseDate32([]byte(bad)); ok {
			t.Errorf("date %q read as a date32", bad)
		}
	}
	for _, bad := range []string{"0000-00-00 00:00:00", "2026-06-01 24:00:00", "2026-06-01 07:00:00.", "2026-06-01 07:00:00.1234567", "2026-06-01T07:00:00", "-infinity"} {
		if _, ok := parseTimestamp([]byte(bad)); ok {
			t.Errorf("timestamp %q read as a timestamp", bad)
		}
	}
	if ts, ok := parseTimestamp([]byte("2026-06-01 07:00:00.25")); !ok || int64(ts)%1_000_000 != 250_000 {
		t.Errorf("a 2-digit fraction: %d %v", ts, ok)
	}
}

// TestArrowStream_DictionaryAcrossBatches: an ENUM column over several
// record batches, each with its own dictionary, reads back whole.
func TestArrowStream_DictionaryAcrossBatches(t *testing.T) {
	schema := snapshot.Schema{Columns: []snapshot.Column{{Name: "e", Kind: snapshot.KindString, SourceType: "enum('a','b','c')"}}}
	tab := newRowsTable(schema, nil)
	as := tab.schema(snapshot.VersionInfo{Dataset: "d", Version: 1, Schema: schema}, "")
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(as))
	a := newArrowBatches(as, w.Write)
	const n = 2*arrowBatchRows + 5
	for i := range n {
		v := "a"
		if i >= arrowBatchRows {
			v = []string{"b", "c"}[i%2] // a dictionary the first batch does not have
		}
		tab.cols[0].appendArrow(a.rb.Field(0), text(snapshot.KindString, v))
		if err := a.endRow(); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.flush(); err != nil {
		t.Fatal(err)
	}
	a.release()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	i, batches := 0, 0
	for r.Next() {
		batches++
		d := r.RecordBatch().Column(0).(*array.Dictionary)
		for j := range d.Len() {
			want := "a"
			if i >= arrowBatchRows {
				want = []string{"b", "c"}[i%2]
			}
			if got := d.Dictionary().ValueStr(d.GetValueIndex(j)); got != want {
				t.Fatalf("row %d: %q, want %q", i, got, want)
			}
			i++
		}
	}
	if err := r.Err(); err != nil || i != n || batches != 3 {
		t.Fatalf("%d rows in %d batches, want %d in 3: %v", i, batches, n, err)
	}
}

// TestArrowParquet_LateUnfitValue: a Parquet scan, written without a
// first pass, whose last rows hold a value their column's Arrow type
// cannot hold (a zero date past the first batch, a NaN decimal) serves
// that column as text, with the schema and values of the Arrow stream,
// which learns them by its first pass.
func TestArrowParquet_LateUnfitValue(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	schema := snapshot.Schema{Columns: []snapshot.Column{
		{Name: "id", Kind: snapshot.KindInt, SourceType: "int"},
		{Name: "price", Kind: snapshot.KindDecimal, SourceType: "decimal(10,2)"},
		{Name: "at", Kind: snapshot.KindDateTime, SourceType: "datetime"},
		{Name: "day", Kind: snapshot.KindDate, SourceType: "date"}}, Key: []string{"id"}}
	run, err := f.db.BeginRun(ctx, snapshot.DatasetConfig{Name: "late"}, snapshot.RunOptions{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	const n = arrowBatchRows + 10
	for i := range n {
		price, at := fmt.Sprintf("%d.%02d", i, i%100), "2020-01-02 03:04:05"
		if i == n-1 {
			price, at = "NaN", "0000-00-00 00:00:00"
		}
		vals := []snapshot.Value{{Kind: snapshot.KindInt, Int: int64(i)}, text(snapshot.KindDecimal, price),
			text(snapshot.KindDateTime, at), text(snapshot.KindDate, "2020-01-02")}
		if err := run.Put(ctx, vals); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := run.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"arrow", "parquet"} {
		r := f.must(200, "GET", "/v1/datasets/late/rows?format="+format, "")
		tbl := readArrowTable(t, format, r.body)
		var types []string
		for _, fd := range tbl.Schema().Fields() {
			types = append(types, fd.Type.String())
		}
		if got, want := strings.Join(types, " "), "int64 utf8 utf8 date32"; got != want {
			t.Errorf("%s: types %s, want %s", format, got, want)
		}
		rd := array.NewTableReader(tbl, -1)
		var last []string
		rows := 0
		for rd.Next() {
			rec := rd.RecordBatch()
			rows += int(rec.NumRows())
			last = last[:0]
			for c := range int(rec.NumCols()) {
				last = append(last, rec.Column(c).ValueStr(int(rec.NumRows())-1))
			}
		}
		if got, want := strings.Join(last, " "), fmt.Sprintf("%d NaN 0000-00-00 00:00:00 2020-01-02", n-1); rows != n || got != want {
			t.Errorf("%s: %d rows, last %q, want %d, %q", format, rows, got, n, want)
		}
		rd.Release()
		tbl.Release()
	}
}

// readArrowTable reads an Arrow stream or a Parquet file whole.
func readArrowTable(t *testing.T, format string, body []byte) arrow.Table {
	t.Helper()
	if format == "parquet" {
		pf, err := file.NewParquetReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	rd, err := ipc.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	var recs []arrow.RecordBatch
	for rd.Next() {
		rec := rd.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	tbl := array.NewTableFromRecords(rd.Schema(), recs)
	for _, rec := range recs {
		rec.Release()
	}
	return tbl
}

// TestArrowDecimalParsing: decimals of up to 18 digits (read as int64)
// and past them (read as a big.Int) give the same unscaled integers, and
// texts that are not plain decimals of the column's precision and scale
// are refused.
func TestArrowDecimalParsing(t *testing.T) {
	for _, c := range []struct {
		s         string
		prec, sc  int32
		want      string
		wantSmall bool
	}{
		{"-12.5", 10, 2, "-1250", true}, {"+0.05", 10, 2, "5", true}, {"007", 5, 0, "7", true}, {".5", 3, 1, "5", true},
		{"1.", 3, 1, "10", true}, {"-0", 4, 0, "0", true}, {"999999999999999999", 18, 0, "999999999999999999", true},
		{"9999999999999999999", 19, 0, "9999999999999999999", false}, {"-1.5", 38, 20, "-150000000000000000000", false},
		{"123456789012345678901234567890.12", 76, 2, "12345678901234567890123456789012", false},
	} {
		small, large, ok := parseDecimal([]byte(c.s), c.prec, c.sc)
		got := fmt.Sprint(small)
		if large != nil {
			got = large.String()
		}
		if !ok || got != c.want || (large == nil) != c.wantSmall {
			t.Errorf("%q at (%d,%d): %s %v %v, want %s", c.s, c.prec, c.sc, got, large == nil, ok, c.want)
		}
	}
	for _, bad := range []string{"", "-", ".", "NaN", "Infinity", "1e5", "1.234", "123456", "1.2.3", "--1", "1-2", "12345678901234567890.5"} {
		if _, _, ok := parseDecimal([]byte(bad), 6, 2); ok {
			t.Errorf("%q read as a decimal(6,2)", bad)
		}
	}
}

// TestArrowTextBytes: the kinds whose text an Arrow utf8 column takes as
// their bytes are those whose ValueText is their bytes.
func TestArrowTextBytes(t *testing.T) {
	for k := snapshot.Kind(0); k < 64; k++ {
		v := snapshot.Value{Kind: k, Bytes: []byte("2020-01-02 x"), Int: 7, Uint: 7, Float: 7}
		if textIsBytes(k) && ValueText(v) != string(v.Bytes) {
			t.Errorf("kind %v: ValueText %q, its bytes %q", k, ValueText(v), v.Bytes)
		}
	}
}

// TestArrowProvenFit checks which columns a stream probes given the
// version's value shapes: none that the shapes prove fit, every doubtful
// one of a version without shapes.
func TestArrowProvenFit(t *testing.T) {
	schema := snapshot.Schema{Columns: []snapshot.Column{
		{Name: "id", Kind: snapshot.KindInt},
		{Name: "price", Kind: snapshot.KindDecimal, SourceType: "decimal(5,2)"},
		{Name: "big", Kind: snapshot.KindDecimal, SourceType: "decimal(40,10)"},
		{Name: "day", Kind: snapshot.KindDate, SourceType: "date"},
		{Name: "at", Kind: snapshot.KindDateTime, SourceType: "datetime(6)"},
		{Name: "dur", Kind: snapshot.KindTime, SourceType: "time"},
		{Name: "num", Kind: snapshot.KindDecimal, SourceType: "numeric"},
	}}
	names := func(tab *rowsTable, idx []int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, tab.cols[i].name)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		shapes *snapshot.ValueShapes
		want   []string
	}{
		{"no record", nil, []string{"price", "big", "day", "at", "dur"}},
		{"all fit", &snapshot.ValueShapes{Columns: []snapshot.ColumnShape{
			{Column: "price", IntDigits: 3, FracDigits: 2},
			{Column: "big", IntDigits: 30, FracDigits: 1},
			{Column: "day"}, {Column: "at"}, {Column: "dur"}, {Column: "num", Irregular: true},
		}}, nil},
		{"too wide or irregular", &snapshot.ValueShapes{Columns: []snapshot.ColumnShape{
			{Column: "price", IntDigits: 4, FracDigits: 2},
			{Column: "big", IntDigits: 1, FracDigits: 11},
			{Column: "day", Irregular: true}, {Column: "at"},
		}}, []string{"price", "big", "day", "dur"}},
	} {
		tab := newRowsTable(schema, nil)
		if got := names(tab, unproven(tab.cols, tc.shapes)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: probed %v, want %v", tc.name, got, tc.want)
		}
	}
	// A diff holds the values of two versions: both must prove a column.
	fit := &snapshot.ValueShapes{Columns: []snapshot.ColumnShape{
		{Column: "price", IntDigits: 3, FracDigits: 2}, {Column: "big"}, {Column: "day"}, {Column: "at"}, {Column: "dur"},
	}}
	zero := &snapshot.ValueShapes{Columns: []snapshot.ColumnShape{
		{Column: "price", IntDigits: 3, FracDigits: 2}, {Column: "big"}, {Column: "day", Irregular: true}, {Column: "at"}, {Column: "dur"},
	}}
	tab := newRowsTable(schema, nil)
	if got := names(tab, unproven(tab.cols, fit, fit)); len(got) != 0 {
		t.Errorf("two fitting versions: probed %v", got)
	}
	for _, pair := range [][2]*snapshot.ValueShapes{{fit, zero}, {zero, fit}} {
		if got := names(tab, unproven(tab.cols, pair[0], pair[1])); !slices.Equal(got, []string{"day"}) {
			t.Errorf("one version with a zero date: probed %v, want [day]", got)
		}
	}
	if got := names(tab, unproven(tab.cols, fit, nil)); len(got) != 5 {
		t.Errorf("one version without shapes: probed %v, want every doubtful column", got)
	}
}
