package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/server"
)

// The adapter pages: the list with schedules and last runs, the create
// and edit form, delete, and run now.

// adapterItem is one line of the adapters page.
type adapterItem struct {
	adapters.Adapter
	Runs []adapters.RunRecord
}

// adaptersView is the adapters page: the list and, right after a save
// that was accepted unchecked, the adapter saved and its warnings.
type adaptersView struct {
	Items    []adapterItem
	Saved    string
	Warnings []string
}

// adapters answers GET /ui/adapters.
func (c *console) adapters(w http.ResponseWriter, r *http.Request, v viewer) error {
	return c.adaptersPage(w, r, v, adaptersView{})
}

// adaptersPage renders the adapters page with view's Saved and Warnings.
func (c *console) adaptersPage(w http.ResponseWriter, r *http.Request, v viewer, view adaptersView) error {
	as := server.FilterGranted(v.Grant, c.s.svc.ListAdapters(), server.AdapterDataset)
	view.Items = make([]adapterItem, 0, len(as))
	for _, a := range as {
		runs, err := c.s.svc.ListRuns(r.Context(), a.Name, 5)
		if err != nil {
			return err
		}
		view.Items = append(view.Items, adapterItem{Adapter: a, Runs: runs})
	}
	return c.render(w, r, http.StatusOK, "adapters", v, view)
}

// adapterFields are the adapter form's values, as text.
type adapterFields struct {
	Name, Connection, Resource, Dataset, KeyColumns, Schedule string
	TTL, MinVersions, MaxShrink, Retries, RetryBackoff        string
	Strategy, PartitionKey, TransferCompression               string
	// Resources, Include and Exclude are a dataset of several tables'
	// lists, items separated by commas; Parallelism its connections;
	// TableKeys its table_keys, "table: column, column" entries
	// separated by semicolons (api.Adapter.TableKeysText).
	Resources, Include, Exclude, Parallelism, TableKeys string
	AllowDroppedTables                                  bool
	// Notify is the notify list: webhook names separated by commas;
	// empty for notify.default, "[]" for none.
	Notify                                                         string
	AllowEmpty, RunOnStart, EmbedJSON, CommitUnchanged, AuditReads bool
	// SourceOptions are the source_options given, by key, as text: a
	// list's items separated by commas.
	SourceOptions map[string]string
}

// readOptionField is one field of the form's source options: a read
// option of the connection types that declare it (ConnectionType's
// ReadOptions), with its value.
type readOptionField struct {
	adapters.OptionDef
	Types []string
	Value string
}

// readOptionDefs returns the read options of every connection type by key,
// the first declaration of a key winning, in the types' order, and the
// types that declare each.
func readOptionDefs() ([]adapters.OptionDef, map[string][]string) {
	var defs []adapters.OptionDef
	types := map[string][]string{}
	for _, ct := range adapters.ConnectionTypes() {
		for _, d := range ct.ReadOptions {
			if types[d.Key] == nil {
				defs = append(defs, d)
			}
			types[d.Key] = append(types[d.Key], ct.Name)
		}
	}
	return defs, types
}

// readOptionFields are the form's source option fields with f's values.
func readOptionFields(f adapterFields) []readOptionField {
	defs, types := readOptionDefs()
	out := make([]readOptionField, 0, len(defs))
	for _, d := range defs {
		out = append(out, readOptionField{OptionDef: d, Types: types[d.Key], Value: f.SourceOptions[d.Key]})
	}
	return out
}

// sourceOptionsText is an adapter's source_options as the form's text.
func sourceOptionsText(opts map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range opts {
		switch l := v.(type) {
		case []any:
			parts := make([]string, len(l))
			for i, x := range l {
				parts[i] = fmt.Sprint(x)
			}
			out[k] = strings.Join(parts, ", ")
		case []string:
			out[k] = strings.Join(l, ", ")
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}

// strategyOption is one choice of the form's strategy select.
type strategyOption struct{ Name, Note string }

// strategyOptions are the strategies the form offers, the default first,
// each with what it does (docs/cluster.md).
var strategyOptions = []strategyOption{
	{string(adapters.StrategyLocal), "scheduled runs on the adapter's owner, manual runs where asked"},
	{string(adapters.StrategyRoundRobin), "successive runs rotate over the active nodes"},
	{string(adapters.StrategySingleNode), "every run on the one node the cluster picks"},
	{string(adapters.StrategyPartitionByKey), "one run's rows spread over the nodes by the partition key"},
}

// adapterFormView is the adapter form.
type adapterFormView struct {
	// Edit is true when the form replaces an existing adapter.
	Edit        bool
	F           adapterFields
	ReadOptions []readOptionField
	Connections []adapters.Connection
	Resources   resourceOptionsView
	Strategies  []strategyOption
	Problem     *server.Problem
}

// newAdapterForm answers GET /ui/adapters/new.
func (c *console) newAdapterForm(w http.ResponseWriter, r *http.Request, v viewer) error {
	f := adapterFields{Connection: r.URL.Query().Get("connection"), Strategy: string(adapters.StrategyLocal)}
	return c.adapterForm(w, r, v, http.StatusOK, false, f, nil)
}

// editAdapterForm answers GET /ui/adapters/{name}/edit.
func (c *console) editAdapterForm(w http.ResponseWriter, r *http.Request, v viewer) error {
	a, err := c.s.svc.GetAdapter(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	f := adapterFields{
		Name: a.Name, Connection: a.Connection, Resource: a.Resource, Dataset: a.Dataset,
		KeyColumns: strings.Join(a.KeyColumns, ", "), Schedule: a.Schedule,
		TTL: durationText(time.Duration(a.Retention.TTL)), AllowEmpty: a.Guard.AllowEmpty, RunOnStart: a.RunOnStart,
		EmbedJSON: a.EmbedJSON, CommitUnchanged: a.CommitUnchanged, AuditReads: a.AuditReads,
		RetryBackoff: durationText(time.Duration(a.RetryBackoff)), Strategy: a.Strategy,
		PartitionKey: strings.Join(a.PartitionKey, ", "), TransferCompression: a.TransferCompression,
		Notify: notifyText(a.Notify), SourceOptions: sourceOptionsText(a.SourceOptions),
		Resources: strings.Join(a.Resources, ", "), Include: strings.Join(a.Include, ", "), Exclude: strings.Join(a.Exclude, ", "),
		AllowDroppedTables: a.AllowDroppedTables, TableKeys: a.TableKeysText(),
	}
	if a.Parallelism != 0 {
		f.Parallelism = strconv.Itoa(a.Parallelism)
	}
	if a.Retention.MinVersions != 0 {
		f.MinVersions = strconv.Itoa(a.Retention.MinVersions)
	}
	if a.Guard.MaxShrink != 0 {
		f.MaxShrink = strconv.FormatFloat(a.Guard.MaxShrink, 'g', -1, 64)
	}
	if a.Retries != 0 {
		f.Retries = strconv.Itoa(a.Retries)
	}
	return c.adapterForm(w, r, v, http.StatusOK, true, f, nil)
}

// adapterForm renders the form with f, and p when a save was refused.
func (c *console) adapterForm(w http.ResponseWriter, r *http.Request, v viewer, status int, edit bool, f adapterFields, p *server.Problem) error {
	view := adapterFormView{Edit: edit, F: f, ReadOptions: readOptionFields(f), Connections: c.s.svc.ListConnections(), Strategies: strategyOptions, Problem: p}
	if f.Connection != "" {
		view.Resources = c.resourcesOf(r, f.Connection)
	}
	return c.render(w, r, status, "adapter_form", v, view)
}

// adapterFieldsOf reads the form of r.
func adapterFieldsOf(r *http.Request) adapterFields {
	g := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	defs, _ := readOptionDefs()
	opts := map[string]string{}
	for _, d := range defs {
		if v := g("source_options." + d.Key); v != "" {
			opts[d.Key] = v
		}
	}
	return adapterFields{
		SourceOptions: opts,
		Name:          g("name"), Connection: g("connection"), Resource: g("resource"), Dataset: g("dataset"),
		Resources: g("resources"), Include: g("include"), Exclude: g("exclude"), Parallelism: g("parallelism"),
		AllowDroppedTables: g("allow_dropped_tables") != "", TableKeys: g("table_keys"),
		KeyColumns: g("key_columns"), Schedule: g("schedule"), TTL: g("ttl"), MinVersions: g("min_versions"),
		MaxShrink: g("max_shrink"), Retries: g("retries"), RetryBackoff: g("retry_backoff"), Strategy: g("strategy"),
		PartitionKey: g("partition_key"), TransferCompression: g("transfer_compression"), Notify: g("notify"),
		AllowEmpty: g("allow_empty") != "", RunOnStart: g("run_on_start") != "",
		EmbedJSON: g("embed_json") != "", CommitUnchanged: g("commit_unchanged") != "", AuditReads: g("audit_reads") != "",
	}
}

// spec converts the form to an adapter spec through the wire schema
// (api.Adapter), so both paths apply the same conversion. Errors
// name the field as the API would ("body.retention.ttl").
func (f adapterFields) spec() (api.Adapter, error) {
	in := api.Adapter{Name: f.Name, Connection: f.Connection, Resource: f.Resource, Dataset: f.Dataset, Schedule: f.Schedule,
		Guard: api.Guard{AllowEmpty: f.AllowEmpty}, RunOnStart: f.RunOnStart, Strategy: f.Strategy,
		EmbedJSON: f.EmbedJSON, CommitUnchanged: f.CommitUnchanged, AuditReads: f.AuditReads,
		TransferCompression: f.TransferCompression}
	in.KeyColumns = columnList(f.KeyColumns)
	in.Resources, in.Include, in.Exclude = columnList(f.Resources), columnList(f.Include), columnList(f.Exclude)
	in.AllowDroppedTables = f.AllowDroppedTables
	var err error
	if in.TableKeys, err = tableKeysOf(f.TableKeys); err != nil {
		return api.Adapter{}, err
	}
	in.PartitionKey = columnList(f.PartitionKey)
	in.Notify = notifyList(f.Notify)
	if len(f.SourceOptions) > 0 {
		// A list's items are separated by commas; other values go as
		// text, which the option's parser takes (the API's JSON too).
		defs, _ := readOptionDefs()
		in.SourceOptions = map[string]any{}
		for _, d := range defs {
			if v, ok := f.SourceOptions[d.Key]; ok {
				if d.Type == adapters.OptStringList {
					in.SourceOptions[d.Key] = columnList(v)
				} else {
					in.SourceOptions[d.Key] = v
				}
			}
		}
	}
	if in.Retention.TTL, err = formDuration("body.retention.ttl", f.TTL); err != nil {
		return api.Adapter{}, err
	}
	if in.RetryBackoff, err = formDuration("body.retry_backoff", f.RetryBackoff); err != nil {
		return api.Adapter{}, err
	}
	if in.Retention.MinVersions, err = formInt("body.retention.min_versions", f.MinVersions, 0, 1<<31-1); err != nil {
		return api.Adapter{}, err
	}
	if in.Retries, err = formInt("body.retries", f.Retries, 0, 100); err != nil {
		return api.Adapter{}, err
	}
	if in.Parallelism, err = formInt("body.parallelism", f.Parallelism, 0, 64); err != nil {
		return api.Adapter{}, err
	}
	if f.MaxShrink != "" {
		x, err := strconv.ParseFloat(f.MaxShrink, 64)
		if err != nil || !(x >= 0 && x <= 1) { // ParseFloat takes "NaN"
			return api.Adapter{}, server.BadField("body.guard.max_shrink", "want a fraction from 0 to 1, got %q", f.MaxShrink)
		}
		in.Guard.MaxShrink = x
	}
	if in.Name == "" {
		return api.Adapter{}, server.BadField("body.name", "give the adapter a name")
	}
	return in, nil
}

// formDuration reads a duration field as the API does
// (api.ParseDuration): "" or "0" for none, never negative.
func formDuration(field, s string) (api.Duration, error) {
	d, err := api.ParseDuration(s)
	if err != nil {
		return 0, server.BadField(field, "%v, got %q", err, s)
	}
	return d, nil
}

// formInt reads an integer field within [lo, hi]; "" is 0.
func formInt(field, s string, lo, hi int) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, server.BadField(field, "want an integer from %d to %d, got %q", lo, hi, s)
	}
	return n, nil
}

// createAdapter answers POST /ui/adapters, as POST /v1/adapters does.
func (c *console) createAdapter(w http.ResponseWriter, r *http.Request, v viewer) error {
	return c.saveAdapter(w, r, v, false)
}

// replaceAdapter answers POST /ui/adapters/{name}, as PUT
// /v1/adapters/{name} does.
func (c *console) replaceAdapter(w http.ResponseWriter, r *http.Request, v viewer) error {
	return c.saveAdapter(w, r, v, true)
}

// saveAdapter creates or replaces the adapter of the form; a refusal
// shows the form again with the problem and the values given.
func (c *console) saveAdapter(w http.ResponseWriter, r *http.Request, v viewer, replace bool) error {
	f := adapterFieldsOf(r)
	if replace {
		f.Name = r.PathValue("name")
	}
	spec, err := f.spec()
	var saved adapters.Adapter
	if err == nil {
		err = c.s.ValidateAdapter(spec)
	}
	if err == nil {
		if replace {
			saved, _, err = c.s.svc.PutAdapter(r.Context(), spec)
		} else {
			saved, err = c.s.svc.CreateAdapter(r.Context(), spec)
		}
	}
	if err != nil {
		p := server.ProblemFor(err)
		if p.Status >= 500 {
			return err
		}
		formFields(&p)
		return c.adapterForm(w, r, v, p.Status, replace, f, &p)
	}
	c.s.log.Info("adapter saved", "adapter", spec.Name, "replace", replace, server.TokenAttr(v.Name), "via", "console")
	if len(saved.Warnings) > 0 {
		// Shown once, here: a redirect would lose them.
		return c.adaptersPage(w, r, v, adaptersView{Saved: spec.Name, Warnings: saved.Warnings})
	}
	http.Redirect(w, r, "/ui/adapters#adapter-"+url.PathEscape(spec.Name), http.StatusSeeOther)
	return nil
}

// deleteAdapter answers POST /ui/adapters/{name}/delete.
func (c *console) deleteAdapter(w http.ResponseWriter, r *http.Request, v viewer) error {
	name := r.PathValue("name")
	if err := c.s.svc.DeleteAdapter(r.Context(), name); err != nil {
		return err
	}
	c.s.log.Info("adapter deleted", "adapter", name, server.TokenAttr(v.Name), "via", "console")
	http.Redirect(w, r, "/ui/adapters", http.StatusSeeOther)
	return nil
}

// runAdapter answers POST /ui/adapters/{name}/run: starts a run (trigger
// "console"; forced past the guard with the form's force=true) and shows
// it; a run already going is shown instead.
func (c *console) runAdapter(w http.ResponseWriter, r *http.Request, v viewer) error {
	force := r.PostFormValue("force") == "true"
	rec, err := c.s.svc.StartRun(r.Context(), r.PathValue("name"), adapters.RunOptions{Trigger: "console", Force: force})
	if err != nil && !(errors.Is(err, adapters.ErrRunInProgress) && rec.ID != "") {
		return err
	}
	http.Redirect(w, r, "/ui/runs/"+url.PathEscape(rec.ID), http.StatusSeeOther)
	return nil
}

// resourceOptionsView is the resource list of the adapter form.
type resourceOptionsView struct {
	Connection string
	Resources  []adapters.Resource
	// Problem says why the list is empty, when it is because of an error.
	Problem string
}

// resourcesOf lists the resources of connection conn for the form; an
// error (source down) leaves the list empty and says why.
func (c *console) resourcesOf(r *http.Request, conn string) resourceOptionsView {
	view := resourceOptionsView{Connection: conn}
	if ok, _ := c.who(r).May("GET /v1/connections/{name}/resources"); !ok {
		return view
	}
	rs, err := c.s.svc.Resources(r.Context(), conn)
	if err != nil {
		view.Problem = server.ProblemFor(err).Detail
	}
	view.Resources = rs
	return view
}

// resourceOptions answers GET /ui/resources?connection=: the resource
// list of the adapter form for that connection (an htmx fragment).
func (c *console) resourceOptions(w http.ResponseWriter, r *http.Request, v viewer) error {
	conn := r.URL.Query().Get("connection")
	view := resourceOptionsView{Connection: conn}
	if conn != "" && !c.s.ConnectionGranted(v.Grant, conn) {
		return server.ConnectionNotFound(conn)
	}
	if conn != "" {
		view = c.resourcesOf(r, conn)
	}
	return c.fragment(w, http.StatusOK, "adapter_form", "resources-fragment", v, view)
}

// columnList splits a form's comma-separated column names.
func columnList(s string) []string {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// tableKeysOf reads the form of api.Adapter.TableKeysText. An entry
// without a colon is refused saying the form; one with a colon and no
// columns goes on, for the adapter's check to refuse naming it
// (table_keys.NAME), as it would in a body.
func tableKeysOf(s string) (map[string][]string, error) {
	var m map[string][]string
	for i, entry := range strings.Split(s, ";") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		name, cols, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, server.BadField("body.table_keys", "entry %d %q: want table: column, column (entries separated by semicolons)", i+1, strings.TrimSpace(entry))
		}
		if m == nil {
			m = map[string][]string{}
		}
		m[strings.TrimSpace(name)] = columnList(cols)
	}
	return m, nil
}

// notifyText is a notify list in the form: names separated by commas,
// "" when absent (notify.default) and "[]" when empty (none).
func notifyText(list []string) string {
	if list != nil && len(list) == 0 {
		return "[]"
	}
	return strings.Join(list, ", ")
}

// notifyList is the notify list of the form's text (notifyText).
func notifyList(s string) []string {
	if strings.TrimSpace(s) == "[]" {
		return []string{}
	}
	return columnList(s)
}
