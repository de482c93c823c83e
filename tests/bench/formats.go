package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// formatScans reads the whole bench table once per format over loopback
// HTTP, by a client that decodes what it receives (NDJSON lines
// unmarshalled, the Arrow stream by arrow-go's IPC reader, the Parquet file
// by its Parquet reader), and returns the rows/s of each.
func formatScans(base string, rows int) map[string]float64 {
	out := map[string]float64{}
	for _, format := range []string{"ndjson", "arrow", "parquet"} {
		start := time.Now()
		resp, err := http.Get(base + "/v1/datasets/t/rows?format=" + format)
		if err != nil {
			log.Fatalf("bench: %s scan: %v", format, err)
		}
		n, err := decodeRows(format, resp.Body)
		resp.Body.Close()
		if err != nil || n != rows {
			log.Fatalf("bench: %s scan: %d rows of %d, %v", format, n, rows, err)
		}
		out[format] = float64(n) / time.Since(start).Seconds()
		log.Printf("bench: whole scan as %s: %.0f rows/s", format, out[format])
	}
	return out
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
	case "parquet":
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
	return 0, fmt.Errorf("unknown format %q", format)
}

// exportAll reads the whole bench table as a Parquet file (what `snapstore
// export` asks for) and then as an Arrow stream, each in full: the Parquet
// file's bytes are counted against its Content-Length, the stream decoded
// batch by batch. The server's peak RSS is then the export's.
func exportAll(base string, rows int64) {
	for _, format := range []string{"parquet", "arrow"} {
		start := time.Now()
		resp, err := http.Get(base + "/v1/datasets/t/rows?format=" + format)
		if err != nil {
			log.Fatalf("bench: %s export: %v", format, err)
		}
		var n int64
		if format == "arrow" {
			var rn int
			rn, err = decodeRows(format, resp.Body)
			n = int64(rn)
			if err == nil && n != rows {
				err = fmt.Errorf("%d rows of %d", n, rows)
			}
		} else if n, err = io.Copy(io.Discard, resp.Body); err == nil && n != resp.ContentLength {
			err = fmt.Errorf("%d bytes of %d", n, resp.ContentLength)
		}
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			log.Fatalf("bench: %s export: %d, %v", format, resp.StatusCode, err)
		}
		log.Printf("bench: full export as %s in %v", format, time.Since(start).Round(time.Millisecond))
	}
}

// bigExport generates rows*rss-scale rows, loads them by a first run and
// exports the version in full from a fresh server (exportAll), then
// generates the bench table again; it returns the rows and the peak RSS
// of the first run and of the export.
func bigExport(e env, tmp string) (n, rssFirst, rssExport int64) {
	big := *rows * *rssScale
	log.Printf("bench: generating %d rows for the RSS figure", big)
	e.generate(big)
	s := startServer(e, filepath.Join(tmp, "data-big"), "", "", "first-big")
	_, rec := s.run()
	rssFirst = s.peakRSS()
	s.stop()
	s = startServer(e, filepath.Join(tmp, "data-big"), "", "", "export-big") // a fresh process: its peak is the export's
	exportAll(s.url, rec.Stats.Rows)
	rssExport = s.peakRSS()
	s.stop()
	e.generate(*rows)
	return rec.Stats.Rows, rssFirst, rssExport
}

// onlyFormatScans is -only-formats: a first run of the bench table, the
// whole scans of formatScans -format-rounds times on one server, then,
// with -rss-scale, the export's peak RSS (bigExport); it prints the
// figures and the load.
func onlyFormatScans(e env, tmp, load0 string) {
	s := startServer(e, filepath.Join(tmp, "data"), *storage, "", "first")
	s.run()
	s = s.phase("http-formats")
	for i := 0; i < *formatRounds; i++ {
		f := formatScans(s.url, *rows)
		fmt.Printf("round %d: ndjson %.0f rows/s, arrow %.0f rows/s (%.2fx), parquet %.0f rows/s (%.2fx)\n",
			i+1, f["ndjson"], f["arrow"], f["arrow"]/f["ndjson"], f["parquet"], f["parquet"]/f["ndjson"])
	}
	s.stop()
	if *rssScale > 1 {
		n, first, export := bigExport(e, tmp)
		fmt.Printf("%d rows: peak RSS first run %s, full export (Parquet, then Arrow) %s\n", n, mib(first), mib(export))
	}
	fmt.Printf("1-minute load average %s, %s (start, end)\n", load0, loadAvg())
}
