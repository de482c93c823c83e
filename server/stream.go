package server

import (
	"bufio"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

// headOnly reports whether c answers a HEAD (readMethods): the status and
// headers of the GET, without its body. A streamed answer sends its
// headers and stops before it reads a row, and skips the passes that only
// shape its body (the probes of Arrow types); a Parquet file, made whole
// before it is sent, is not made, so its HEAD has no Content-Length.
func headOnly(c echo.Context) bool { return c.Request().Method == http.MethodHead }

// startStream sends the status line and headers of a streamed answer of
// media type contentType and returns the buffered writer of its body; nil
// for a HEAD (headOnly), whose answer ends there.
func startStream(c echo.Context, contentType string) *bufio.Writer {
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, contentType)
	w.WriteHeader(http.StatusOK)
	if headOnly(c) {
		return nil
	}
	return bufio.NewWriterSize(w, 64<<10)
}

// endStream ends a streamed answer once its iterator stopped with err. With
// none, the rest of the body is flushed. With one, the stream is cut
// (streamAbort), unless the client went away: then there is no one to tell.
func (s *Server) endStream(c echo.Context, bw *bufio.Writer, err error) error {
	if err != nil {
		if c.Request().Context().Err() != nil {
			return nil
		}
		_ = bw.Flush()
		s.streamAbort(c, err)
	}
	_ = bw.Flush()
	return nil
}

// streamNDJSON streams the rows of it as one JSON object a line.
func (s *Server) streamNDJSON(c echo.Context, it snapshot.RowIterator) error {
	bw := startStream(c, mediaNDJSON)
	if bw == nil {
		return nil
	}
	var b []byte
	for it.Next() { // the iterator stops at the limit, if any
		var err error
		if b, err = it.AppendRowJSON(b[:0]); err != nil {
			return s.endStream(c, bw, err)
		}
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return nil // client went away
		}
	}
	return s.endStream(c, bw, it.Err())
}

// streamCSV streams the rows of it as CSV (csv.go), a header line of
// column names first: those of the first row, else the selected columns
// sel of schema.
func (s *Server) streamCSV(c echo.Context, it snapshot.RowIterator, sel []string, schema snapshot.Schema) error {
	bw := startStream(c, mediaCSV+"; charset=utf-8")
	if bw == nil {
		return nil
	}
	wroteHeader := false
	var b []byte
	for it.Next() { // the iterator stops at the limit, if any
		row := it.Row()
		b = b[:0]
		if !wroteHeader {
			b = appendCSVHeader(b, row.Columns)
			wroteHeader = true
		}
		b = appendCSVRecord(b, row.Values)
		if _, err := bw.Write(b); err != nil {
			return nil // client went away
		}
	}
	if !wroteHeader {
		_, _ = bw.Write(appendCSVHeader(nil, SelectedColumns(sel, schema)))
	}
	return s.endStream(c, bw, it.Err())
}

// streamAbort ends a stream whose status line is already sent: the error is
// logged and the connection cut, so the client sees a truncated body rather
// than a short but well-formed one.
func (s *Server) streamAbort(c echo.Context, err error) {
	s.log.Error("stream cut by an error", "route", c.Path(), "dataset", c.Param("dataset"), "err", err)
	panic(http.ErrAbortHandler)
}
