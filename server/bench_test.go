package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/snapstore/snapstore/snapshot"
)

// BenchmarkHandler measures the handler without the network: one row read
// and one JSON page of 8 rows, with request validation against the OpenAPI
// document (validate=on, as served) and without it (validate=off, the
// baseline), so the validation's share is visible.
func BenchmarkHandler(b *testing.B) {
	f := newFixture(b, fixtureOpts{})
	f.run("products")
	for _, path := range []string{"/v1/datasets/products/rows/2", "/v1/datasets/products/rows?limit=8"} {
		for _, validate := range []bool{true, false} {
			name := "path=" + map[bool]string{true: "row", false: "page"}[path == "/v1/datasets/products/rows/2"] + "/validate=" + map[bool]string{true: "on", false: "off"}[validate]
			b.Run(name, func(b *testing.B) {
				f.srv.skipValidation = !validate
				defer func() { f.srv.skipValidation = false }()
				h := f.srv.Handler()
				b.ReportAllocs()
				for b.Loop() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
					if rec.Code != 200 {
						b.Fatalf("%d %s", rec.Code, rec.Body)
					}
				}
			})
		}
	}
}

// BenchmarkRowsNDJSON measures the NDJSON stream of 1,000-row pages of a
// 20,000-row dataset of ten mixed columns, without the network (rows/s).
func BenchmarkRowsNDJSON(b *testing.B) {
	f := newFixture(b, fixtureOpts{})
	const rows = 20_000
	benchDataset(b, f, rows)
	h := f.srv.Handler()
	b.ReportAllocs()
	i := 0
	start := time.Now()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1/v1/datasets/wide/rows?limit=1000&start=%d", (i*7919)%(rows-1000)), nil)
		req.Header.Set("Accept", "application/x-ndjson")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
		i++
	}
	b.ReportMetric(float64(1000*b.N)/time.Since(start).Seconds(), "rows/s")
}

// benchDataset commits a dataset "wide" of n rows of ten mixed columns.
func benchDataset(b *testing.B, f *fixture, n int) {
	b.Helper()
	ctx := context.Background()
	schema := snapshot.Schema{Columns: []snapshot.Column{
		{Name: "id", Kind: snapshot.KindInt, SourceType: "int"}, {Name: "code", Kind: snapshot.KindString}, {Name: "name", Kind: snapshot.KindString},
		{Name: "qty", Kind: snapshot.KindInt}, {Name: "price", Kind: snapshot.KindDecimal, SourceType: "decimal(10,2)"}, {Name: "ratio", Kind: snapshot.KindFloat},
		{Name: "created", Kind: snapshot.KindDateTime, SourceType: "datetime"}, {Name: "status", Kind: snapshot.KindString}, {Name: "note", Kind: snapshot.KindString},
		{Name: "flags", Kind: snapshot.KindUint}}, Key: []string{"id"}}
	r, err := f.db.BeginRun(ctx, snapshot.DatasetConfig{Name: "wide"}, snapshot.RunOptions{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		s := func(f string, a ...any) snapshot.Value {
			return snapshot.Value{Kind: snapshot.KindString, Bytes: fmt.Appendf(nil, f, a...)}
		}
		vals := []snapshot.Value{{Kind: snapshot.KindInt, Int: int64(i)}, s("%012X", i*7919), s("customer-%d-%040x", i, i*104729),
			{Kind: snapshot.KindInt, Int: int64(i * 7919 % 100000)}, {Kind: snapshot.KindDecimal, Bytes: fmt.Appendf(nil, "%d.%02d", i%100000, i%100)},
			{Kind: snapshot.KindFloat, Float: float64(i%1000) / 7}, {Kind: snapshot.KindDateTime, Bytes: []byte("2020-01-02 03:04:05")},
			s("active"), s("note %064x %d", i*31, i%977), {Kind: snapshot.KindUint, Uint: uint64(i % 65536)}}
		if err := r.Put(ctx, vals); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := r.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRowsFormats measures a whole scan of a 200,000-row dataset of
// ten mixed columns over loopback HTTP, by a client that decodes what it
// receives: NDJSON lines unmarshalled, the Arrow stream read by arrow-go's
// IPC reader, the Parquet file by its Parquet reader (rows/s, and the
// process's CPU time per row).
func BenchmarkRowsFormats(b *testing.B) {
	f := newFixture(b, fixtureOpts{})
	const rows = 200_000
	benchDataset(b, f, rows)
	for _, format := range []string{"ndjson", "arrow", "parquet"} {
		b.Run("format="+format, func(b *testing.B) {
			start, cpu := time.Now(), processCPU(b)
			for b.Loop() {
				resp, err := http.Get(f.ts.URL + "/v1/datasets/wide/rows?format=" + format)
				if err != nil {
					b.Fatal(err)
				}
				n, err := decodeRows(format, resp.Body)
				resp.Body.Close()
				if err != nil || n != rows {
					b.Fatalf("%s: %d rows, %v", format, n, err)
				}
			}
			b.ReportMetric(float64(rows*b.N)/time.Since(start).Seconds(), "rows/s")
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(rows*b.N), "cpu-ns/row")
		})
	}
}

// processCPU returns the CPU time the process used so far, user and
// system: unlike rows/s, cpu-ns/row (server and client together) moves
// little with the load of a shared machine.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// decodeRows decodes a scan's body of format and counts its rows.
func decodeRows(format string, body io.Reader) (int, error) {
	n := 0
	switch format {
	case "ndjson":
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var row map[string]any
			if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
				return n, err
			}
			n++
		}
		return n, sc.Err()
	case "arrow":
		rd, err := ipc.NewReader(body)
		if err != nil {
			return 0, err
		}
		defer rd.Release()
		for rd.Next() {
			n += int(rd.RecordBatch().NumRows())
		}
		return n, rd.Err()
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return 0, err
	}
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 16384}, memory.DefaultAllocator)
	if err != nil {
		return 0, err
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return 0, err
	}
	defer tbl.Release()
	return int(tbl.NumRows()), nil
}

var exportRSSRows = flag.Int("exportrss.rows", 200_000, "rows of the dataset BenchmarkExportPeakRSS exports")

// BenchmarkExportPeakRSS measures the process's peak RSS (VmHWM of
// /proc/self/status) while a whole scan of a dataset of ten mixed columns
// (-exportrss.rows rows) is exported as each format over loopback HTTP to
// a client that discards it. The peak is reset (clear_refs) after the
// dataset is written and the heap returned to the system, so base-MiB is
// the RSS before an export and peak-MiB its peak. The NDJSON export comes
// first: it fills the block cache, which stays, so the Arrow and Parquet
// figures above base-MiB are their own.
func BenchmarkExportPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS: %v", err)
	}
	f := newFixture(b, fixtureOpts{})
	rows := *exportRSSRows
	benchDataset(b, f, rows)
	for _, format := range []string{"ndjson", "arrow", "parquet"} {
		b.Run("format="+format, func(b *testing.B) {
			for b.Loop() {
				runtime.GC()
				debug.FreeOSMemory()
				base := procStatusMiB(b, "VmRSS")
				if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
					b.Fatal(err)
				}
				resp, err := http.Get(f.ts.URL + "/v1/datasets/wide/rows?format=" + format)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %d, %d bytes, %v", format, resp.StatusCode, n, err)
				}
				b.ReportMetric(base, "base-MiB")
				b.ReportMetric(procStatusMiB(b, "VmHWM"), "peak-MiB")
				b.ReportMetric(float64(n)/(1<<20), "body-MiB")
			}
		})
	}
}

// procStatusMiB reads a field of /proc/self/status given in kB, in MiB.
func procStatusMiB(b *testing.B, field string) float64 {
	b.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
