package server

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/labstack/echo/v4"
)

// Parquet answers (arrow-go's pqarrow). A Parquet file is whole only once
// its footer is written, so the answer is written to a temporary file
// first and sent, with its Content-Length, only when the footer is: a
// failure before that is a problem+json answer, never a half-written file
// presented as whole. Memory stays bounded by one row group.

// parquetRowGroupRows is the most rows of one row group: the writer
// buffers one row group's columns before writing them.
const parquetRowGroupRows = 65536

// parquetCodecs are the values of the compression parameter.
var parquetCodecs = map[string]compress.Compression{
	"zstd":   compress.Codecs.Zstd,
	"snappy": compress.Codecs.Snappy,
}

// parquetCompression reads the compression parameter: zstd (the default)
// or snappy.
func parquetCompression(c echo.Context) (compress.Compression, error) {
	v := c.QueryParam("compression")
	if v == "" {
		return compress.Codecs.Zstd, nil
	}
	codec, ok := parquetCodecs[v]
	if !ok {
		return 0, BadField("compression", "want zstd or snappy, got %q", v)
	}
	return codec, nil
}

// writeParquet writes a Parquet file of schema, whose batches fill writes,
// to a temporary file, then sends it as name. Row groups hold at most
// parquetRowGroupRows rows, compressed by codec, with statistics per
// column; the Arrow schema is stored in the file's metadata, so readers
// get back the Arrow types (durations, dictionaries, the JSON extension)
// and the snapstore metadata.
func (s *Server) writeParquet(c echo.Context, schema *arrow.Schema, codec compress.Compression, name string, fill func(*arrowBatches) error) error {
	f, err := os.CreateTemp("", "snapstore-*.parquet")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := writeParquetFile(f, schema, codec, fill); err != nil {
		if c.Request().Context().Err() != nil {
			return nil // the client went away: no one to tell
		}
		return err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, mediaParquet)
	h.Set(echo.HeaderContentLength, strconv.FormatInt(size, 10))
	h.Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	c.Response().WriteHeader(http.StatusOK)
	_, _ = io.Copy(c.Response(), f) // a client that goes away gets a short body, below its Content-Length
	return nil
}

// writeParquetFile writes the whole Parquet file to w, footer included.
func writeParquetFile(w io.Writer, schema *arrow.Schema, codec compress.Compression, fill func(*arrowBatches) error) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	opts := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(parquetRowGroupRows),
		parquet.WithStats(true),
		parquet.WithCreatedBy("snapstore"),
	}
	if codec == compress.Codecs.Zstd {
		// zstd's fastest level: the whole file is written while the
		// client waits for its first byte.
		opts = append(opts, parquet.WithCompressionLevel(1))
	}
	props := parquet.NewWriterProperties(opts...)
	fw, err := pqarrow.NewFileWriter(schema, bw, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	a := newArrowBatches(schema, fw.WriteBuffered)
	defer a.release()
	if err := fill(a); err != nil {
		_ = fw.Close()
		return err
	}
	if err := fw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}
