package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// httpRow canonicalises a row read over HTTP with the source's column
// types. A column the source does not have is an error.
func httpRow(spec tableSpec, row map[string]json.RawMessage) (canonRow, error) {
	r := canonRow{}
	for n, v := range row {
		c, ok := spec.Cols[n]
		if !ok {
			return nil, fmt.Errorf("column %q is not a column of source table %s", n, spec.Name)
		}
		s, err := canonJSON(c, v)
		if err != nil {
			return nil, err
		}
		r[n] = s
	}
	return r, nil
}

// httpKey canonicalises a key array (of a row result or a diff line).
func httpKey(spec tableSpec, key []json.RawMessage) (string, error) {
	if len(key) != len(spec.Key) {
		return "", fmt.Errorf("key %s has %d parts, the source key (%s) has %d", key, len(key), strings.Join(spec.Key, ", "), len(spec.Key))
	}
	parts := make([]string, len(key))
	for i, k := range key {
		s, err := canonJSON(spec.Cols[spec.Key[i]], k)
		if err != nil {
			return "", err
		}
		parts[i] = s
	}
	return strings.Join(parts, "/"), nil
}

// keyLess orders canonical keys as the row key encoding does for the
// Sakila key types (integers): numerically, part by part.
func keyLess(a, b string) bool {
	pa, pb := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if c := cmpCanon(pa[i], pb[i]); c != 0 {
			return c < 0
		}
	}
	return len(pa) < len(pb)
}

func cmpCanon(a, b string) int {
	if strings.HasPrefix(a, "num:") && strings.HasPrefix(b, "num:") {
		ra, oka := new(big.Rat).SetString(a[4:])
		rb, okb := new(big.Rat).SetString(b[4:])
		if oka && okb {
			return ra.Cmp(rb)
		}
	}
	return strings.Compare(a, b)
}

// rowSink collects HTTP rows, checking strict key order and no duplicates.
type rowSink struct {
	spec tableSpec
	rows map[string]canonRow
	last string
	n    int
	errs []string
}

func newRowSink(spec tableSpec) *rowSink {
	return &rowSink{spec: spec, rows: map[string]canonRow{}}
}

func (s *rowSink) add(raw map[string]json.RawMessage) {
	r, err := httpRow(s.spec, raw)
	if err != nil {
		s.errs = append(s.errs, err.Error())
		return
	}
	k := keyOf(r, s.spec.Key)
	if _, dup := s.rows[k]; dup {
		s.errs = append(s.errs, fmt.Sprintf("key %s returned twice", k))
	}
	if s.n > 0 && !keyLess(s.last, k) {
		s.errs = append(s.errs, fmt.Sprintf("key %s after %s: not in key order", k, s.last))
	}
	s.rows[k], s.last = r, k
	s.n++
}

func (s *rowSink) check(t testing.TB, what string) {
	t.Helper()
	for i, e := range s.errs {
		if i == 5 {
			t.Errorf("%s: ... %d more errors", what, len(s.errs)-5)
			break
		}
		t.Errorf("%s: %s", what, e)
	}
}

// scanPages reads a whole dataset as JSON pages of limit rows, following
// next_page_token; sel is a version selector ("version=7", "tag=x",
// "as_of=...") or empty. It returns the rows, the version every page was
// pinned to and the number of pages.
func (p *proc) scanPages(t testing.TB, spec tableSpec, dataset, sel string, limit int) (map[string]canonRow, int64, int) {
	t.Helper()
	what := fmt.Sprintf("scan %s pages %s", dataset, sel)
	sink := newRowSink(spec)
	var version int64
	pages := 0
	q := "limit=" + strconv.Itoa(limit)
	if sel != "" {
		q += "&" + sel
	}
	for {
		r := p.mustCall(t, http.StatusOK, "GET", "/v1/datasets/"+url.PathEscape(dataset)+"/rows?"+q, nil)
		var page struct {
			Version       int64                        `json:"version"`
			Rows          []map[string]json.RawMessage `json:"rows"`
			NextPageToken string                       `json:"next_page_token"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatalf("%s: page %d: %v", what, pages, err)
		}
		hv, _ := strconv.ParseInt(r.header.Get("Snapstore-Version"), 10, 64)
		if pages == 0 {
			version = page.Version
		}
		if page.Version != version || hv != version {
			t.Fatalf("%s: page %d at version %d (header %d), first page at %d", what, pages, page.Version, hv, version)
		}
		if len(page.Rows) > limit {
			t.Errorf("%s: page %d has %d rows, limit %d", what, pages, len(page.Rows), limit)
		}
		if page.NextPageToken != "" && len(page.Rows) == 0 {
			t.Fatalf("%s: empty page %d with a next page token", what, pages)
		}
		for _, row := range page.Rows {
			sink.add(row)
		}
		pages++
		if page.NextPageToken == "" {
			break
		}
		q = "limit=" + strconv.Itoa(limit) + "&page_token=" + url.QueryEscape(page.NextPageToken)
	}
	sink.check(t, what)
	return sink.rows, version, pages
}

// scanNDJSON reads a whole dataset as one NDJSON stream.
func (p *proc) scanNDJSON(t testing.TB, spec tableSpec, dataset, sel string) (map[string]canonRow, int64) {
	t.Helper()
	return p.scanNDJSONPath(t, spec, "/v1/datasets/"+url.PathEscape(dataset)+"/rows", sel)
}

// scanNDJSONPath is scanNDJSON of the rows route path (a dataset's, or a
// table's of a dataset of several tables).
func (p *proc) scanNDJSONPath(t testing.TB, spec tableSpec, path, sel string) (map[string]canonRow, int64) {
	t.Helper()
	what := fmt.Sprintf("scan %s ndjson %s", path, sel)
	if sel != "" {
		path += "?" + sel
	}
	r := p.mustCall(t, http.StatusOK, "GET", path, nil, "Accept", "application/x-ndjson")
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-ndjson") {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	version, err := strconv.ParseInt(r.header.Get("Snapstore-Version"), 10, 64)
	if err != nil {
		t.Errorf("%s: Snapstore-Version header %q", what, r.header.Get("Snapstore-Version"))
	}
	sink := newRowSink(spec)
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var row map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%s: line %d %q: %v", what, sink.n+1, sc.Text(), err)
		}
		sink.add(row)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(r.body) > 0 && r.body[len(r.body)-1] != '\n' {
		t.Errorf("%s: the stream does not end with a newline (cut?)", what)
	}
	sink.check(t, what)
	return sink.rows, version
}

// getRow reads one row by key at sel.
func (p *proc) getRow(t testing.TB, spec tableSpec, dataset string, key canonRow, sel string) (canonRow, int64, response) {
	t.Helper()
	path := "/v1/datasets/" + url.PathEscape(dataset) + "/rows"
	for _, k := range spec.Key {
		v := key[k]
		v = strings.TrimPrefix(v, "num:")
		path += "/" + url.PathEscape(v)
	}
	if sel != "" {
		path += "?" + sel
	}
	r, err := p.call("GET", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.status != http.StatusOK {
		return nil, 0, r
	}
	var res struct {
		Dataset string                     `json:"dataset"`
		Version int64                      `json:"version"`
		Key     []json.RawMessage          `json:"key"`
		Row     map[string]json.RawMessage `json:"row"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	row, err := httpRow(spec, res.Row)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	k, err := httpKey(spec, res.Key)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if want := keyOf(key, spec.Key); k != want || res.Dataset != dataset {
		t.Errorf("GET %s: dataset %q key %s, want %q %s", path, res.Dataset, k, dataset, want)
	}
	return row, res.Version, r
}

// sameRows reports every difference between want (source) and got
// (HTTP), at most a few of each kind, and compares the checksums.
func sameRows(t testing.TB, what string, want, got map[string]canonRow) bool {
	t.Helper()
	var missing, extra, differ []string
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			missing = append(missing, k)
			continue
		}
		if d := rowDiff(w, g); d != "" {
			differ = append(differ, k+": "+d)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	ok := true
	for _, l := range []struct {
		name string
		keys []string
	}{{"missing", missing}, {"unexpected", extra}, {"different", differ}} {
		if len(l.keys) == 0 {
			continue
		}
		ok = false
		sort.Strings(l.keys)
		if len(l.keys) > 5 {
			l.keys = append(l.keys[:5], "...")
		}
		t.Errorf("%s: %s rows (%d): %s", what, l.name, len(l.keys), strings.Join(l.keys, "; "))
	}
	if cw, cg := checksum(want), checksum(got); cw != cg {
		t.Errorf("%s: checksum %016x, source %016x (%d rows, source %d)", what, cg, cw, len(got), len(want))
		ok = false
	}
	return ok
}

// rowDiff describes how got differs from want, or "".
func rowDiff(want, got canonRow) string {
	var d []string
	for c, w := range want {
		g, ok := got[c]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("column %s missing (source %q)", c, w))
		case g != w:
			d = append(d, fmt.Sprintf("column %s = %q, source %q", c, g, w))
		}
	}
	for c, g := range got {
		if _, ok := want[c]; !ok {
			d = append(d, fmt.Sprintf("extra column %s = %q", c, g))
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}

// diffLine is one line of the diff endpoint.
type diffLine struct {
	Op     string                     `json:"op"`
	Key    []json.RawMessage          `json:"key"`
	Before map[string]json.RawMessage `json:"before"`
	After  map[string]json.RawMessage `json:"after"`
}

// readDiff reads the NDJSON diff of dataset from..to.
func (p *proc) readDiff(t testing.TB, dataset string, from, to int64) []diffLine {
	t.Helper()
	path := fmt.Sprintf("/v1/datasets/%s/diff?from=%d&to=%d", url.PathEscape(dataset), from, to)
	r := p.mustCall(t, http.StatusOK, "GET", path, nil)
	var out []diffLine
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var l diffLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("GET %s: line %q: %v", path, sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// expectedChanges is the diff between two canonical tables, by key: op
// "insert", "update" or "delete".
func expectedChanges(before, after map[string]canonRow) map[string]string {
	ops := map[string]string{}
	for k, a := range after {
		b, ok := before[k]
		switch {
		case !ok:
			ops[k] = "insert"
		case rowDiff(b, a) != "":
			ops[k] = "update"
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			ops[k] = "delete"
		}
	}
	return ops
}

// checkDiff compares the diff endpoint's lines (and its stats_only counts)
// with the changes between the source tables before and after: the same
// keys with the same ops, in key order, before and after equal to the
// source rows. spec must know every column of both versions.
func (p *proc) checkDiff(t testing.TB, spec tableSpec, dataset string, from, to int64, before, after map[string]canonRow) map[string]string {
	t.Helper()
	what := fmt.Sprintf("diff %s %d..%d", dataset, from, to)
	want := expectedChanges(before, after)
	lines := p.readDiff(t, dataset, from, to)
	got := map[string]string{}
	last := ""
	var counts diffStats
	for i, l := range lines {
		k, err := httpKey(spec, l.Key)
		if err != nil {
			t.Errorf("%s: line %d: %v", what, i+1, err)
			continue
		}
		if i > 0 && !keyLess(last, k) {
			t.Errorf("%s: key %s after %s: not in key order", what, k, last)
		}
		last = k
		if _, dup := got[k]; dup {
			t.Errorf("%s: key %s listed twice", what, k)
		}
		got[k] = l.Op
		switch l.Op {
		case "insert":
			counts.Inserted++
		case "update":
			counts.Updated++
		case "delete":
			counts.Deleted++
		default:
			t.Errorf("%s: key %s: unknown op %q", what, k, l.Op)
		}
		if w := want[k]; w != l.Op {
			t.Errorf("%s: key %s: op %q, the source changed it as %q", what, k, l.Op, w)
			continue
		}
		checkSide := func(side string, raw map[string]json.RawMessage, src map[string]canonRow, present bool) {
			if !present {
				if raw != nil {
					t.Errorf("%s: key %s (%s) has a %q row", what, k, l.Op, side)
				}
				return
			}
			if raw == nil {
				t.Errorf("%s: key %s (%s) has no %q row", what, k, l.Op, side)
				return
			}
			r, err := httpRow(spec, raw)
			if err != nil {
				t.Errorf("%s: key %s %s: %v", what, k, side, err)
				return
			}
			if d := rowDiff(src[k], r); d != "" {
				t.Errorf("%s: key %s %s row: %s", what, k, side, d)
			}
		}
		checkSide("before", l.Before, before, l.Op != "insert")
		checkSide("after", l.After, after, l.Op != "delete")
	}
	for k, op := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("%s: the source %s of key %s is not listed", what, op, k)
		}
	}
	var st diffStats
	p.jsonCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/%s/diff?from=%d&to=%d&stats_only=true", url.PathEscape(dataset), from, to), nil, &st)
	counts.From, counts.To = from, to
	if st != counts {
		t.Errorf("%s: stats_only %+v, the NDJSON diff has %+v", what, st, counts)
	}
	return want
}

// countOps counts ops of a change map.
func countOps(ops map[string]string) (ins, upd, del int) {
	for _, op := range ops {
		switch op {
		case "insert":
			ins++
		case "update":
			upd++
		case "delete":
			del++
		}
	}
	return
}
