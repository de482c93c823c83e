package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

// diff answers GET /v1/datasets/{dataset}/diff: the changes from version
// from to version to as NDJSON, or their counts with stats_only=true.
func (s *Server) diff(c echo.Context) error {
	ctx := c.Request().Context()
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	statsOnly, err := parseBoolQuery(c, "stats_only")
	if err != nil {
		return err
	}
	from, to, err := s.diffRange(ctx, c.QueryParams(), ds)
	if err != nil {
		return err
	}
	setVersionHeader(c, to)
	if statsOnly {
		st, err := s.db.DiffCounts(ctx, ds, from, to)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, st)
	}
	it, err := s.db.Diff(ctx, ds, from, to)
	if err != nil {
		return err
	}
	defer it.Close()
	c.Response().Header().Set("Snapstore-Diff-From", strconv.FormatInt(from, 10))
	bw := startStream(c, mediaNDJSON)
	var b []byte
	for it.Next() {
		b = appendChangeJSON(b[:0], it.Change())
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return nil // client went away
		}
	}
	return s.endStream(c, bw, it.Err())
}

// diffRange resolves the from and to of q: to defaults to the current
// version, from to the newest kept version older than to. The console's
// diff page resolves its bounds here too.
func (s *Server) diffRange(ctx context.Context, q url.Values, ds string) (from, to int64, err error) {
	if v := q.Get("to"); v != "" {
		if to, err = s.versionOrTag(ctx, ds, "to", v); err != nil {
			return 0, 0, err
		}
	}
	if v := q.Get("from"); v != "" {
		if from, err = s.versionOrTag(ctx, ds, "from", v); err != nil {
			return 0, 0, err
		}
	}
	if to == 0 {
		if to, err = s.currentVersion(ctx, ds, "diff of"); err != nil {
			return 0, 0, err
		}
	}
	if from == 0 {
		vs, err := s.db.Versions(ctx, ds)
		if err != nil {
			return 0, 0, err
		}
		for _, v := range vs {
			if v.Version < to && v.Version > from {
				from = v.Version
			}
		}
		if from == 0 {
			return 0, 0, badField("from", "no kept version older than %d; give from", to)
		}
	}
	return from, to, nil
}

// versionOrTag reads a diff bound: a version number when v is digits and
// signs alone (no tag is named so: snapshot.ValidTagName), else the name
// of a tag of ds, resolved to its version (404 tag_not_found naming field).
func (s *Server) versionOrTag(ctx context.Context, ds, field, v string) (int64, error) {
	if strings.TrimLeft(v, "+-0123456789") == "" {
		return parseVersion(field, v)
	}
	r, err := s.db.Reader(ctx, ds, snapshot.At{Tag: v})
	if err != nil {
		if errors.Is(err, snapshot.ErrTagNotFound) {
			return 0, withField(err, field)
		}
		return 0, err
	}
	defer r.Close()
	return r.Version().Version, nil
}
