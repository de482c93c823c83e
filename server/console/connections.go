package console

import (
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/server"
)

// The connection pages: the list, one connection with its resources, the
// test, the create form and drop. Options come from the service redacted
// (adapters.N4): no page ever holds a secret, and a refused form is shown
// again with its secret fields empty.

// connections answers GET /ui/connections.
func (c *console) connections(w http.ResponseWriter, r *http.Request, v viewer) error {
	return c.render(w, r, http.StatusOK, "connections", v, c.s.ConnectionsInGrant(v.Grant, c.s.svc.ListConnections()))
}

// connectionView is one connection's page.
type connectionView struct {
	Conn      adapters.Connection
	Options   []optionItem
	Resources []adapters.Resource
	// Problem says why the resources could not be listed.
	Problem string
}

// optionItem is one option of a connection, as shown.
type optionItem struct {
	Key, Value string
}

// connection answers GET /ui/connections/{name}: its definition (secrets
// redacted) and its resources.
func (c *console) connection(w http.ResponseWriter, r *http.Request, v viewer) error {
	conn, err := c.s.svc.GetConnection(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	view := connectionView{Conn: c.s.ConnectionInGrant(v.Grant, conn)}
	for k, val := range conn.Options {
		view.Options = append(view.Options, optionItem{Key: k, Value: optionText(val)})
	}
	sort.Slice(view.Options, func(i, j int) bool { return view.Options[i].Key < view.Options[j].Key })
	if ok, _ := v.May("GET /v1/connections/{name}/resources"); ok {
		rs, err := c.s.svc.Resources(r.Context(), conn.Name)
		if err != nil {
			view.Problem = server.ProblemFor(err).Detail
		}
		view.Resources = rs
	}
	return c.render(w, r, http.StatusOK, "connection", v, view)
}

// optionText writes an option value as the JSON API shows it, maps as
// k=v pairs.
func optionText(v any) string {
	switch x := v.(type) {
	case map[string]string:
		var parts []string
		for k, s := range x {
			parts = append(parts, k+"="+s)
		}
		sort.Strings(parts)
		return strings.Join(parts, ", ")
	case map[string]any:
		var parts []string
		for k, s := range x {
			parts = append(parts, k+"="+optionText(s))
		}
		sort.Strings(parts)
		return strings.Join(parts, ", ")
	case nil:
		return ""
	}
	b, err := jsonText(v)
	if err != nil {
		return "?"
	}
	return b
}

// testView is a connection test's result.
type testView struct {
	Name   string
	Result adapters.TestResult
}

// testConnection answers POST /ui/connections/{name}/test: the result as
// a fragment for htmx, or the connections page around it.
func (c *console) testConnection(w http.ResponseWriter, r *http.Request, v viewer) error {
	name := r.PathValue("name")
	res, err := c.s.svc.TestConnection(r.Context(), name)
	if err != nil {
		return err
	}
	return c.fragment(w, http.StatusOK, "connections", "test", v, testView{Name: name, Result: res})
}

// dropConnection answers POST /ui/connections/{name}/delete (form: force).
func (c *console) dropConnection(w http.ResponseWriter, r *http.Request, v viewer) error {
	name := r.PathValue("name")
	if err := c.s.svc.DropConnection(r.Context(), name, r.PostFormValue("force") != ""); err != nil {
		return err
	}
	c.s.log.Info("connection dropped", "connection", name, server.TokenAttr(v.Name), "via", "console")
	http.Redirect(w, r, "/ui/connections", http.StatusSeeOther)
	return nil
}

// connectionFormView is the create form: the fields of the chosen type.
type connectionFormView struct {
	Name, Type, Sharing string
	Types               []adapters.ConnectionType
	// Fields are the chosen type's options with the values given.
	Fields []optionField
	// Extra holds further options as "key=value" lines (pool limits).
	Extra   string
	Problem *server.Problem
}

// optionField is one option input of the form.
type optionField struct {
	adapters.OptionDef
	Value  string
	Secret bool
}

// newConnectionForm answers GET /ui/connections/new?type=: the form, with
// the fields of the type (mysql by default). The type select fetches the
// form again with htmx when it changes.
func (c *console) newConnectionForm(w http.ResponseWriter, r *http.Request, v viewer) error {
	view := c.connectionForm(r.URL.Query().Get("type"), nil)
	view.Name = r.URL.Query().Get("name")
	return c.render(w, r, http.StatusOK, "connection_form", v, view)
}

// connectionForm builds the form of type typ with the values of form
// (nil: empty); secret fields are never filled back.
func (c *console) connectionForm(typ string, form url.Values) connectionFormView {
	view := connectionFormView{Types: adapters.ConnectionTypes(), Type: typ, Sharing: string(adapters.SharingShared)}
	if view.Type == "" {
		view.Type = "mysql"
	}
	secret := map[string]bool{}
	for _, t := range view.Types {
		if t.Name != view.Type {
			continue
		}
		for _, d := range t.Options {
			secret[d.Key] = d.Type == adapters.OptSecret
			if d.Type == adapters.OptStringMap {
				continue // as key=value lines in Extra
			}
			f := optionField{OptionDef: d, Secret: d.Type == adapters.OptSecret}
			if form != nil && !f.Secret {
				f.Value = strings.TrimSpace(form.Get("opt." + d.Key))
			}
			view.Fields = append(view.Fields, f)
		}
	}
	if form != nil {
		view.Name = strings.TrimSpace(form.Get("name"))
		view.Sharing = form.Get("sharing")
		view.Extra = extraWithoutSecrets(form.Get("extra"), secret)
	}
	return view
}

// extraWithoutSecrets is the extra options' text to fill back, each line
// of a secret option (password=...) with its value left out, as the
// secret fields are left empty, and a line that is no key=value (which
// parseExtraOptions refuses, and which may be a secret in another shape,
// password: ...) left empty: a secret is never sent back.
func extraWithoutSecrets(text string, secret map[string]bool) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		k, _, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		switch t := strings.TrimSpace(line); {
		case t == "" || strings.HasPrefix(t, "#"):
		case !ok || k == "":
			lines[i] = ""
		case secret[k]:
			lines[i] = k + "="
		}
	}
	return strings.Join(lines, "\n")
}

// createConnection answers POST /ui/connections, as POST /v1/connections
// does: options from the type's fields and the extra lines; a refusal
// shows the form again.
func (c *console) createConnection(w http.ResponseWriter, r *http.Request, v viewer) error {
	typ := strings.TrimSpace(r.PostFormValue("type"))
	spec := api.Connection{Name: strings.TrimSpace(r.PostFormValue("name")), Type: typ,
		Sharing: r.PostFormValue("sharing"), Options: map[string]any{}}
	for k, vals := range r.PostForm {
		if key, ok := strings.CutPrefix(k, "opt."); ok && len(vals) > 0 && strings.TrimSpace(vals[0]) != "" {
			spec.Options[key] = strings.TrimSpace(vals[0])
		}
	}
	err := parseExtraOptions(r.PostFormValue("extra"), spec.Options)
	if err == nil && spec.Name == "" {
		err = server.BadField("body.name", "give the connection a name")
	}
	if err == nil {
		_, err = c.s.svc.CreateConnection(r.Context(), spec)
	}
	if err != nil {
		p := server.ProblemFor(err)
		if p.Status >= 500 {
			return err
		}
		formFields(&p)
		view := c.connectionForm(typ, r.PostForm)
		view.Problem = &p
		return c.render(w, r, p.Status, "connection_form", v, view)
	}
	c.s.log.Info("connection created", "connection", spec.Name, "type", typ, server.TokenAttr(v.Name), "via", "console")
	http.Redirect(w, r, "/ui/connections/"+url.PathEscape(spec.Name), http.StatusSeeOther)
	return nil
}

// parseExtraOptions adds the "key=value" lines of text to opts; a
// "params.NAME=value" line sets one entry of the params map.
func parseExtraOptions(text string, opts map[string]any) error {
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, val, ok := strings.Cut(line, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if !ok || k == "" {
			// The line is not quoted: it may hold a secret in another
			// shape (password: ...).
			return server.BadField("extra", "line %d: want key=value", i+1)
		}
		if name, isParam := strings.CutPrefix(k, "params."); isParam {
			m, _ := opts["params"].(map[string]any)
			if m == nil {
				m = map[string]any{}
				opts["params"] = m
			}
			m[name] = val
			continue
		}
		opts[k] = val
	}
	return nil
}

// formFields names the fields p blames as the console's forms do: by the
// name of their input ("schedule"), not of the API body's field
// ("body.schedule"), and drops the field a detail begins by naming
// (`option "options.port": want ...`), which the page shows beside it
// already, as the CLI does.
func formFields(p *server.Problem) {
	p.Detail = withoutField(p.Detail, p.Field)
	p.Field = strings.TrimPrefix(p.Field, "body.")
	for i := range p.Errors {
		v := &p.Errors[i]
		v.Detail = withoutField(v.Detail, v.Field)
		v.Field = strings.TrimPrefix(v.Field, "body.")
	}
}

// withoutField is detail without the field it begins by naming
// ("body.name: ...", `option "options.port": ...`); "" names none.
func withoutField(detail, field string) string {
	if field == "" {
		return detail
	}
	for _, prefix := range []string{field + ": ", `option "` + field + `": `} {
		if d, ok := strings.CutPrefix(detail, prefix); ok {
			return d
		}
	}
	return detail
}
