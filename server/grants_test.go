package server

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/adapters"
)

func TestGrant_Patterns(t *testing.T) {
	g, err := ParseGrant([]string{"sales_*", "hr_public", "q?", "[ab]x", `lit\*`})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"sales_eu": true, "sales_": true, "sales": false, "xsales_eu": false,
		"hr_public": true, "hr_public2": false, "q1": true, "q12": false,
		"ax": true, "bx": true, "cx": false, "lit*": true, "litx": false,
	} {
		if got := g.Allows(name); got != want {
			t.Errorf("Allows(%q) = %v, want %v", name, got, want)
		}
	}
	if g.All() {
		t.Error("a grant with patterns holds every dataset")
	}
	for _, empty := range [][]string{nil, {}} {
		if g, err := ParseGrant(empty); err != nil || !g.All() || !g.Allows("anything") {
			t.Errorf("ParseGrant(%v) = %v, %v; want every dataset", empty, g, err)
		}
	}
	var zero Grant
	if !zero.All() || !zero.Allows("x") {
		t.Error("the zero grant does not hold every dataset")
	}
	for _, bad := range []string{"", "[", "sales_[", `x\`, "a/b", "[]a]"} {
		if err := CheckDatasetPattern(bad); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
	if _, err := ParseGrant([]string{"ok", "["}); err == nil || !strings.Contains(err.Error(), "datasets[1]") {
		t.Errorf("ParseGrant of a bad second pattern: %v, want one naming datasets[1]", err)
	}
}

func TestGrant_FilterLists(t *testing.T) {
	g, _ := ParseGrant([]string{"a*"})
	got := FilterGranted(g, []string{"a1", "b1", "a2", "ba"}, func(s string) string { return s })
	if fmt.Sprint(got) != "[a1 a2]" {
		t.Errorf("filtered %v, want [a1 a2]", got)
	}
	all := []string{"x", "y"}
	if got := FilterGranted(Grant{}, all, func(s string) string { return s }); fmt.Sprint(got) != "[x y]" {
		t.Errorf("the grant of every dataset filtered %v", got)
	}
	as := []adapters.Adapter{{}, {}}
	as[0].Name, as[0].Dataset = "p", "products"
	as[1].Name = "notes" // no dataset: its name
	gp, _ := ParseGrant([]string{"notes"})
	if got := FilterGranted(gp, as, AdapterDataset); len(got) != 1 || got[0].Name != "notes" {
		t.Errorf("adapters filtered %+v", got)
	}
}

// TestGrant_EveryOperation walks every operation of the OpenAPI document
// with a token limited to the dataset "products", against a server with
// two datasets, their adapters (each with a connection of its own) and
// runs: it reaches products' resources, and every answer about "notes"
// is the answer about one that does not exist, name substituted.
func TestGrant_EveryOperation(t *testing.T) {
	tokens := []Token{
		{Name: "root", Token: "root-token-0123456789", Role: RoleAdmin},
		{Name: "limited", Token: "limited-token-0123456789", Role: RoleAdmin, Datasets: []string{"products", "ghost_*"}},
	}
	f := newFixture(t, fixtureOpts{tokens: tokens, cluster: testCluster()})
	f.token = "root-token-0123456789"
	// The other dataset, memo, is read through a connection of its own,
	// which products' adapter does not use.
	f.must(201, "POST", "/v1/connections", fmt.Sprintf(`{"name":"shop2","type":"sqlite","options":{"path":%q}}`, f.srcPath))
	f.must(201, "POST", "/v1/adapters", `{"name":"memo","connection":"shop2","resource":"notes"}`)
	f.run("products")
	f.run("memo")
	runOf := func(adapter string) string {
		var l struct {
			Runs []adapters.RunRecord `json:"runs"`
		}
		f.must(200, "GET", "/v1/adapters/"+adapter+"/runs", "").json(t, &l)
		return l.Runs[0].ID
	}
	mine := map[string]string{"dataset": "products", "adapter": "products", "run": runOf("products"), "connection": "shop"}
	other := map[string]string{"dataset": "memo", "adapter": "memo", "run": runOf("memo"), "connection": "shop2"}
	// What does not exist: outside the grant, and inside it (ghost_*).
	missing := map[string]string{"dataset": "nothing", "adapter": "nothing", "run": "r0000000000000000009-0009", "connection": "nothing"}
	ghost := map[string]string{"dataset": "ghost_x", "adapter": "ghost_x", "run": "r0000000000000000009-0009", "connection": "ghost_x"}
	f.token = "limited-token-0123456789"

	var keys []string
	for k, op := range f.srv.api.ops {
		// Deletions last, of datasets and adapters after all: they end
		// what the others look at.
		prefix := "0 "
		switch {
		case op.path == "/v1/datasets/{dataset}" && op.method == "DELETE", op.path == "/v1/adapters/{name}" && op.method == "DELETE":
			prefix = "2 "
		case op.method == "DELETE":
			prefix = "1 "
		}
		keys = append(keys, prefix+k)
	}
	sort.Strings(keys)
	seen := map[grantKind]int{}
	for _, pk := range keys {
		k := pk[2:]
		op := f.srv.api.ops[k]
		seen[op.grant]++
		subject := map[grantKind]string{grantDataset: "dataset", grantAdapter: "adapter", grantRun: "run", grantConnection: "connection"}[op.grant]
		pathFor := func(names map[string]string) string {
			return pathParamRE.ReplaceAllStringFunc(op.path, func(p string) string {
				switch p {
				case "{dataset}":
					return url.PathEscape(names["dataset"])
				case "{name}":
					if strings.HasPrefix(op.path, "/v1/adapters") {
						return names["adapter"]
					}
					return names["connection"]
				case "{id}":
					if strings.HasPrefix(op.path, "/v1/runs") {
						return names["run"]
					}
					return "zz"
				case "{version}", "{key}":
					return "1"
				case "{tag}":
					return "t1"
				}
				return "zz"
			})
		}
		body := ""
		switch {
		case strings.HasSuffix(op.path, "/rollback"):
			body = `{"version":1}`
		case op.op.RequestBody != nil && op.method != "PUT" || op.method == "PUT" && !strings.Contains(op.path, "/tags/"):
			body = "{}"
		}
		switch op.grant {
		case grantNone:
			continue
		case grantAll:
			if r := f.do(op.method, pathFor(mine), body); r.status != 403 || r.problem(t).Code != "forbidden" {
				t.Errorf("%s with a limited token: %d %s, want 403 forbidden", k, r.status, r.body)
			}
			continue
		case grantList:
			continue // below
		}
		got := f.do(op.method, pathFor(other), body)
		for _, ref := range []map[string]string{missing, ghost} {
			want := f.do(op.method, pathFor(ref), body)
			sub := strings.ReplaceAll(string(want.body), ref[subject], other[subject])
			if got.status != want.status || string(got.body) != sub {
				t.Errorf("%s: %s outside the grant answered %d %s; %s that does not exist %d %s",
					k, other[subject], got.status, got.body, ref[subject], want.status, want.body)
			}
		}
		if got.status != 404 {
			t.Errorf("%s: %s outside the grant answered %d, want 404", k, other[subject], got.status)
		}
		r := f.do(op.method, pathFor(mine), body)
		if r.status == 403 || r.status == 404 && r.problem(t).Code == subject+"_not_found" {
			t.Errorf("%s: %s in the grant answered %d %s", k, mine[subject], r.status, r.body)
		}
	}
	for _, kind := range []grantKind{grantAll, grantList, grantDataset, grantAdapter, grantRun, grantConnection} {
		if seen[kind] == 0 {
			t.Errorf("no operation of grant kind %d", kind)
		}
	}

	// Lists show what the grant holds. (DELETE /v1/datasets/products ran
	// above: the root token runs products again.)
	// names lists the distinct values of field.
	names := func(path, list, field string) string {
		var l map[string][]map[string]any
		f.must(200, "GET", path, "").json(t, &l)
		var out []string
		for _, it := range l[list] {
			out = append(out, fmt.Sprint(it[field]))
		}
		sort.Strings(out)
		return strings.Join(slices.Compact(out), ",")
	}
	f.token = "root-token-0123456789"
	f.run("products")
	f.run("memo")
	if got := names("/v1/datasets", "datasets", "name"); got != "memo,products" {
		t.Fatalf("datasets of the root token: %s", got)
	}
	f.token = "limited-token-0123456789"
	for _, c := range []struct{ path, list, field, want string }{
		{"/v1/datasets", "datasets", "name", "products"},
		{"/v1/adapters", "adapters", "name", "products"},
		{"/v1/connections", "connections", "name", "shop"},
		{"/v1/runs", "runs", "dataset", "products"},
		{"/v1/runs?adapter=products", "runs", "dataset", "products"},
	} {
		if got := names(c.path, c.list, c.field); got != c.want {
			t.Errorf("%s lists %q, want %q", c.path, got, c.want)
		}
	}
	// shop is used by products and by notes, outside the grant: only
	// products is named.
	var shop struct {
		Adapters []string `json:"adapters"`
	}
	f.must(200, "GET", "/v1/connections/shop", "").json(t, &shop)
	if fmt.Sprint(shop.Adapters) != "[products]" {
		t.Errorf("the connection shop names the adapters %v to the limited token", shop.Adapters)
	}
	var conns struct {
		Connections []struct {
			Name     string   `json:"name"`
			Adapters []string `json:"adapters"`
		} `json:"connections"`
	}
	f.must(200, "GET", "/v1/connections", "").json(t, &conns)
	if len(conns.Connections) != 1 || fmt.Sprint(conns.Connections[0].Adapters) != "[products]" {
		t.Errorf("the limited token lists connections %+v", conns.Connections)
	}
	got := f.do("GET", "/v1/runs?adapter=memo", "")
	want := f.do("GET", "/v1/runs?adapter=nothing", "")
	if got.status != 404 || string(got.body) != strings.ReplaceAll(string(want.body), "nothing", "memo") {
		t.Errorf("runs of an adapter outside the grant: %d %s; of none: %d %s", got.status, got.body, want.status, want.body)
	}
}

// TestGrant_APITokens: a token created with datasets is stored with
// them, listed with them, and limited by them; a bad pattern is refused
// naming its field.
func TestGrant_APITokens(t *testing.T) {
	f := newFixture(t, fixtureOpts{tokens: []Token{{Name: "root", Token: "root-token-0123456789", Role: RoleAdmin}}})
	f.token = "root-token-0123456789"
	f.run("products")
	f.run("notes")
	f.wantProblem(400, "bad_request", "body.datasets[1]", "POST", "/v1/tokens", `{"name":"x","role":"reader","datasets":["ok","["]}`)
	var created struct {
		Token    string   `json:"token"`
		Datasets []string `json:"datasets"`
	}
	f.must(201, "POST", "/v1/tokens", `{"name":"notes-reader","role":"reader","datasets":["note*"]}`).json(t, &created)
	if fmt.Sprint(created.Datasets) != "[note*]" {
		t.Errorf("created with datasets %v", created.Datasets)
	}
	var list struct {
		Tokens []tokenJSON `json:"tokens"`
	}
	f.must(200, "GET", "/v1/tokens", "").json(t, &list)
	list.Tokens = slices.DeleteFunc(list.Tokens, func(tk tokenJSON) bool { return tk.Source == tokenSourceConfig })
	if len(list.Tokens) != 1 || fmt.Sprint(list.Tokens[0].Datasets) != "[note*]" {
		t.Errorf("listed %+v", list.Tokens)
	}
	f.token = created.Token
	var ds struct {
		Datasets []json.RawMessage `json:"datasets"`
	}
	f.must(200, "GET", "/v1/datasets", "").json(t, &ds)
	if len(ds.Datasets) != 1 || !strings.Contains(string(ds.Datasets[0]), `"name":"notes"`) {
		t.Errorf("the limited API token lists %s", ds.Datasets)
	}
	f.wantProblem(404, "dataset_not_found", "", "GET", "/v1/datasets/products", "")
	f.must(200, "GET", "/v1/datasets/notes", "")
}
