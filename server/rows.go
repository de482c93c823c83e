package server

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/internal/jsonstr"
	"github.com/snapstore/snapstore/snapshot"
)

// Page sizes of JSON scans, and the limit of streams.
const (
	// defaultPageSize is the number of rows of a JSON scan page without limit.
	defaultPageSize = 100
	// maxPageSize is the largest limit of a JSON page.
	maxPageSize = 10000
	// maxStreamLimit is the largest limit of a stream (NDJSON, CSV, Arrow,
	// Parquet), which holds one batch at a time whatever its length: the
	// first rows of a range, as many as asked.
	maxStreamLimit = math.MaxInt32
)

// getRow answers GET /v1/datasets/{dataset}/rows/{key}: one row at the
// pinned version, the key given one path segment per key column.
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
		return WithField(err, "key")
	}
	cols, err := parseColumns(c)
	if err != nil {
		return err
	}
	if err := r.Version().CheckColumns(cols); err != nil {
		return BadField("columns", "%s", err)
	}
	v := r.Version()
	bp := bodyPool.Get().(*[]byte)
	defer putBody(bp)
	b := appendResultHead((*bp)[:0], v.Dataset, v.Version)
	b, err = r.GetJSON(c.Request().Context(), append(b, ','), key, cols)
	*bp = b
	if err != nil {
		if errors.Is(err, snapshot.ErrRowNotFound) {
			return timeKeyHint(err, v.Schema)
		}
		return err
	}
	*bp = append(b, "}\n"...)
	return c.JSONBlob(http.StatusOK, *bp)
}

// timeKeyHint adds to a row not found under a key with a date or time
// column how such a column is matched: by its text as the rows show it,
// not by the instant (docs/api.md, Keys). A key written as another
// spelling of the row's instant (2022-05-25T00:07:54Z for a PostgreSQL
// timestamptz the rows show as 2022-05-25 00:07:54+00, the key of many a
// table partitioned by time) otherwise reads as a row that is not there.
func timeKeyHint(err error, s snapshot.Schema) error {
	var cols []string
	for _, k := range s.Key {
		for _, c := range s.Columns {
			if c.Name == k && (c.Kind == snapshot.KindDate || c.Kind == snapshot.KindDateTime || c.Kind == snapshot.KindTime) {
				cols = append(cols, k)
			}
		}
	}
	if len(cols) == 0 {
		return err
	}
	return fmt.Errorf("%w; a date or time key column (%s) is matched by its text as the rows show it, not by the instant: write it as a scan of the rows gives it", err, strings.Join(cols, ", "))
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
				return nil, BadField("key", "bad URL escape in key segment %d: %v", i+1, err)
			}
			parts[i] = u
		}
	}
	return parts, nil
}

// parseColumns reads the columns query parameter: a comma-separated list
// of column names, blanks dropped; nil (every column) when absent. A
// name holding a comma or a double quote is given in double quotes, as a
// CSV field is (RFC 4180: columns=id,"price, net","say ""hi"""), and is
// taken as quoted, spaces and all; the other names, and the spaces around
// a quoted one, lose the spaces around them.
func parseColumns(c echo.Context) ([]string, error) {
	if c.Request().URL.RawQuery == "" {
		return nil, nil
	}
	v := c.QueryParam("columns")
	if v == "" {
		return nil, nil
	}
	var cols []string
	for rest := v; ; {
		var name string
		p := strings.TrimLeft(rest, " \t")
		if strings.HasPrefix(p, `"`) {
			// A quoted name: up to the quote not doubled.
			var b strings.Builder
			i := 1
			for {
				j := strings.IndexByte(p[i:], '"')
				if j < 0 {
					return nil, BadField("columns", "a double quote left open (a name holding a comma or a double quote is given as \"a, b\", a quote doubled)")
				}
				b.WriteString(p[i : i+j])
				i += j + 1
				if !strings.HasPrefix(p[i:], `"`) {
					break
				}
				b.WriteByte('"')
				i++
			}
			name, p = b.String(), strings.TrimLeft(p[i:], " \t")
			if p != "" && p[0] != ',' {
				return nil, BadField("columns", "%q after the quoted name %q (names are separated by commas)", p, name)
			}
		} else {
			j := strings.IndexByte(p, ',')
			if j < 0 {
				j = len(p)
			}
			name, p = strings.TrimSpace(p[:j]), p[j:]
			if strings.Contains(name, `"`) {
				return nil, BadField("columns", "column %q: a name holding a double quote is given in double quotes, the quote doubled", name)
			}
		}
		if name != "" {
			cols = append(cols, name)
		}
		if p == "" {
			return cols, nil
		}
		rest = p[1:] // past the comma
	}
}

// scanRows answers GET /v1/datasets/{dataset}/rows: rows in key order at
// the pinned version, as JSON pages or an NDJSON or CSV stream
// (negotiate), an Arrow IPC stream or a Parquet file (arrow.go).
func (s *Server) scanRows(c echo.Context) error {
	at, err := parseAt(c)
	if err != nil {
		return err
	}
	q := c.QueryParams()
	tok := q.Get("page_token")
	if tok != "" {
		ds, err := pathParam(c, "dataset")
		if err != nil {
			return err
		}
		// The token pins the version it was made at, so that a paged scan
		// never mixes versions.
		v, err := snapshot.DecodePageToken(ds, tok)
		if err != nil {
			return err
		}
		if at.Version != 0 && at.Version != v || at.AsOf != nil || at.Tag != "" {
			return BadField("page_token", "the page token pins version %d; do not give another version selector", v)
		}
		at = snapshot.At{Version: v}
	}
	media, err := answerFormat(c, mediaJSON, mediaJSON, mediaNDJSON, mediaCSV, mediaArrowStream, mediaParquet)
	if err != nil {
		return err
	}
	codec, err := parquetCompression(c)
	if err != nil {
		return err
	}
	most := maxPageSize
	if media != mediaJSON {
		most = maxStreamLimit
	}
	limit, err := parseLimit(c, most)
	if err != nil {
		return err
	}
	if media == mediaJSON && limit == 0 {
		limit = defaultPageSize
	}
	r, err := s.openReader(c, at)
	if err != nil {
		return err
	}
	defer r.Close()
	cols, err := parseColumns(c)
	if err != nil {
		return err
	}
	opts := snapshot.ScanOptions{Columns: cols, Limit: limit, PageToken: tok}
	if err := r.Version().CheckColumns(opts.Columns); err != nil {
		return BadField("columns", "%s", err)
	}
	for _, f := range []struct {
		name string
		dst  *[]snapshot.Value
	}{{"start", &opts.Start}, {"end", &opts.End}, {"prefix", &opts.Prefix}} {
		if vals, ok := q[f.name]; ok && len(vals) > 0 {
			k, err := ParseKeyPrefix(r.Version().Schema, vals)
			if err != nil {
				return WithField(err, f.name)
			}
			*f.dst = k
		}
	}
	if media == mediaParquet {
		return s.scanParquet(c, r, opts, codec)
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
	case mediaArrowStream:
		return s.scanArrow(c, r, opts, it)
	}
	b := []byte(`{"dataset":`)
	b = jsonstr.Append(b, r.Version().Dataset)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, version, 10)
	b = append(b, `,"rows":[`...)
	n := 0
	for it.Next() { // the iterator stops at opts.Limit and then knows whether more rows follow
		if n > 0 {
			b = append(b, ',')
		}
		if b, err = it.AppendRowJSON(b); err != nil {
			return err
		}
		n++
	}
	if err := it.Err(); err != nil {
		return err
	}
	b = append(b, `],"columns":`...)
	b = appendStrings(b, SelectedColumns(opts.Columns, r.Version().Schema))
	b = append(b, `,"next_page_token":`...)
	b = jsonstr.Append(b, it.NextPageToken())
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

// SelectedColumns is the column list of an answer, in schema order (the
// order of the rows' members): the columns of schema that sel names, or
// every column when sel is empty.
func SelectedColumns(sel []string, schema snapshot.Schema) []string {
	cols := make([]string, 0, len(schema.Columns))
	for _, col := range schema.Columns {
		if len(sel) == 0 || slices.Contains(sel, col.Name) {
			cols = append(cols, col.Name)
		}
	}
	return cols
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
