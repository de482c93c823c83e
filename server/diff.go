package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

func (s *Server) diff(c echo.Context) error {
	ctx := c.Request().Context()
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	statsOnly := false
	if v := c.QueryParam("stats_only"); v != "" {
		if statsOnly, err = strconv.ParseBool(v); err != nil {
			return badField("stats_only", "want true or false, got %q", v)
		}
	}
	from, to, err := s.diffRange(ctx, c, ds)
	if err != nil {
		return err
	}
	c.Response().Header().Set(versionHeader, strconv.FormatInt(to, 10))
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
	w := c.Response()
	w.Header().Set("Snapstore-Diff-From", strconv.FormatInt(from, 10))
	w.Header().Set(echo.HeaderContentType, mediaNDJSON)
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	var b []byte
	for it.Next() {
		ch := it.Change()
		b = append(b[:0], `{"op":`...)
		b = appendJSONString(b, string(ch.Op))
		b = append(b, `,"key":`...)
		b = appendKeyJSON(b, ch.Key)
		if ch.Before != nil {
			b = append(b, `,"before":`...)
			b = ch.Before.AppendJSON(b)
		}
		if ch.After != nil {
			b = append(b, `,"after":`...)
			b = ch.After.AppendJSON(b)
		}
		b = append(b, "}\n"...)
		if _, err := bw.Write(b); err != nil {
			return nil
		}
	}
	if err := it.Err(); err != nil {
		if ctxDone(ctx) {
			return nil
		}
		_ = bw.Flush()
		s.streamAbort(c, err)
	}
	_ = bw.Flush()
	return nil
}

// diffRange resolves from and to: to defaults to the current version, from
// to the newest kept version older than to.
func (s *Server) diffRange(ctx context.Context, c echo.Context, ds string) (from, to int64, err error) {
	q := c.QueryParams()
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
		d, err := s.db.Dataset(ctx, ds)
		if err != nil {
			return 0, 0, err
		}
		if d.Current == 0 {
			return 0, 0, fmt.Errorf("server: diff of %q: %w", ds, snapshot.ErrNoVersion)
		}
		to = d.Current
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

// versionOrTag reads a diff bound: a version number when v is an integer
// (so a tag named "3" cannot be given here), else the name of a tag of ds,
// resolved to its version (404 tag_not_found naming field).
func (s *Server) versionOrTag(ctx context.Context, ds, field, v string) (int64, error) {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil || strings.TrimLeft(v, "+-0123456789") == "" {
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
