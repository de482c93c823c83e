package server

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

// versionHeader is the response header carrying the version a read was
// pinned to.
const versionHeader = "Snapstore-Version"

// parseAt reads the version selector of a read: at most one of version,
// as_of (RFC 3339) and tag.
func parseAt(c echo.Context) (snapshot.At, error) {
	var at snapshot.At
	if c.Request().URL.RawQuery == "" {
		return at, nil
	}
	q := c.QueryParams()
	n := 0
	if v := q.Get("version"); v != "" {
		n++
		id, err := ParseVersion("version", v)
		if err != nil {
			return at, err
		}
		at.Version = id
	}
	if v := q.Get("as_of"); v != "" {
		n++
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return at, BadField("as_of", "want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", v)
		}
		at.AsOf = &t
	}
	if q.Has("tag") {
		n++
		if q.Get("tag") == "" {
			return at, BadField("tag", "empty tag")
		}
		at.Tag = q.Get("tag")
	}
	if n > 1 {
		return at, BadField("version", "give at most one of version, as_of and tag")
	}
	return at, nil
}

// openReader pins the version selected by the request, of the {table} of
// a table-qualified route, and sets the version header. The caller closes the reader.
func (s *Server) openReader(c echo.Context, at snapshot.At) (*snapshot.Reader, error) {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return nil, err
	}
	table, named, err := tableParam(c)
	if err != nil {
		return nil, err
	}
	r, err := s.ReaderOf(c.Request().Context(), ds, table, named, at)
	if err != nil {
		return nil, err
	}
	setVersionHeader(c, r.Version().Version)
	return r, nil
}

// setVersionHeader names in the answer the version it was read at.
func setVersionHeader(c echo.Context, version int64) {
	c.Response().Header().Set(versionHeader, strconv.FormatInt(version, 10))
}
