package server

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/store"
)

// Parquet answers (arrow-go's pqarrow). A Parquet file is whole only once
// its footer is written, so the answer is written to a temporary file
// first and sent, with its Content-Length, only when the footer is: a
// failure before that is a problem+json answer, never a half-written file
// presented as whole. Memory stays bounded by one row group. Being whole,
// the file is also served by byte ranges (Range, 206), which readers of
// Parquet over HTTP ask for: the footer first, then the row groups they
// need. Each request makes the file again from the version it names, so
// a reader's requests agree only when that version is pinned
// (version=N, not the current one). The answer's ETag names the
// version(s) it was made from, so a reader that sends If-Range (or checks
// the tag between its requests, as DuckDB's httpfs does) gets the whole
// new file rather than a slice of it once a run moved the version
// (parquetETag). A HEAD makes the file as its GET would and answers
// with the same status and headers (Content-Length, a 206 or 416 of its
// Range), without the body.

// parquetRowGroupRows is the most rows of one row group: the writer
// buffers one row group's columns before writing them, so an export's
// live heap is about one row group's pages. One Arrow batch's rows
// (arrowBatchRows): larger groups held more heap and wrote no faster.
const parquetRowGroupRows = arrowBatchRows

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

// errRefit stops a pass that met a value its column's Arrow type cannot
// hold; the column is text from then on.
var errRefit = errors.New("server: a value does not fit its column's Arrow type")

// parquetPass gives the schema and the batches of one pass over the rows
// of a Parquet answer; again is true for a pass after one that stopped
// with errRefit.
type parquetPass func(again bool) (*arrow.Schema, func(*arrowBatches) error, error)

// writeParquet writes a Parquet file of schema, whose batches fill
// writes, and sends it as name (writeParquetPasses).
func (s *Server) writeParquet(c echo.Context, schema *arrow.Schema, codec compress.Compression, name, etag string, fill func(*arrowBatches) error) error {
	return s.writeParquetPasses(c, codec, name, etag, func(again bool) (*arrow.Schema, func(*arrowBatches) error, error) {
		if again {
			return nil, nil, errors.New("server: a probed column has a value its Arrow type cannot hold")
		}
		return schema, fill, nil
	})
}

// writeParquetPasses writes a Parquet file to a temporary file, then
// sends it as name with the ETag etag (parquetETag). A pass that stops with errRefit is written again from
// the start, by the next pass. Row groups hold at most
// parquetRowGroupRows rows, compressed by codec, with statistics per
// column; the Arrow schema is stored in the file's metadata, so readers
// get back the Arrow types (durations, dictionaries, the JSON extension)
// and the snapstore metadata.
func (s *Server) writeParquetPasses(c echo.Context, codec compress.Compression, name, etag string, pass parquetPass) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, mediaParquet)
	h.Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	h.Set("ETag", etag)
	// A HEAD makes the file too: only the whole file tells its
	// Content-Length, and http.ServeContent answers a HEAD (and its
	// Range, If-Range, If-Match) as it would the GET, without the body.
	// The file has no name in the temporary directory, written and read
	// through the open file: a process killed while it answers leaves no
	// copy of the rows there, and the disk is freed when the file closes.
	// Where the file system cannot make one, a named file unlinked at once
	// leaves the same but for that moment.
	f, unnamed := openUnnamedTemp()
	if !unnamed {
		var err error
		if f, err = os.CreateTemp("", "snapstore-*.parquet"); err != nil {
			return err
		}
		if err := os.Remove(f.Name()); err != nil {
			defer os.Remove(f.Name())
		}
	}
	defer f.Close()
	for again := false; ; again = true {
		if again {
			if err := f.Truncate(0); err != nil {
				return err
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
		}
		schema, fill, err := pass(again)
		if err == nil {
			if err = writeParquetFile(f, schema, codec, s.cache, fill); errors.Is(err, errRefit) {
				continue
			}
		}
		if err != nil {
			if cerr := c.Request().Context().Err(); cerr != nil {
				// The client went away before the answer began: no one to
				// tell, and logs and metrics say 499 (clientGone).
				return fmt.Errorf("server: writing the Parquet file: %w", cerr)
			}
			return err
		}
		break
	}
	// ServeContent sends the file with its Content-Length, or the byte
	// ranges a Range header asks for (206); a client that goes away gets a
	// short body, below its Content-Length. Its 416 of a Range it cannot
	// serve and its 412 of an If-Match of another ETag are answered as
	// problems (serveRefusal).
	sr := &serveRefusal{ResponseWriter: c.Response()}
	http.ServeContent(sr, c.Request(), "", time.Time{}, f)
	switch sr.refused {
	case http.StatusRequestedRangeNotSatisfiable:
		size, err := f.Seek(0, io.SeekEnd)
		if err != nil {
			return err
		}
		h.Del(echo.HeaderContentDisposition)
		h.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		return fmt.Errorf("%w: %s of a file of %d bytes", errRangeNotSatisfiable, c.Request().Header.Get("Range"), size)
	case http.StatusPreconditionFailed:
		h.Del(echo.HeaderContentDisposition)
		return fmt.Errorf("%w: If-Match %s; the answer's ETag is now %s (a run committed another version since)",
			errPreconditionFailed, c.Request().Header.Get("If-Match"), etag)
	}
	return nil
}

// parquetETag is the strong ETag of a Parquet answer to c's request made
// from versions (a scan's version, a diff's from and to): the file is the
// same bytes for the same request of the same versions by the same build,
// so the tag is a hash of these. It changes with the version an unpinned
// URL reads, which http.ServeContent's If-Range check then sees.
func (s *Server) parquetETag(c echo.Context, versions ...int64) string {
	h := sha256.New()
	u := c.Request().URL
	fmt.Fprintf(h, "parquet\x00%s\x00%s\x00%s", s.build, u.EscapedPath(), u.RawQuery)
	for _, v := range versions {
		fmt.Fprintf(h, "\x00%d", v)
	}
	return `"` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`
}

// errRangeNotSatisfiable is the 416 of a Range header that does not parse
// or asks for no byte of the file.
var errRangeNotSatisfiable = errors.New("server: range not satisfiable")

// errPreconditionFailed is the 412 of an If-Match that names another
// ETag than the answer's (parquetETag).
var errPreconditionFailed = errors.New("server: precondition failed")

// serveRefusal holds back the plain-text 416 and the empty 412 that
// http.ServeContent writes for a Range it cannot serve or an If-Match it
// does not meet, so that the answer is a problem+json one with its code
// (problem.go), not a body sent as the file's attachment.
type serveRefusal struct {
	http.ResponseWriter
	refused int // the status held back; 0 when none
}

func (sr *serveRefusal) WriteHeader(code int) {
	if code == http.StatusRequestedRangeNotSatisfiable || code == http.StatusPreconditionFailed {
		sr.refused = code
		return
	}
	sr.ResponseWriter.WriteHeader(code)
}

func (sr *serveRefusal) Write(b []byte) (int, error) {
	if sr.refused != 0 {
		return len(b), nil
	}
	return sr.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath.
func (sr *serveRefusal) Unwrap() http.ResponseWriter { return sr.ResponseWriter }

// writeParquetFile writes the whole Parquet file to w, footer included; a
// file of more than one batch reserves its memory from cache
// (exportmemory.go; nil: none) until it is written.
func writeParquetFile(w io.Writer, schema *arrow.Schema, codec compress.Compression, cache store.CacheReserver, fill func(*arrowBatches) error) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	opts := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(parquetRowGroupRows),
		parquet.WithStats(true),
		parquet.WithDictionaryDefault(false),
		parquet.WithCreatedBy("snapstore"),
	}
	// Dictionary pages only for the dictionary columns (ENUM, SET): for
	// the others the writer's hash tables cost more time and memory than
	// zstd or snappy over plain pages, which end smaller.
	for _, f := range schema.Fields() {
		if f.Type.ID() == arrow.DICTIONARY {
			opts = append(opts, parquet.WithDictionaryFor(f.Name, true))
		}
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
	a.mem.cache = cache
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
