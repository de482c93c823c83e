package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/store"
)

// Parquet answers (arrow-go's pqarrow). A Parquet file is whole only once
// its footer is written, so the answer is written to a file first and
// sent, with its Content-Length, only when the footer is: a failure
// before that is a problem+json answer, never a half-written file
// presented as whole. Memory stays bounded by one row group. Being whole,
// the file is also served by byte ranges (Range, 206), which readers of
// Parquet over HTTP ask for: the size (HEAD, or a Range of the footer)
// first, then the row groups they need. So that these requests do not
// make the file once each, built files are kept in a cache on local disk
// (parquetcache.go), keyed by everything that decides their bytes: the
// dataset, the version number the request resolved (a tag, an as_of or
// the current version resolved at the request), the table and the
// parameters that shape the answer (parquetKey). The answer's strong
// ETag is a hash of that key, so a reader that sends If-Range (or checks
// the tag between its requests, as DuckDB's httpfs does) gets the whole
// new file rather than a slice of it once a run moved the version it
// reads. A HEAD answers from the same file as its GET, with the same
// status and headers (Content-Length, a 206 or 416 of its Range),
// without the body.

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

// parquetAnswer is one Parquet answer to serve (serveParquet).
type parquetAnswer struct {
	// key is what decides the file's bytes (parquetKey): the same key,
	// the same bytes.
	key *parquetKey
	// name is the file name of Content-Disposition.
	name string
	// modified is the Last-Modified of the answer: the commit time of the
	// version read (of a diff, of its to version).
	modified time.Time
	// build writes the whole file to f, from its start (buildParquet).
	build func(f parquetOut) error
}

// serveParquet answers c with the Parquet file of a: the one of its key
// in the cache of built files (parquetcache.go), built once for every
// request of that key, or, without a cache, one built for this request
// alone in a temporary file. The grant was checked before (checkGrant,
// in the middleware) and the version resolved to its number by the
// caller, which is in the key: nothing is served from the cache that the
// request could not have built.
//
// http.ServeContent sends the file with its Content-Length, or the byte
// ranges a Range header asks for (206), and answers a HEAD as the GET
// without the body, If-None-Match with 304 and If-Range by the ETag
// (parquetKey.etag) or the Last-Modified; a client that goes away gets a
// short body, below its Content-Length. Its 416 of a Range it cannot
// serve and its 412 of an If-Match of another ETag are answered as
// problems (serveRefusal).
func (s *Server) serveParquet(c echo.Context, a parquetAnswer) error {
	ctx := c.Request().Context()
	var f *os.File
	var err error
	if s.parquetFiles != nil {
		f, err = s.parquetFiles.open(ctx, a.key.sum(s.build), a.build)
	} else {
		s.metrics.parquetBuilds.Inc()
		f, err = buildUnnamedParquet(a.build)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// The client went away before the answer began: no one to
			// tell, and logs and metrics say 499 (clientGone).
			return fmt.Errorf("server: writing the Parquet file: %w", cerr)
		}
		return err
	}
	defer f.Close()
	etag := a.key.etag(s.build)
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, mediaParquet)
	h.Set(echo.HeaderContentDisposition, `attachment; filename="`+a.name+`"`)
	h.Set("ETag", etag)
	sr := &serveRefusal{ResponseWriter: c.Response()}
	if satisfiableRange(c.Request().Header) {
		http.ServeContent(sr, c.Request(), "", a.modified, f)
	} else {
		sr.refused = http.StatusRequestedRangeNotSatisfiable
	}
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

// buildUnnamedParquet builds a file with build in the temporary
// directory, without a name there (openUnnamedParquet).
func buildUnnamedParquet(build func(parquetOut) error) (*os.File, error) {
	f, err := openUnnamedParquet()
	if err != nil {
		return nil, err
	}
	if err := build(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openUnnamedParquet opens a new file of the temporary directory without
// a name there: a process killed while it answers leaves no copy of the
// rows there, and the disk is freed when the file closes. Where the file
// system cannot make one, a named file unlinked at once leaves the same
// but for that moment.
func openUnnamedParquet() (*os.File, error) {
	f, unnamed := openUnnamedTemp()
	if unnamed {
		return f, nil
	}
	f, err := os.CreateTemp("", "snapstore-*.parquet")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // best effort: some systems keep an open file's name
	return f, nil
}

// buildParquet writes a Parquet file to f from its start, the schema and
// batches given by pass; a pass that stops with errRefit is written
// again from the start, by the next pass. Row groups hold at most
// parquetRowGroupRows rows, compressed by codec, with statistics per
// column; the Arrow schema is stored in the file's metadata, so readers
// get back the Arrow types (durations, dictionaries, the JSON extension)
// and the snapstore metadata. The batches reserve their memory from the
// block cache (exportmemory.go).
func (s *Server) buildParquet(f parquetOut, codec compress.Compression, pass parquetPass) error {
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
		if err != nil {
			return err
		}
		err = writeParquetFile(f, schema, codec, s.cache, fill)
		if !errors.Is(err, errRefit) {
			return err
		}
	}
}

// onePass is the parquetPass of a schema whose batches fill writes, which
// needs no second pass.
func onePass(schema *arrow.Schema, fill func(*arrowBatches) error) parquetPass {
	return func(again bool) (*arrow.Schema, func(*arrowBatches) error, error) {
		if again {
			return nil, nil, errors.New("server: a probed column has a value its Arrow type cannot hold")
		}
		return schema, fill, nil
	}
}

// satisfiableRange prepares a request's Range header for
// http.ServeContent, which serves a suffix range of no byte (bytes=-0) as
// a 206 of an impossible Content-Range and refuses a range of another
// unit: such a suffix and empty elements are dropped from the list, and
// false is returned when nothing else is left (a 416, RFC 9110 14.1.2); a header of another unit
// than bytes is removed, so that the whole file is the answer (RFC 9110
// 14.2 asks a server to ignore a unit it does not know).
func satisfiableRange(h http.Header) bool {
	rg := h.Get("Range")
	if rg == "" {
		return true
	}
	unit, set, ok := strings.Cut(rg, "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") {
		h.Del("Range")
		return true
	}
	var keep []string
	for spec := range strings.SplitSeq(set, ",") {
		// Empty elements of the list are skipped (RFC 9110 5.6.1); a
		// list of nothing else does not parse, where ServeContent would
		// serve the whole file.
		if s := strings.TrimSpace(spec); s != "-0" && s != "" {
			keep = append(keep, spec)
		}
	}
	if len(keep) == 0 {
		return false
	}
	h.Set("Range", "bytes="+strings.Join(keep, ","))
	return true
}

// errRangeNotSatisfiable is the 416 of a Range header that does not parse
// or asks for no byte of the file.
var errRangeNotSatisfiable = errors.New("server: range not satisfiable")

// errPreconditionFailed is the 412 of an If-Match that names another
// ETag than the answer's (parquetKey.etag).
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
