package console

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

// The dataset pages: the list, one dataset with its versions, the rows
// browser, the diff, and the tag, untag and rollback actions.

// datasetItem is one line of the datasets page.
type datasetItem struct {
	Info    snapshot.DatasetInfo
	Adapter *adapters.Adapter
	LastRun *adapters.RunRecord
	Fresh   freshness
	Spark   *sparkline
}

// datasets answers GET /ui/: every dataset with its current version, age,
// rows, last run, freshness and a sparkline of rows over versions.
func (c *console) datasets(w http.ResponseWriter, r *http.Request, v viewer) error {
	ctx := r.Context()
	infos, err := c.s.db.Datasets(ctx)
	if err != nil {
		return err
	}
	infos = server.FilterGranted(v.Grant, infos, func(d snapshot.DatasetInfo) string { return d.Name })
	as := c.s.svc.ListAdapters()
	now := c.s.now()
	items := make([]datasetItem, 0, len(infos))
	for _, d := range infos {
		it := datasetItem{Info: d, Adapter: adapterOf(as, d.Name)}
		if it.Adapter != nil {
			if runs, err := c.s.svc.ListRuns(ctx, it.Adapter.Name, 1); err == nil && len(runs) > 0 {
				it.LastRun = &runs[0]
			}
		}
		it.Fresh = freshnessOf(d.CurrentInfo, it.Adapter, now)
		if vs, err := c.s.db.Versions(ctx, d.Name); err == nil {
			it.Spark = rowsSparkline(vs)
		}
		items = append(items, it)
	}
	return c.render(w, r, http.StatusOK, "datasets", v, items)
}

// versionItem is one version of the dataset page's timeline.
type versionItem struct {
	snapshot.VersionInfo
	// Previous is the next older kept version, 0 for the oldest.
	Previous int64
}

// tableItem is one table of the dataset page, of a dataset of several
// tables: the current version's, with its rows over the kept versions.
type tableItem struct {
	snapshot.TableInfo
	Spark *sparkline
}

// tablesOf lists the tables of the current version of vs (newest first),
// each with the sparkline of its rows over the versions that hold it.
func tablesOf(vs []snapshot.VersionInfo) []tableItem {
	var out []tableItem
	for _, vi := range vs {
		if !vi.Current {
			continue
		}
		for _, t := range vi.Tables {
			var held []snapshot.VersionInfo
			for _, o := range vs {
				if ot, ok := o.Table(t.Name); ok && ot.Number == t.Number {
					held = append(held, snapshot.VersionInfo{Version: o.Version, Stats: ot.Stats})
				}
			}
			out = append(out, tableItem{TableInfo: t, Spark: rowsSparkline(held)})
		}
	}
	return out
}

// datasetView is the dataset page.
type datasetView struct {
	Info     snapshot.DatasetInfo
	Tables   []tableItem
	Versions []versionItem
	Adapter  *adapters.Adapter
	Runs     []adapters.RunRecord
	Fresh    freshness
	Spark    *sparkline
	// TagPattern and TagTitle are the pattern of a tag name and what it
	// says (the API's TagName), for the tag inputs.
	TagPattern, TagTitle string
	// Problem is a refused tag, shown on the page with the name given
	// (TagValue) in the input of the version it was for (TagVersion).
	Problem    *server.Problem
	TagVersion int64
	TagValue   string
}

// dataset answers GET /ui/datasets/{dataset}.
func (c *console) dataset(w http.ResponseWriter, r *http.Request, v viewer) error {
	return c.datasetPage(w, r, v, http.StatusOK, datasetView{})
}

// datasetPage renders the dataset page with status; view holds what the
// caller adds (a refused tag).
func (c *console) datasetPage(w http.ResponseWriter, r *http.Request, v viewer, status int, view datasetView) error {
	ctx := r.Context()
	ds := r.PathValue("dataset")
	d, err := c.s.db.Dataset(ctx, ds)
	if err != nil {
		return err
	}
	vs, err := c.s.db.Versions(ctx, ds)
	if err != nil {
		return err
	}
	view.Info, view.Adapter, view.Spark = d, adapterOf(c.s.svc.ListAdapters(), ds), rowsSparkline(vs)
	view.Tables = tablesOf(vs)
	view.TagPattern, view.TagTitle = c.s.InputPattern("TagName")
	for i, vi := range vs {
		it := versionItem{VersionInfo: vi}
		if i+1 < len(vs) {
			it.Previous = vs[i+1].Version
		}
		view.Versions = append(view.Versions, it)
	}
	if view.Adapter != nil {
		view.Runs, _ = c.s.svc.ListRuns(ctx, view.Adapter.Name, 5)
	}
	view.Fresh = freshnessOf(d.CurrentInfo, view.Adapter, c.s.now())
	return c.render(w, r, status, "dataset", v, view)
}

// rowsPageSize is the number of rows of one page of the rows browser.
const rowsPageSize = 50

// keyField is one key column input of the rows browser.
type keyField struct {
	Name, Value string
}

// rowsView is the rows browser.
type rowsView struct {
	Dataset  string
	Table    string // of a dataset of several tables
	Version  snapshot.VersionInfo
	Versions []int64
	Columns  []string
	KeyCols  map[string]bool
	Rows     [][]valueCell
	Key      []keyField
	// Mode is "prefix" (rows whose key starts with the given values) or
	// "start" (rows from that key on).
	Mode string
	// Next is the query string of the next page, "" on the last.
	Next template.URL
	// Query is the query string of this page's search, for links.
	Query template.URL
	// Problem is a search refused (a key value its column cannot hold),
	// shown above the form with the values typed, instead of the rows.
	Problem *server.Problem
}

// rows answers GET /ui/datasets/{dataset}/rows: a page of rows at one
// version (version=, default the current one; every link then names it)
// of the dataset or of its table (table=),
// from a key (mode=start) or with a key prefix (mode=prefix), one key=
// per key column in key order; page_token continues.
func (c *console) rows(w http.ResponseWriter, r *http.Request, v viewer) error {
	ctx := r.Context()
	ds := r.PathValue("dataset")
	q := r.URL.Query()
	var at snapshot.At
	if s := q.Get("version"); s != "" {
		n, err := server.ParseVersion("version", s)
		if err != nil {
			return err
		}
		at.Version = n
	}
	tok := q.Get("page_token")
	if tok != "" {
		pinned, err := snapshot.DecodePageToken(ds, tok)
		if err != nil {
			return err
		}
		at = snapshot.At{Version: pinned}
	}
	table := q.Get("table")
	rd, err := c.s.ReaderOf(ctx, ds, table, table != "", at)
	if table == "" && errors.Is(err, snapshot.ErrTableRequired) {
		// The dataset's page lists its tables, each with its rows.
		http.Redirect(w, r, "/ui/datasets/"+url.PathEscape(ds)+"#tables", http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	defer rd.Close()
	info := rd.Version()
	view := rowsView{Dataset: ds, Table: table, Version: info, Mode: q.Get("mode"), KeyCols: map[string]bool{}}
	if view.Mode != "start" {
		view.Mode = "prefix"
	}
	opts := snapshot.ScanOptions{Limit: rowsPageSize, PageToken: tok}
	keyVals := q["key"]
	var given []string
	for i, k := range info.Schema.Key {
		view.KeyCols[k] = true
		f := keyField{Name: k}
		if i < len(keyVals) {
			f.Value = keyVals[i]
		}
		view.Key = append(view.Key, f)
	}
	// The leading key columns given, up to the first empty one.
	for _, f := range view.Key {
		if f.Value == "" {
			break
		}
		given = append(given, f.Value)
	}
	if len(given) > 0 {
		k, err := server.ParseKeyPrefix(info.Schema, given)
		if err != nil {
			// The page again with what was typed and why it was
			// refused, rather than an error page without the form.
			p := server.ProblemFor(server.WithField(err, "key"))
			view.Problem = &p
			c.rowsVersions(ctx, ds, &view)
			return c.render(w, r, p.Status, "rows", v, view)
		}
		if view.Mode == "start" {
			opts.Start = k
		} else {
			opts.Prefix = k
		}
	}
	it, err := rd.Scan(ctx, opts)
	if err != nil {
		return err
	}
	defer it.Close()
	view.Columns = server.SelectedColumns(nil, info.Schema)
	for it.Next() {
		row := it.Row()
		cells := make([]valueCell, len(row.Values))
		for i, val := range row.Values {
			cells[i] = cellOf(val)
		}
		view.Rows = append(view.Rows, cells)
	}
	if err := it.Err(); err != nil {
		return err
	}
	search := url.Values{"version": {strconv.FormatInt(info.Version, 10)}, "mode": {view.Mode}}
	if table != "" {
		search.Set("table", table)
	}
	for _, g := range given {
		search.Add("key", g)
	}
	view.Query = template.URL(search.Encode()) // url.Values.Encode escapes every part
	if next := it.NextPageToken(); next != "" {
		nq := url.Values{}
		for k, vs := range search {
			nq[k] = vs
		}
		nq.Set("page_token", next)
		view.Next = template.URL(nq.Encode())
	}
	c.rowsVersions(ctx, ds, &view)
	return c.render(w, r, http.StatusOK, "rows", v, view)
}

// rowsVersions lists the kept versions of ds in view, for the search
// form's version choice.
func (c *console) rowsVersions(ctx context.Context, ds string, view *rowsView) {
	if vs, err := c.s.db.Versions(ctx, ds); err == nil {
		for _, vi := range vs {
			view.Versions = append(view.Versions, vi.Version)
		}
	}
}

// diffShown is the most changes the diff page lists; the counts cover
// them all and the API streams every one.
const diffShown = 500

// diffCell is one column of one changed row.
type diffCell struct {
	Column        string
	Before, After valueCell
	// HasBefore and HasAfter say whether the row has the column on each
	// side.
	HasBefore, HasAfter bool
	Changed             bool
}

// diffRow is one changed row.
type diffRow struct {
	Op    snapshot.ChangeOp
	Key   string
	Cells []diffCell
	// Changed names an update's changed columns, shown beside the key so
	// that they are seen without scrolling a wide table.
	Changed []string
}

// diffView is the diff page.
type diffView struct {
	Dataset string
	Table   string // of a dataset of several tables
	// Tables are the counts of every table, on the page of a dataset of
	// several tables that names none: no rows are then shown.
	Tables   []snapshot.TableDiffStats
	From, To int64
	Versions []snapshot.VersionInfo
	Stats    snapshot.DiffStats
	Columns  []string
	Rows     []diffRow
	More     bool
	// Changed is every column an update shown changed, in column order.
	Changed []string
	// Problem explains why no diff is shown (no two versions yet).
	Problem string
}

// diff answers GET /ui/datasets/{dataset}/diff?from=&to=: the counts and
// the changes (the first diffShown) between two kept versions, bounds as
// the API takes them (DiffRange); updates mark their changed columns.
// table= names a table of a dataset of several tables; without it, such
// a dataset shows each table's counts.
func (c *console) diff(w http.ResponseWriter, r *http.Request, v viewer) error {
	ctx := r.Context()
	ds := r.PathValue("dataset")
	vs, err := c.s.db.Versions(ctx, ds)
	if err != nil {
		return err
	}
	table := r.URL.Query().Get("table")
	view := diffView{Dataset: ds, Table: table, Versions: vs}
	q := url.Values{}
	for _, k := range []string{"from", "to"} {
		if s := r.URL.Query().Get(k); s != "" {
			q.Set(k, s)
		}
	}
	from, to, err := c.s.DiffRange(ctx, q, ds)
	if err != nil {
		if len(vs) < 2 && q.Get("from") == "" {
			view.Problem = "A diff needs two kept versions; this dataset has " + strconv.Itoa(len(vs)) + "."
			return c.render(w, r, http.StatusOK, "diff", v, view)
		}
		return err
	}
	view.From, view.To = from, to
	schemaOf := func(vi snapshot.VersionInfo) snapshot.Schema {
		t, _ := vi.Table(table)
		return t.Schema
	}
	switch {
	case table != "":
		view.Stats, err = c.s.db.TableDiffCounts(ctx, ds, table, from, to)
	default:
		if view.Tables, err = c.s.db.DiffTables(ctx, ds, from, to); err == nil && len(view.Tables) == 1 && view.Tables[0].Table == "" {
			view.Stats, view.Tables = view.Tables[0].DiffStats, nil
			schemaOf = func(vi snapshot.VersionInfo) snapshot.Schema { return vi.Schema }
		}
	}
	if err != nil {
		return err
	}
	if view.Tables != nil {
		for _, t := range view.Tables {
			view.Stats.Inserted += t.Inserted
			view.Stats.Updated += t.Updated
			view.Stats.Deleted += t.Deleted
		}
		return c.render(w, r, http.StatusOK, "diff", v, view)
	}
	for _, vi := range vs {
		if vi.Version == to {
			view.Columns = server.SelectedColumns(nil, schemaOf(vi))
		}
	}
	for _, vi := range vs {
		if vi.Version == from {
			for _, col := range server.SelectedColumns(nil, schemaOf(vi)) {
				if !slices.Contains(view.Columns, col) {
					view.Columns = append(view.Columns, col)
				}
			}
		}
	}
	it, err := c.s.Changes(ctx, ds, table, table != "", from, to)
	if err != nil {
		return err
	}
	defer it.Close()
	for it.Next() {
		if len(view.Rows) == diffShown {
			view.More = true
			break
		}
		view.Rows = append(view.Rows, diffRowOf(it.Change(), view.Columns))
	}
	for _, col := range view.Columns {
		if slices.ContainsFunc(view.Rows, func(r diffRow) bool { return slices.Contains(r.Changed, col) }) {
			view.Changed = append(view.Changed, col)
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "diff", v, view)
}

// diffRowOf lays one change out over columns.
func diffRowOf(ch snapshot.Change, columns []string) diffRow {
	row := diffRow{Op: ch.Op, Key: keyText(ch.Key)}
	if ch.Op == snapshot.OpUpdate {
		for _, col := range columns { // in the table's order
			if slices.Contains(ch.Changed, col) {
				row.Changed = append(row.Changed, col)
			}
		}
	}
	side := func(rw *snapshot.Row, col string) (valueCell, bool) {
		if rw == nil {
			return valueCell{}, false
		}
		if i := slices.Index(rw.Columns, col); i >= 0 {
			return cellOf(rw.Values[i]), true
		}
		return valueCell{}, false
	}
	for _, col := range columns {
		dc := diffCell{Column: col, Changed: slices.Contains(ch.Changed, col)}
		dc.Before, dc.HasBefore = side(ch.Before, col)
		dc.After, dc.HasAfter = side(ch.After, col)
		row.Cells = append(row.Cells, dc)
	}
	return row
}

// tag answers POST /ui/datasets/{dataset}/tags (form: tag, version): tags
// the version, as PUT /v1/datasets/{dataset}/tags/{tag} does.
func (c *console) tag(w http.ResponseWriter, r *http.Request, v viewer) error {
	ds := r.PathValue("dataset")
	tag := strings.TrimSpace(r.PostFormValue("tag"))
	ver, err := server.ParseVersion("version", r.PostFormValue("version"))
	if err != nil {
		return err
	}
	if tag == "" {
		err = server.BadField("tag", "give the tag a name")
	} else {
		err = c.s.db.Tag(r.Context(), ds, tag, ver)
	}
	if err != nil {
		// A refused name or version comes back to the dataset page, the
		// problem shown there; a dataset that is gone is an error page.
		p := server.ProblemFor(err)
		if p.Status >= 500 || p.Status == http.StatusNotFound {
			return err
		}
		if p.Field == "" {
			p.Field = "tag"
		}
		return c.datasetPage(w, r, v, p.Status, datasetView{Problem: &p, TagVersion: ver, TagValue: tag})
	}
	c.s.log.Info("dataset tagged", "dataset", ds, "tag", tag, "version", ver, server.TokenAttr(v.Name), "via", "console")
	http.Redirect(w, r, "/ui/datasets/"+url.PathEscape(ds), http.StatusSeeOther)
	return nil
}

// untag answers POST /ui/datasets/{dataset}/tags/{tag}/delete.
func (c *console) untag(w http.ResponseWriter, r *http.Request, v viewer) error {
	ds, tag := r.PathValue("dataset"), r.PathValue("tag")
	if err := c.s.db.Untag(r.Context(), ds, tag); err != nil {
		return err
	}
	c.s.log.Info("dataset untagged", "dataset", ds, "tag", tag, server.TokenAttr(v.Name), "via", "console")
	http.Redirect(w, r, "/ui/datasets/"+url.PathEscape(ds), http.StatusSeeOther)
	return nil
}

// rollbackView is the rollback confirmation: the target and the current
// version (snapshot.DB.Rollback commits a new version with the target's
// content; the versions after it stay).
type rollbackView struct {
	Dataset string
	Target  snapshot.VersionInfo
	Current int64
	// Adapter feeds the dataset (nil for none): its next run reads the
	// source again and undoes the rollback unless the source was set
	// right too, as the CLI's question says (docs/cli.md).
	Adapter *adapters.Adapter
}

// rollbackConfirm answers GET /ui/datasets/{dataset}/rollback?version=N:
// what a rollback to N will do, and the button that does it.
func (c *console) rollbackConfirm(w http.ResponseWriter, r *http.Request, v viewer) error {
	ctx := r.Context()
	ds := r.PathValue("dataset")
	ver, err := server.ParseVersion("version", r.URL.Query().Get("version"))
	if err != nil {
		return err
	}
	target, err := c.s.db.VersionInfo(ctx, ds, ver)
	if err != nil {
		return err
	}
	d, err := c.s.db.Dataset(ctx, ds)
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "rollback", v, rollbackView{Dataset: ds, Target: target, Current: d.Current,
		Adapter: adapterOf(c.s.svc.ListAdapters(), ds)})
}

// rollback answers POST /ui/datasets/{dataset}/rollback (form: version),
// as POST /v1/datasets/{dataset}/rollback does.
func (c *console) rollback(w http.ResponseWriter, r *http.Request, v viewer) error {
	ds := r.PathValue("dataset")
	ver, err := server.ParseVersion("version", r.PostFormValue("version"))
	if err != nil {
		return err
	}
	info, err := c.s.db.Rollback(r.Context(), ds, ver)
	if err != nil {
		return err
	}
	c.s.log.Info("dataset rolled back", "dataset", ds, "version", info.Version, "restored_from", info.RestoredFrom, server.TokenAttr(v.Name), "via", "console")
	http.Redirect(w, r, "/ui/datasets/"+url.PathEscape(ds), http.StatusSeeOther)
	return nil
}
