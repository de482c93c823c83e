package server

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

// Media types of row streams.
const (
	mediaNDJSON = "application/x-ndjson"
	mediaCSV    = "text/csv"
	mediaJSON   = "application/json"
)

// pathParam returns the unescaped path parameter name. Echo matches on the
// raw path when the request has one (an escaped "/" in a segment), and then
// leaves parameters escaped.
func pathParam(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", badField(name, "bad URL escape: %v", err)
	}
	return u, nil
}

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
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			return at, badField("version", "want a positive integer version, got %q", v)
		}
		at.Version = id
	}
	if v := q.Get("as_of"); v != "" {
		n++
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return at, badField("as_of", "want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", v)
		}
		if t.IsZero() {
			// snapshot.At reads a zero AsOf as "not given" (the current
			// version); a given 0001-01-01T00:00:00Z is a time like any
			// other. A nanosecond later selects the same versions: none was
			// committed in year 1, so the read is a 410 as for 1900.
			t = t.Add(time.Nanosecond)
		}
		at.AsOf = t
	}
	if q.Has("tag") {
		n++
		if q.Get("tag") == "" {
			return at, badField("tag", "empty tag")
		}
		at.Tag = q.Get("tag")
	}
	if n > 1 {
		return at, badField("version", "give at most one of version, as_of and tag")
	}
	return at, nil
}

// pageToken is the server's scan continuation: the pinned version, a dot,
// a hash of the dataset name (8 hex digits), a dot, and snapshot's own
// token. Carrying the version lets the next page pin the same version
// without the client repeating it; the hash makes a token of another
// dataset a bad_page_token rather than a read of this dataset at that
// version.
func encodePageToken(dataset string, version int64, inner string) string {
	if inner == "" {
		return ""
	}
	return strconv.FormatInt(version, 10) + "." + datasetHash(dataset) + "." + inner
}

// decodePageToken splits a token of encodePageToken. Every malformed token
// and every token of another dataset is snapshot.ErrBadPageToken (400
// bad_page_token, field page_token), as snapshot's own malformed tokens are.
func decodePageToken(dataset, tok string) (int64, string, error) {
	bad := func(why string) error {
		return &fieldedSentinel{err: fmt.Errorf("%w: %s", snapshot.ErrBadPageToken, why), field: "page_token"}
	}
	v, rest, ok1 := strings.Cut(tok, ".")
	h, inner, ok2 := strings.Cut(rest, ".")
	id, err := strconv.ParseInt(v, 10, 64)
	if !ok1 || !ok2 || err != nil || id < 1 || inner == "" || len(h) != 8 {
		return 0, "", bad("not a page token of this server")
	}
	if h != datasetHash(dataset) {
		return 0, "", bad(fmt.Sprintf("not a page token of dataset %q", dataset))
	}
	return id, inner, nil
}

// datasetHash is the FNV-1a hash of a dataset name, 8 hex digits.
func datasetHash(dataset string) string {
	h := fnv.New32a()
	h.Write([]byte(dataset))
	return fmt.Sprintf("%08x", h.Sum32())
}

// openReader pins the version selected by the request and sets the version
// header. The caller closes the reader.
func (s *Server) openReader(c echo.Context, at snapshot.At) (*snapshot.Reader, error) {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return nil, err
	}
	r, err := s.db.Reader(c.Request().Context(), ds, at)
	if err != nil {
		return nil, err
	}
	c.Response().Header().Set(VersionHeader, strconv.FormatInt(r.Version().Version, 10))
	return r, nil
}

// checkColumns names the columns parameter when it lists a column the
// pinned version does not have.
func checkColumns(cols []string, v snapshot.VersionInfo) error {
	for _, name := range cols {
		found := false
		for _, col := range v.Schema.Columns {
			if col.Name == name {
				found = true
				break
			}
		}
		if !found {
			return badField("columns", "no column %q at version %d", name, v.Version)
		}
	}
	return nil
}

func parseColumns(c echo.Context) []string {
	if c.Request().URL.RawQuery == "" {
		return nil
	}
	v := c.QueryParam("columns")
	if v == "" {
		return nil
	}
	var cols []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cols = append(cols, p)
		}
	}
	return cols
}

// rowKeyParts splits the wildcard of /rows/{key...} into unescaped key
// column texts, one per path segment.
func rowKeyParts(c echo.Context) ([]string, error) {
	raw := c.Param("*")
	escaped := c.Request().URL.RawPath != ""
	// An empty wildcard (".../rows/") is one empty segment: the empty text
	// of a one-column text key, as ".../rows/1/" ends with an empty second
	// column. For any other key it is a bad_key (too few parts).
	parts := strings.Split(raw, "/")
	for i, p := range parts {
		if escaped {
			u, err := url.PathUnescape(p)
			if err != nil {
				return nil, badField("key", "bad URL escape in key segment %d: %v", i+1, err)
			}
			parts[i] = u
		}
	}
	return parts, nil
}

func (s *Server) getRow(c echo.Context) error {
	at, err := parseAt(c)
	if err != nil {
		return err
	}
	parts, err := rowKeyParts(c)
	if err != nil {
		return err
	}
	r, err := s.openReader(c, at)
	if err != nil {
		return err
	}
	defer r.Close()
	key, err := r.ParseKey(parts)
	if err != nil {
		return withField(err, "key")
	}
	cols := parseColumns(c)
	if err := checkColumns(cols, r.Version()); err != nil {
		return err
	}
	row, err := r.Get(c.Request().Context(), key, cols)
	if err != nil {
		return err
	}
	v := r.Version()
	bp := bodyPool.Get().(*[]byte)
	defer putBody(bp)
	*bp = append(AppendRowResult((*bp)[:0], v.Dataset, v.Version, row), '\n')
	return c.JSONBlob(http.StatusOK, *bp)
}

// bodyPool holds the buffers of small answers: JSONBlob writes them whole
// (into the connection's buffer) before the handler returns, so they are
// reused once it has.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// putBody returns a buffer to bodyPool unless it grew past 64 KiB.
func putBody(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		bodyPool.Put(bp)
	}
}

// AppendRowResult appends the body of GET /v1/datasets/{dataset}/rows/{key}:
// {"dataset":..., "version":..., "key":[...], "row":{...}}.
func AppendRowResult(dst []byte, dataset string, version int64, row snapshot.Row) []byte {
	dst = append(dst, `{"dataset":`...)
	dst = appendJSONString(dst, dataset)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, version, 10)
	dst = append(dst, `,"key":`...)
	dst = AppendKeyJSON(dst, row.Key)
	dst = append(dst, `,"row":`...)
	dst = AppendRowJSON(dst, row)
	return append(dst, '}')
}

// withField names field in a bad-input error of a lower package, keeping
// the sentinel for the code.
func withField(err error, field string) error {
	for _, s := range []error{snapshot.ErrBadKey, snapshot.ErrInvalidArgument} {
		if errors.Is(err, s) {
			return &fieldedSentinel{err: err, field: field}
		}
	}
	return err
}

// fieldedSentinel is a sentinel error of a lower package blamed on a field.
type fieldedSentinel struct {
	err   error
	field string
}

func (e *fieldedSentinel) Error() string { return e.err.Error() }
func (e *fieldedSentinel) Unwrap() error { return e.err }

// negotiate picks the scan's media type from Accept: the known type with
// the highest q (the first listed among equals), NDJSON, CSV or JSON; q=0
// means "not this one". JSON pages when none is asked for.
func negotiate(accept string) string {
	best, bestQ := mediaJSON, 0.0
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		var media string
		switch mt {
		case mediaNDJSON, "application/jsonl", "application/x-jsonlines":
			media = mediaNDJSON
		case mediaCSV:
			media = mediaCSV
		case mediaJSON:
			media = mediaJSON
		default:
			continue
		}
		if q > 0 && q > bestQ {
			best, bestQ = media, q
		}
	}
	return best
}

func (s *Server) scanRows(c echo.Context) error {
	at, err := parseAt(c)
	if err != nil {
		return err
	}
	q := c.QueryParams()
	var inner string
	if tok := q.Get("page_token"); tok != "" {
		ds, err := pathParam(c, "dataset")
		if err != nil {
			return err
		}
		v, in, err := decodePageToken(ds, tok)
		if err != nil {
			return err
		}
		if at.Version != 0 && at.Version != v || !at.AsOf.IsZero() || at.Tag != "" {
			return badField("page_token", "the page token pins version %d; do not give another version selector", v)
		}
		at = snapshot.At{Version: v}
		inner = in
	}
	media := negotiate(c.Request().Header.Get(echo.HeaderAccept))
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return badField("limit", "want an integer from 1 to %d, got %q", MaxPageSize, v)
		}
		limit = n
	}
	if media == mediaJSON && limit == 0 {
		limit = DefaultPageSize
	}
	r, err := s.openReader(c, at)
	if err != nil {
		return err
	}
	defer r.Close()
	opts := snapshot.ScanOptions{Columns: parseColumns(c), Limit: limit, PageToken: inner}
	if err := checkColumns(opts.Columns, r.Version()); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		dst  *[]snapshot.Value
	}{{"start", &opts.Start}, {"end", &opts.End}, {"prefix", &opts.Prefix}} {
		if vals, ok := q[f.name]; ok && len(vals) > 0 {
			k, err := ParseKeyPrefix(r.Version().Schema, vals)
			if err != nil {
				return withField(err, f.name)
			}
			*f.dst = k
		}
	}
	ctx := c.Request().Context()
	it, err := r.Scan(ctx, opts)
	if err != nil {
		return err
	}
	defer it.Close()
	version := r.Version().Version
	switch media {
	case mediaNDJSON:
		return s.streamNDJSON(c, it)
	case mediaCSV:
		return s.streamCSV(c, it, opts.Columns, r.Version().Schema)
	}
	b := []byte(`{"dataset":`)
	b = appendJSONString(b, r.Version().Dataset)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, version, 10)
	b = append(b, `,"rows":[`...)
	n := 0
	var cols []string
	for it.Next() { // the iterator stops at opts.Limit and then knows whether more rows follow
		row := it.Row()
		if n == 0 {
			cols = row.Columns
		} else {
			b = append(b, ',')
		}
		b = AppendRowJSON(b, row)
		n++
	}
	if err := it.Err(); err != nil {
		return err
	}
	b = append(b, `],"columns":`...)
	if cols == nil {
		cols = selectedColumns(opts.Columns, r.Version().Schema)
	}
	b = appendStrings(b, cols)
	b = append(b, `,"next_page_token":`...)
	b = appendJSONString(b, encodePageToken(r.Version().Dataset, version, it.NextPageToken()))
	b = append(b, "}\n"...)
	return c.JSONBlob(http.StatusOK, b)
}

// ParseKeyPrefix converts the texts of the first len(parts) key columns of
// schema to typed values (snapshot.ParseValue per column kind), for the
// start, end and prefix of a scan. snapshot.ErrBadKey when there are more
// parts than key columns or a text does not fit its column.
func ParseKeyPrefix(schema snapshot.Schema, parts []string) ([]snapshot.Value, error) {
	if len(parts) > len(schema.Key) {
		return nil, fmt.Errorf("%w: %d key parts for %d key columns %v", snapshot.ErrBadKey, len(parts), len(schema.Key), schema.Key)
	}
	kinds := make(map[string]snapshot.Kind, len(schema.Columns))
	for _, col := range schema.Columns {
		kinds[col.Name] = col.Kind
	}
	vals := make([]snapshot.Value, 0, len(parts))
	for i, p := range parts {
		v, err := snapshot.ParseValue(kinds[schema.Key[i]], p)
		if err != nil {
			return nil, fmt.Errorf("key column %s: %w", schema.Key[i], err)
		}
		vals = append(vals, v)
	}
	return vals, nil
}

func selectedColumns(sel []string, schema snapshot.Schema) []string {
	if len(sel) > 0 {
		return sel
	}
	cols := make([]string, 0, len(schema.Columns))
	for _, col := range schema.Columns {
		cols = append(cols, col.Name)
	}
	return cols
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// streamAbort ends a stream whose status line is already sent: the error is
// logged and the connection cut, so the client sees a truncated body rather
// than a short but well-formed one.
func (s *Server) streamAbort(c echo.Context, err error) {
	s.log.Error("stream cut by an error", "route", c.Path(), "dataset", c.Param("dataset"), "err", err)
	panic(http.ErrAbortHandler)
}

func (s *Server) streamNDJSON(c echo.Context, it snapshot.RowIterator) error {
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, mediaNDJSON)
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	var b []byte
	for it.Next() { // the iterator stops at the limit, if any
		b = AppendRowJSON(b[:0], it.Row())
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

func ctxDone(ctx context.Context) bool { return ctx.Err() != nil }

// datasetOut renders a dataset with human-readable durations and, when the
// request selected a version, that version.
type datasetOut struct {
	snapshot.DatasetInfo
	Retention   retentionJSON         `json:"retention"`
	VersionRead *snapshot.VersionInfo `json:"version_read,omitempty"`
}

func toDatasetOut(d snapshot.DatasetInfo) datasetOut {
	return datasetOut{DatasetInfo: d, Retention: retentionToJSON(d.Retention)}
}

func (s *Server) listDatasets(c echo.Context) error {
	infos, err := s.db.Datasets(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]datasetOut, 0, len(infos))
	for _, d := range infos {
		out = append(out, toDatasetOut(d))
	}
	return c.JSON(http.StatusOK, map[string]any{"datasets": out})
}

func (s *Server) getDataset(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	at, err := parseAt(c)
	if err != nil {
		return err
	}
	d, err := s.db.Dataset(c.Request().Context(), ds)
	if err != nil {
		return err
	}
	out := toDatasetOut(d)
	if at != (snapshot.At{}) {
		// A version selector: resolve it (410 when not kept) and describe
		// that version, schema and key columns included, as "version_read".
		r, err := s.openReader(c, at)
		if err != nil {
			return err
		}
		v := r.Version()
		r.Close()
		out.VersionRead = &v
		return c.JSON(http.StatusOK, out)
	}
	if d.Current != 0 {
		c.Response().Header().Set(VersionHeader, strconv.FormatInt(d.Current, 10))
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) listVersions(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	vs, err := s.db.Versions(c.Request().Context(), ds)
	if err != nil {
		return err
	}
	if vs == nil {
		vs = []snapshot.VersionInfo{}
	}
	return c.JSON(http.StatusOK, map[string]any{"versions": vs})
}

func parseVersion(field, v string) (int64, error) {
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, badField(field, "want a positive integer version, got %q", v)
	}
	return id, nil
}

func (s *Server) getVersion(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	v, err := parseVersion("version", c.Param("version"))
	if err != nil {
		return err
	}
	info, err := s.db.VersionInfo(c.Request().Context(), ds, v)
	if err != nil {
		return err
	}
	c.Response().Header().Set(VersionHeader, strconv.FormatInt(info.Version, 10))
	return c.JSON(http.StatusOK, info)
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
			return 0, &fieldedSentinel{err: err, field: field}
		}
		return 0, err
	}
	defer r.Close()
	return r.Version().Version, nil
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
	c.Response().Header().Set(VersionHeader, strconv.FormatInt(to, 10))
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
		b = AppendKeyJSON(b, ch.Key)
		if ch.Before != nil {
			b = append(b, `,"before":`...)
			b = AppendRowJSON(b, *ch.Before)
		}
		if ch.After != nil {
			b = append(b, `,"after":`...)
			b = AppendRowJSON(b, *ch.After)
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
