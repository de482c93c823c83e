package snapstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// table reads one version of a source dataset, or of one table of a
// dataset of several tables: the pages of the scan
// GET /v1/datasets/{dataset}/rows?version=N (of a table,
// /v1/datasets/{dataset}/tables/{table}/rows), each decoded as it
// streams in, the next asked for with the page token of the last, which
// carries the version (so every page reads version N, and a version
// collected meanwhile is a 410). A page token rather than the last key as
// the next page's start, since a start cannot be an empty text.
type table struct {
	src      *snapSource
	dataset  string
	name     string // the source table's; "" for a dataset of one table
	number   int    // the source table's number in version (TableInfo.Number)
	label    string // the resource read without its version (target.label)
	what     string // the resource read in errors (target.what)
	path     string // the dataset's, or its table's, route
	version  int64
	schema   snapshot.Schema // the copy's: the columns derive keeps
	checksum string          // the version's (its table's); "" for a derived copy
	chunk    int
	resource source.Resource
	derive   derivation
	// start and end are derive's key range encoded (snapshot.AppendKey),
	// nil where open, for the changes of a diff.
	start, end []byte

	resp   *http.Response
	dec    *json.Decoder
	pctx   context.Context // the page's, bounded by read_timeout
	cancel context.CancelFunc
	token  string // the next page's token; "" before the first page
	done   bool
	closed bool
	raw    map[string]json.RawMessage
	row    []snapshot.Value
	err    error
	// release, when set, gives the reader's slot back to its point.
	release func()
}

// OpenTable implements source.Source. The resource is a dataset of one
// table, or a table of a dataset of several tables named as resources
// lists it ("dataset.table", quoted parts), either with "@tag" or "@N" to
// read the version a tag or a number names rather than the current one
// (resource.go). The table read is named "dataset@N" (or
// "dataset.table@N"), N the version read, which the run records as its
// resource; for a derived copy (the read options columns, start, end) the
// name goes on with them (derivation.suffix), and its checksum is the
// run's own.
func (s *snapSource) OpenTable(ctx context.Context, req source.TableRequest) (source.TableReader, error) {
	if err := source.NoSharedSnapshot(req); err != nil {
		return nil, err
	}
	r, err := s.resolve(ctx, req.Resource, target{})
	if err != nil {
		return nil, err
	}
	return s.openResolved(req, r)
}

// ownDataset is the refusal of dataset, the adapter's own, as the source
// of the adapter: an *OptionError naming key.
func (s *snapSource) ownDataset(key, dataset string) error {
	return &source.OptionError{Key: key, Msg: fmt.Sprintf(
		"dataset %q through data connection %q is the adapter's own dataset: a dataset cannot be its own source", dataset, s.name)}
}

// openResolved opens the reader of r: the own-dataset refusal, the key,
// the derivation.
func (s *snapSource) openResolved(req source.TableRequest, r resolved) (*table, error) {
	if req.Dataset == r.dataset && !req.DatasetCreated.IsZero() && req.DatasetCreated.Equal(r.created) {
		// The same name, created at the same instant: the same dataset,
		// on this server or another node of its cluster.
		return nil, s.ownDataset("resource", r.dataset)
	}
	vi, schema, stats := r.vi, r.schema(), r.stats()
	t := &table{src: s, dataset: r.dataset, name: r.target.table, label: r.label(), what: r.what(),
		path: "/v1/datasets/" + url.PathEscape(r.dataset), version: vi.Version, schema: schema, checksum: stats.Checksum,
		chunk: req.ChunkRows, derive: derivationOf(req.Options)}
	if t.name != "" {
		t.path += "/tables/" + url.PathEscape(t.name)
	}
	if r.info != nil {
		t.number = r.info.Number
	}
	if t.chunk <= 0 {
		t.chunk = s.chunkRows
	}
	if len(req.KeyColumns) > 0 && !slices.Equal(req.KeyColumns, schema.Key) {
		return nil, fmt.Errorf("%w: the key of %s is (%s); a copy keeps it, so key_columns must be unset or the same",
			source.ErrNoKey, t.what, strings.Join(schema.Key, ", "))
	}
	for _, k := range schema.Key {
		if !slices.ContainsFunc(schema.Columns, func(c snapshot.Column) bool { return c.Name == k }) {
			return nil, fmt.Errorf("%w: key column %q is not a column of %s", source.ErrNoKey, k, t.what)
		}
	}
	if len(schema.Key) == 0 {
		return nil, fmt.Errorf("%w: %s version %d has no key", source.ErrNoKey, t.what, vi.Version)
	}
	var err error
	if t.schema, err = t.derive.schema(schema, t.what, vi.Version); err != nil {
		return nil, err
	}
	if t.start, t.end, err = t.derive.keyRange(schema); err != nil {
		return nil, err
	}
	if t.derive.derived() {
		t.checksum = ""
	}
	typ := resourceType
	if t.name != "" {
		typ = tableType
	}
	t.resource = source.Resource{Name: fmt.Sprintf("%s@%d%s", t.label, vi.Version, t.derive.suffix()), Type: typ, EstimatedRows: stats.Rows}
	t.row = make([]snapshot.Value, len(t.schema.Columns))
	return t, nil
}

// versionErr names the dataset and version in an error of the source
// server: a version gone (410) is a source that cannot serve the read
// (collected by its GC or its retention while the run read it), a dataset
// gone a resource not found, and so is a version collected before the read
// began (dataset@N of a version GC took).
func (s *snapSource) versionErr(err error, dataset string, version int64) error {
	var se *statusError
	if !errors.As(err, &se) {
		return err
	}
	switch {
	case se.Status == http.StatusGone && version == 0:
		return fmt.Errorf("%w: the version of dataset %q asked for is no longer kept by the source server: %w",
			source.ErrResourceNotFound, dataset, err)
	case se.Status == http.StatusGone:
		return fmt.Errorf("%w: version %d of dataset %q is no longer kept by the source server (collected while the run read it): %w",
			source.ErrSourceUnavailable, version, dataset, err)
	case se.Status == http.StatusNotFound && version != 0:
		return fmt.Errorf("dataset %q was dropped on the source server while the run read it: %w", dataset, err)
	}
	return err
}

// Schema implements source.TableReader: the source version's schema and key.
func (t *table) Schema() snapshot.Schema { return t.schema }

// Table implements source.TableReader: "dataset@N", or
// "dataset.table@N".
func (t *table) Table() source.Resource { return t.resource }

// Values implements source.TableReader.
func (t *table) Values() []snapshot.Value { return t.row }

// Err implements source.TableReader.
func (t *table) Err() error { return t.err }

// Next implements source.TableReader.
func (t *table) Next(ctx context.Context) bool {
	for !t.done && t.err == nil {
		if t.dec == nil {
			if t.err = t.openPage(ctx); t.err != nil {
				return false
			}
		}
		if !t.dec.More() {
			if t.err = t.endPage(ctx); t.err != nil {
				return false
			}
			continue
		}
		clear(t.raw)
		if err := t.dec.Decode(&t.raw); err != nil {
			t.err = t.readErr(ctx, err)
			return false
		}
		for i, c := range t.schema.Columns {
			raw, ok := t.raw[c.Name]
			if !ok {
				t.err = fmt.Errorf("%w: %s version %d: a row without column %q", source.ErrSourceUnavailable, t.what, t.version, c.Name)
				return false
			}
			var err error
			if t.row[i], err = parseValue(c, raw); err != nil {
				t.err = fmt.Errorf("%s version %d: %w", t.what, t.version, err)
				return false
			}
		}
		return true
	}
	return false
}

// openPage requests the next page and reads its answer up to the first
// row: {"dataset":..., "version":N, "rows":[ ...
func (t *table) openPage(ctx context.Context) error {
	q := url.Values{}
	q.Set("version", strconv.FormatInt(t.version, 10))
	q.Set("limit", strconv.Itoa(t.chunk))
	if t.derive.columns != nil {
		q.Set("columns", columnsParam(t.derive.columns))
	}
	for _, v := range t.derive.start {
		q.Add("start", v)
	}
	for _, v := range t.derive.end {
		q.Add("end", v)
	}
	if t.token != "" {
		q.Set("page_token", t.token)
	}
	t.pctx, t.cancel = t.src.readBound(ctx)
	resp, err := t.src.get(t.pctx, t.path+"/rows", q, "application/json")
	if err != nil {
		var se *source.SourceError
		if t.token != "" && errors.As(err, &se) && se.Cause == "unreachable" {
			// Pages already read: the server went away mid-read.
			err = t.readErr(ctx, se.Err)
		}
		err = t.src.readTimeout(ctx, t.pctx, err)
		t.closePage()
		return t.src.versionErr(err, t.dataset, t.version)
	}
	t.resp, t.dec = resp, json.NewDecoder(resp.Body)
	if got := resp.Header.Get("Snapstore-Version"); got != strconv.FormatInt(t.version, 10) {
		return fmt.Errorf("%w: the scan of %s answered version %q, not the version %d asked for", source.ErrSourceUnavailable, t.what, got, t.version)
	}
	if t.raw == nil {
		t.raw = make(map[string]json.RawMessage, len(t.schema.Columns))
	}
	if err := t.expect(json.Delim('{')); err != nil {
		return t.readErr(ctx, err)
	}
	for {
		key, err := t.key()
		if err != nil {
			return t.readErr(ctx, err)
		}
		if key == "rows" {
			if err := t.expect(json.Delim('[')); err != nil {
				return t.readErr(ctx, err)
			}
			return nil
		}
		if err := t.field(key); err != nil {
			return t.readErr(ctx, err)
		}
	}
}

// endPage reads the rest of a page after its rows, next_page_token
// among it; an empty one ends the read.
func (t *table) endPage(ctx context.Context) error {
	if err := t.expect(json.Delim(']')); err != nil {
		return t.readErr(ctx, err)
	}
	t.token = ""
	for t.dec.More() {
		key, err := t.key()
		if err != nil {
			return t.readErr(ctx, err)
		}
		if err := t.field(key); err != nil {
			return t.readErr(ctx, err)
		}
	}
	if err := t.expect(json.Delim('}')); err != nil {
		return t.readErr(ctx, err)
	}
	t.closePage()
	t.done = t.token == ""
	return nil
}

// key reads an object key.
func (t *table) key() (string, error) {
	tok, err := t.dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("a page of the scan: want a key, got %v", tok)
	}
	return k, nil
}

// field reads the value of a page's field other than rows: the version,
// which must be the one asked for, the next page's token; the others are
// skipped.
func (t *table) field(key string) error {
	var v json.RawMessage
	if err := t.dec.Decode(&v); err != nil {
		return err
	}
	switch key {
	case "version":
		if string(v) != strconv.FormatInt(t.version, 10) {
			return fmt.Errorf("a page of the scan of version %d is of version %s", t.version, v)
		}
	case "next_page_token":
		return json.Unmarshal(v, &t.token)
	}
	return nil
}

// expect reads the delimiter d.
func (t *table) expect(d json.Delim) error {
	tok, err := t.dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("a page of the scan: want %v, got %v", d, tok)
	}
	return nil
}

// readErr is the error of a page cut short: the server stopped answering
// (killed, restarted) or ended the stream on an error of its own.
func (t *table) readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if t.pctx != nil && t.pctx.Err() != nil {
		return t.src.readTimeout(ctx, t.pctx, fmt.Errorf("the scan of %s version %d: %w", t.what, t.version, err))
	}
	return fmt.Errorf("%w: the scan of %s version %d through %s was cut: %w",
		source.ErrSourceUnavailable, t.what, t.version, t.src.addr.Addr, source.ScrubError(err, t.src.token.Reveal()))
}

// closePage closes the current page's response.
func (t *table) closePage() {
	if t.resp != nil {
		t.resp.Body.Close()
	}
	if t.cancel != nil {
		t.cancel()
	}
	t.resp, t.dec, t.pctx, t.cancel = nil, nil, nil, nil
}

// Close implements source.TableReader.
func (t *table) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	t.closePage()
	if t.release != nil {
		t.release()
	}
	return nil
}

// columnsParam is the columns query parameter naming cols exactly: one
// CSV record, a name holding a comma, a double quote or surrounding
// spaces in double quotes (a quote doubled), as the server reads it. The
// other names go bare, as a server that reads no quotes (before quoted
// names) takes them too.
func columnsParam(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		if strings.ContainsAny(c, `,"`) || strings.TrimSpace(c) != c {
			c = `"` + strings.ReplaceAll(c, `"`, `""`) + `"`
		}
		q[i] = c
	}
	return strings.Join(q, ",")
}
