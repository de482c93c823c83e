package snapstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/snapshot"
)

// ReadDiff implements source.DiffReader: the source's own diff, GET
// /v1/datasets/{dataset}/diff?from=F&to=N (of a table,
// /v1/datasets/{dataset}/tables/{table}/diff), one NDJSON stream bounded
// by read_timeout, when from is "dataset@F" (or "dataset.table@F") of
// this reader's resource, or for a table "dataset@F", the dataset's
// version F a run of several tables copied (its point's position), F is
// not after N, and version F is still kept,
// holds the table read with the reader's schema and with fromChecksum as
// its checksum (so the copy's current version holds F's rows), and that
// table is the one read, not one dropped and added again since (another
// number; the source has no diff across that). F equal to
// N has no change. For a derived copy, from must name the same derivation
// (its suffix), F's schema must give the reader's once derived, and the
// checksum is not compared (the copy's is its own); the changes of keys
// outside the range are skipped, and those kept give the copy's columns
// only.
func (t *table) ReadDiff(ctx context.Context, from, fromChecksum string) (source.Changes, bool, error) {
	suffix := t.derive.suffix()
	if !strings.HasSuffix(from, suffix) {
		return nil, false, nil
	}
	from = strings.TrimSuffix(from, suffix)
	i := strings.LastIndexByte(from, '@')
	if i < 0 || from[:i] != t.label && (t.name == "" || from[:i] != t.dataset) {
		return nil, false, nil
	}
	fv, err := strconv.ParseInt(from[i+1:], 10, 64)
	if err != nil || fv <= 0 || fv > t.version {
		return nil, false, nil // a version after the one read: read in full
	}
	var vi snapshot.VersionInfo
	if _, err := t.src.getJSON(ctx, "/v1/datasets/"+url.PathEscape(t.dataset)+"/versions/"+strconv.FormatInt(fv, 10), nil, &vi); err != nil {
		var se *statusError
		if errors.As(err, &se) && (se.Status == http.StatusGone || se.Status == http.StatusNotFound) {
			return nil, false, nil // collected, or the dataset dropped since
		}
		return nil, false, err
	}
	schema, checksum := vi.Schema, vi.Stats.Checksum
	if t.name != "" {
		j := slices.IndexFunc(vi.Tables, func(ti snapshot.TableInfo) bool { return ti.Name == t.name })
		if j < 0 || vi.Tables[j].Number != t.number {
			return nil, false, nil // the table is not in version F, or was replaced since: read in full
		}
		schema, checksum = vi.Tables[j].Schema, vi.Tables[j].Stats.Checksum
	}
	if !t.derive.derived() && checksum != fromChecksum {
		return nil, false, nil
	}
	fromSchema, err := t.derive.schema(schema, t.what, fv)
	if err != nil || !sameSchema(fromSchema, t.schema) {
		return nil, false, nil // a column kept is gone or changed since: read in full
	}
	c := &changes{t: t}
	if fv == t.version {
		c.done, c.cancel = true, func() {} // no change
		return c, true, nil
	}
	q := url.Values{}
	q.Set("from", strconv.FormatInt(fv, 10))
	q.Set("to", strconv.FormatInt(t.version, 10))
	c.ctx, c.cancel = t.src.readBound(ctx)
	resp, err := t.src.get(c.ctx, t.path+"/diff", q, "application/x-ndjson")
	if err != nil {
		err = t.src.readTimeout(ctx, c.ctx, err)
		c.cancel()
		return nil, false, t.src.versionErr(err, t.dataset, t.version)
	}
	c.resp, c.dec = resp, json.NewDecoder(resp.Body)
	if got := resp.Header.Get("Snapstore-Version"); got != strconv.FormatInt(t.version, 10) || resp.Header.Get("Snapstore-Diff-From") != q.Get("from") {
		c.Close()
		return nil, false, fmt.Errorf("%w: the diff of %s answered versions %s to %s, not %d to %d", source.ErrSourceUnavailable,
			t.what, resp.Header.Get("Snapstore-Diff-From"), got, fv, t.version)
	}
	c.key = make([]snapshot.Value, len(t.schema.Key))
	for _, k := range t.schema.Key {
		c.keyCols = append(c.keyCols, t.schema.Columns[slices.IndexFunc(t.schema.Columns, func(col snapshot.Column) bool { return col.Name == k })])
	}
	return c, true, nil
}

// Checksum implements source.DiffReader: the version's checksum, or ""
// for a derived copy, whose checksum is the run's own.
func (t *table) Checksum() string { return t.checksum }

// sameSchema reports whether two versions have the same columns (name,
// kind, source type, nullability, in order) and key.
func sameSchema(a, b snapshot.Schema) bool {
	return slices.Equal(a.Columns, b.Columns) && slices.Equal(a.Key, b.Key)
}

// change is one line of the diff stream.
type change struct {
	Op    string                     `json:"op"`
	Key   []json.RawMessage          `json:"key"`
	After map[string]json.RawMessage `json:"after"`
}

// changes reads the diff stream of a table (source.Changes).
type changes struct {
	t       *table
	ctx     context.Context // bounded by read_timeout
	cancel  context.CancelFunc
	resp    *http.Response
	dec     *json.Decoder
	keyCols []snapshot.Column
	cur     change
	key     []snapshot.Value
	enc     []byte // key encoded, for the key range
	err     error
	done    bool
}

// Next implements source.Changes: the next change of a key the copy
// keeps (derivation's range).
func (c *changes) Next(ctx context.Context) bool {
	for c.next(ctx) {
		if c.t.start == nil && c.t.end == nil {
			return true
		}
		var err error
		if c.enc, err = snapshot.AppendKey(c.enc[:0], c.key); err != nil {
			c.err = fmt.Errorf("%w: %s: the key of a change: %w", source.ErrSourceUnavailable, c.t.what, err)
			return false
		}
		if inRange(c.enc, c.t.start, c.t.end) {
			return true
		}
	}
	return false
}

// next reads the next change of the stream.
func (c *changes) next(ctx context.Context) bool {
	if c.done || c.err != nil {
		return false
	}
	c.cur = change{}
	if err := c.dec.Decode(&c.cur); err != nil {
		if errors.Is(err, io.EOF) {
			c.done = true
			return false
		}
		c.err = c.t.src.readTimeout(ctx, c.ctx, fmt.Errorf("%w: the diff of %s to version %d through %s was cut: %w",
			source.ErrSourceUnavailable, c.t.what, c.t.version, c.t.src.addr.Addr, err))
		return false
	}
	if len(c.cur.Key) != len(c.keyCols) {
		c.err = fmt.Errorf("%w: a change of %s with %d key values for %d key columns", source.ErrSourceUnavailable, c.t.what, len(c.cur.Key), len(c.keyCols))
		return false
	}
	for i, col := range c.keyCols {
		var err error
		if c.key[i], err = parseValue(col, c.cur.Key[i]); err != nil {
			c.err = fmt.Errorf("%s, the key of a change: %w", c.t.what, err)
			return false
		}
	}
	if c.Deleted() {
		return true
	}
	for i, col := range c.t.schema.Columns {
		raw, ok := c.cur.After[col.Name]
		if !ok {
			c.err = fmt.Errorf("%w: %s: a change without column %q", source.ErrSourceUnavailable, c.t.what, col.Name)
			return false
		}
		var err error
		if c.t.row[i], err = parseValue(col, raw); err != nil {
			c.err = fmt.Errorf("%s, a change: %w", c.t.what, err)
			return false
		}
	}
	return true
}

// Key implements source.Changes.
func (c *changes) Key() []snapshot.Value { return c.key }

// Deleted implements source.Changes.
func (c *changes) Deleted() bool { return c.cur.Op == "delete" }

// Values implements source.Changes.
func (c *changes) Values() []snapshot.Value { return c.t.row }

// Err implements source.Changes.
func (c *changes) Err() error { return c.err }

// Close implements source.Changes.
func (c *changes) Close() error {
	if c.resp != nil {
		c.resp.Body.Close()
		c.resp = nil
	}
	c.cancel()
	return nil
}
