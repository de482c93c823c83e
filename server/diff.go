package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

// diff answers GET /v1/datasets/{dataset}/diff and
// /v1/datasets/{dataset}/tables/{table}/diff: the changes of the dataset,
// or of its table, from version from to version to as NDJSON, an Arrow
// IPC stream or a Parquet file (arrowdiff.go), or their counts with
// stats_only=true (of each table too, for a dataset of named tables:
// diffCounts).
func (s *Server) diff(c echo.Context) error {
	ctx := c.Request().Context()
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	table, named, err := tableParam(c)
	if err != nil {
		return err
	}
	media, err := answerFormat(c, mediaNDJSON, mediaNDJSON, mediaArrowStream, mediaParquet)
	if err != nil {
		return err
	}
	codec, err := parquetCompression(c)
	if err != nil {
		return err
	}
	statsOnly, err := parseBoolQuery(c, "stats_only")
	if err != nil {
		return err
	}
	from, to, err := s.DiffRange(ctx, c.QueryParams(), ds)
	if err != nil {
		return err
	}
	setVersionHeader(c, to)
	if statsOnly {
		return s.diffCounts(c, ds, table, named, from, to)
	}
	if media != mediaNDJSON {
		return tableRequiredInDiff(s.diffArrow(c, ds, table, named, from, to, media, codec), ds)
	}
	it, err := s.Changes(ctx, ds, table, named, from, to)
	if err != nil {
		return tableRequiredInDiff(err, ds)
	}
	defer it.Close()
	c.Response().Header().Set("Snapstore-Diff-From", strconv.FormatInt(from, 10))
	bw := startStream(c, mediaNDJSON)
	if bw == nil {
		return nil
	}
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

// tableRequiredInDiff adds to the 409 table_required of a diff of a
// dataset of several tables (snapshot.ErrTableRequired) the two ways to
// get one: every table's counts in one answer (stats_only=true) and a
// table's changes at its own route. Other errors are returned as they
// are. The CLI's diff cuts the text from "; each table's counts: GET "
// to give its own flags instead.
func tableRequiredInDiff(err error, ds string) error {
	if !errors.Is(err, snapshot.ErrTableRequired) {
		return err
	}
	return fmt.Errorf("%w; each table's counts: GET /v1/datasets/%s/diff?stats_only=true; a table's changes: GET /v1/datasets/%[2]s/tables/{table}/diff",
		err, url.PathEscape(ds))
}

// Changes streams the changes of ds, or of its table when named, from
// version from to version to.
func (s *Server) Changes(ctx context.Context, ds, table string, named bool, from, to int64) (snapshot.DiffIterator, error) {
	if named {
		return s.db.TableDiff(ctx, ds, table, from, to)
	}
	return s.db.Diff(ctx, ds, from, to)
}

// diffArrow answers a diff as an Arrow stream or a Parquet file: the
// schemas of both versions give the columns, a first pass over the
// changes the columns whose values do not fit their Arrow type, and a
// second the rows.
func (s *Server) diffArrow(c echo.Context, ds, table string, named bool, from, to int64, media string, codec compress.Compression) error {
	ctx := c.Request().Context()
	c.Response().Header().Set("Snapstore-Diff-From", strconv.FormatInt(from, 10))
	if media == mediaParquet {
		return s.diffParquet(c, ds, table, named, from, to, codec)
	}
	it, err := s.Changes(ctx, ds, table, named, from, to) // pins both versions
	if err != nil {
		return err
	}
	defer it.Close()
	infos, err := s.diffInfos(ctx, ds, table, named, from, to)
	if err != nil {
		return err
	}
	// A HEAD of a stream skips the probe.
	t, err := s.diffTableOf(ctx, ds, table, named, infos, !headOnly(c), false)
	if err != nil {
		return err
	}
	fill := func(a *arrowBatches) error { return t.write(it, a) }
	return s.streamArrow(c, t.schema(infos[1], table, from), fill)
}

// diffParquet answers a diff as a Parquet file (serveParquet), keyed by
// the table, the two version numbers and codec. Both versions are read
// first, so that one collected since is 410 version_not_kept, whether
// or not the file is cached.
func (s *Server) diffParquet(c echo.Context, ds, table string, named bool, from, to int64, codec compress.Compression) error {
	ctx := c.Request().Context()
	infos, err := s.diffInfos(ctx, ds, table, named, from, to)
	if err != nil {
		return err
	}
	k := newParquetKey("diff")
	k.str(ds)
	k.str(strconv.FormatBool(named))
	k.str(table)
	k.int(from)
	k.int(to)
	k.int(int64(codec))
	build := func(f parquetOut) error {
		it, err := s.Changes(ctx, ds, table, named, from, to) // pins both versions
		if err != nil {
			return err
		}
		defer it.Close()
		t, err := s.diffTableOf(ctx, ds, table, named, infos, true, true)
		if err != nil {
			return err
		}
		fill := func(a *arrowBatches) error { return t.write(it, a) }
		return s.buildParquet(f, codec, onePass(t.schema(infos[1], table, from), fill))
	}
	name := fileName(ds, table) + "-diff-" + strconv.FormatInt(from, 10) + "-" + strconv.FormatInt(to, 10) + ".parquet"
	return s.serveParquet(c, parquetAnswer{key: k, name: name, modified: infos[1].CommittedAt, build: build})
}

// diffInfos reads the versions from and to of a diff.
func (s *Server) diffInfos(ctx context.Context, ds, table string, named bool, from, to int64) ([2]snapshot.VersionInfo, error) {
	var infos [2]snapshot.VersionInfo
	for i, v := range []int64{from, to} {
		r, err := s.ReaderOf(ctx, ds, table, named, snapshot.At{Version: v})
		if err != nil {
			return infos, err
		}
		infos[i] = r.Version()
		r.Close()
	}
	return infos, nil
}

// diffTableOf maps the diff of infos to Arrow fields; with probe, a
// first pass over the changes finds the columns whose values do not fit
// their Arrow type, where the shapes of both versions do not prove they
// fit.
func (s *Server) diffTableOf(ctx context.Context, ds, table string, named bool, infos [2]snapshot.VersionInfo, probe, parquet bool) (*diffTable, error) {
	t := newDiffTable(infos[0].Schema, infos[1].Schema)
	if parquet {
		forParquet(t.keys)
		forParquet(t.before)
		forParquet(t.after)
	}
	keyDoubt := unproven(t.keys, infos[0].Shapes, infos[1].Shapes)
	sideDoubt := unproven(t.before, infos[0].Shapes, infos[1].Shapes)
	if !probe || len(keyDoubt) == 0 && len(sideDoubt) == 0 {
		return t, nil
	}
	it, err := s.Changes(ctx, ds, table, named, infos[0].Version, infos[1].Version)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if err := t.probe(it, keyDoubt, sideDoubt); err != nil {
		return nil, err
	}
	return t, nil
}

// DiffRange resolves the from and to of q: to defaults to the current
// version, from to the newest kept version older than to. The console's
// diff page resolves its bounds here too.
func (s *Server) DiffRange(ctx context.Context, q url.Values, ds string) (from, to int64, err error) {
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
		if from == 0 && len(vs) <= 1 {
			// No from would do: say what makes a second version
			// rather than ask for a bound that cannot be given.
			return 0, 0, BadField("from", "version %d is the only kept version of %s: a diff needs two (a run that finds the source changed commits the next)", to, ds)
		}
		if from == 0 {
			return 0, 0, BadField("from", "no kept version older than %d; give from", to)
		}
	}
	return from, to, nil
}

// versionOrTag reads a diff bound: a version number when v is digits and
// signs alone (no tag is named so: snapshot.ValidTagName), else the name
// of a tag of ds, resolved to its version (404 tag_not_found naming field).
func (s *Server) versionOrTag(ctx context.Context, ds, field, v string) (int64, error) {
	if strings.TrimLeft(v, "+-0123456789") == "" {
		return ParseVersion(field, v)
	}
	vi, err := s.db.VersionAt(ctx, ds, snapshot.At{Tag: v})
	if err != nil {
		if errors.Is(err, snapshot.ErrTagNotFound) {
			return 0, WithField(err, field)
		}
		return 0, err
	}
	return vi.Version, nil
}
