package server

import (
	"bufio"
	"context"
	"encoding/csv"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

func (s *Server) streamNDJSON(c echo.Context, it snapshot.RowIterator) error {
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, mediaNDJSON)
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	var b []byte
	for it.Next() { // the iterator stops at the limit, if any
		b = it.Row().AppendJSON(b[:0])
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return nil // client went away
		}
	}
	if err := it.Err(); err != nil {
		if ctxDone(c.Request().Context()) {
			return nil
		}
		_ = bw.Flush()
		s.streamAbort(c, err)
	}
	_ = bw.Flush()
	return nil
}

func (s *Server) streamCSV(c echo.Context, it snapshot.RowIterator, sel []string, schema snapshot.Schema) error {
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, mediaCSV+"; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := csv.NewWriter(bw)
	wroteHeader := false
	var rec []string
	for it.Next() { // the iterator stops at the limit, if any
		row := it.Row()
		if !wroteHeader {
			if err := cw.Write(row.Columns); err != nil {
				return nil
			}
			wroteHeader = true
		}
		rec = rec[:0]
		for _, v := range row.Values {
			rec = append(rec, ValueText(v))
		}
		if err := cw.Write(rec); err != nil {
			return nil
		}
	}
	if !wroteHeader {
		_ = cw.Write(selectedColumns(sel, schema))
	}
	cw.Flush()
	if err := it.Err(); err != nil {
		if ctxDone(c.Request().Context()) {
			return nil
		}
		_ = bw.Flush()
		s.streamAbort(c, err)
	}
	_ = bw.Flush()
	return nil
}

// streamAbort ends a stream whose status line is already sent: the error is
// logged and the connection cut, so the client sees a truncated body rather
// than a short but well-formed one.
func (s *Server) streamAbort(c echo.Context, err error) {
	s.log.Error("stream cut by an error", "route", c.Path(), "dataset", c.Param("dataset"), "err", err)
	panic(http.ErrAbortHandler)
}

func ctxDone(ctx context.Context) bool { return ctx.Err() != nil }
