package console

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/server"
)

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so that tests see each answer of the console.
type browser struct {
	t   *testing.T
	f   *fixture
	c   *http.Client
	jar *cookiejar.Jar
}

func newBrowser(t *testing.T, f *fixture) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, f: f, jar: jar, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get fetches a console path.
func (b *browser) get(path string, hdr ...string) response {
	b.t.Helper()
	return b.send("GET", path, nil, hdr...)
}

// post sends a form from the console's own origin.
func (b *browser) post(path string, form url.Values, hdr ...string) response {
	b.t.Helper()
	return b.send("POST", path, form, append([]string{"Origin", b.f.ts.URL}, hdr...)...)
}

func (b *browser) send(method, path string, form url.Values, hdr ...string) response {
	b.t.Helper()
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.f.ts.URL+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8") // as a browser does
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	b.f.bodies = append(b.f.bodies, string(body))
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

// page fetches path and requires a 200 HTML page holding every want.
func (b *browser) page(path string, want ...string) string {
	b.t.Helper()
	r := b.get(path)
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		b.t.Fatalf("GET %s: status %d %s:\n%s", path, r.status, r.header.Get("Content-Type"), r.body)
	}
	for _, w := range want {
		if !strings.Contains(string(r.body), w) {
			b.t.Errorf("GET %s: the page lacks %q", path, w)
		}
	}
	return string(r.body)
}

// wantStatus requires status of r and returns its body.
func wantStatus(t *testing.T, what string, r response, status int) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d:\n%s", what, r.status, status, r.body)
	}
	return string(r.body)
}

// TestConsole_EveryPage renders every page of a server without tokens
// over a dataset with two versions, and checks what each shows.
func TestConsole_EveryPage(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := f.run("products")
	f.exec(`UPDATE products SET stock = 7 WHERE id = 1`)
	v2 := f.run("products")
	b := newBrowser(t, f)
	s1, s2 := itoa(v1), itoa(v2)

	r := b.get("/")
	if r.status != http.StatusFound || r.header.Get("Location") != "/ui/" {
		t.Fatalf("GET /: %d Location %q", r.status, r.header.Get("Location"))
	}
	home := b.page("/ui/", `href="/ui/datasets/products"`, "<polyline points=", "no login (loopback)", "status-succeeded", `href="/metrics"`)
	if strings.Contains(home, "Log in") {
		t.Error("a server without tokens offers a login")
	}
	b.page("/ui/datasets/products", `id="version-numbers"`, "Version numbers are transaction ids", "version "+s2, "version "+s1, "<dd>ttl 90d, at least 10 versions</dd>", `class="checksum"`, "diff with "+s1, "roll back to this", `class="inline tagform"`)
	b.page("/ui/datasets/products/rows", "grinder", "at version "+s2, `href="/ui/datasets/products/rows/download?version=`+s2+`&amp;format=parquet"`)
	for _, path := range []string{"/ui/datasets/products/rows/download?version=" + s1 + "&format=parquet", "/ui/datasets/products/diff/download?from=" + s1 + "&to=" + s2 + "&format=parquet"} {
		r := b.get(path)
		if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/vnd.apache.parquet" || !bytes.HasSuffix(r.body, []byte("PAR1")) {
			t.Errorf("GET %s: %d %s, %d bytes", path, r.status, r.header.Get("Content-Type"), len(r.body))
		}
	}
	if r := b.get("/ui/datasets/products/diff/download?format=csv"); r.status != http.StatusNotAcceptable {
		t.Errorf("a diff download as CSV: %d, want 406", r.status)
	}
	one := b.page("/ui/datasets/products/rows?version="+s1+"&key=1&mode=prefix", "cup", "at version "+s1)
	// A key value its column cannot hold is refused on the rows page
	// itself: the search form keeps what was typed, the problem above it.
	if r := b.get("/ui/datasets/products/rows?version=" + s1 + "&key=x1&mode=start"); r.status != http.StatusBadRequest ||
		!bytes.Contains(r.body, []byte(`id="search-problem" data-code="bad_key"`)) || !bytes.Contains(r.body, []byte(`name="key" value="x1"`)) ||
		!bytes.Contains(r.body, []byte(`<option value="start" selected>`)) || bytes.Contains(r.body, []byte("No row matches")) {
		t.Errorf("a search by a key its column cannot hold: %d\n%s", r.status, r.body)
	}
	if strings.Contains(one, "grinder") {
		t.Error("the key search for 1 lists other rows")
	}
	diff := b.page("/ui/datasets/products/diff?from="+s1+"&to="+s2, "1 updated", `data-op="update"`, `href="/ui/datasets/products/diff/download?from=`+s1+`&amp;to=`+s2+`&amp;format=parquet"`)
	if !regexp.MustCompile(`<td class="changed" data-column="stock"><del>120</del> <ins>7</ins></td>`).MatchString(diff) {
		t.Errorf("the diff does not mark stock changed from 120 to 7:\n%s", diff)
	}
	if !strings.Contains(diff, `<td class="changed-columns" data-changed="stock">stock</td>`) || !strings.Contains(diff, `id="diff-changed">Updates shown change stock`) {
		t.Errorf("the diff does not name the changed column beside the key:\n%s", diff)
	}
	if strings.Contains(diff, `class="changed" data-column="price"`) {
		t.Error("the diff marks an unchanged column")
	}
	b.page("/ui/datasets/products/diff", "1 updated")
	b.page("/ui/datasets/products/rollback?version="+s1,
		"commits a new version with the content of version "+s1, "versions after "+s1+" stay readable")
	if r := b.post("/ui/datasets/products/rollback", url.Values{"version": {s1}}); r.status >= 400 {
		t.Fatalf("rollback from the console: %d %s", r.status, r.body)
	}
	page := b.page("/ui/datasets/products", `data-restored-from="`+s1+`"`, "restored from "+s1, "version "+s2, "made by a rollback")
	// The restored version links no run (no run made it); the others do.
	restored := page[strings.Index(page, `data-restored-from="`):]
	restored = restored[:strings.Index(restored, "</li>")]
	if strings.Contains(restored, `href="/ui/runs/`) || !strings.Contains(page, `href="/ui/runs/`) {
		t.Errorf("the restored version's run link:\n%s", restored)
	}
	var cur struct {
		Current struct {
			Source       map[string]any `json:"source"`
			RestoredFrom int64          `json:"restored_from"`
		} `json:"current"`
	}
	f.must(200, "GET", "/v1/datasets/products", "").json(t, &cur)
	if _, ok := cur.Current.Source["run_id"]; ok || cur.Current.RestoredFrom != v1 || cur.Current.Source["adapter"] != "products" {
		t.Errorf("the restored version's source: %+v", cur.Current)
	}
	b.page("/ui/adapters", `id="adapter-products"`, "Run now", "config")
	b.page("/ui/adapters/new", `name="schedule"`, `<option value="shop"`, "empty or 0 keeps versions for ever")
	b.page("/ui/adapters/products/edit", `value="products"`)
	b.page("/ui/resources?connection=shop", `<option value="products"`)
	runs := b.page("/ui/runs", "status-succeeded")
	id := regexp.MustCompile(`/ui/runs/(r[0-9]+-[0-9]+)`).FindStringSubmatch(runs)
	if id == nil {
		t.Fatalf("no run link on the runs page:\n%s", runs)
	}
	b.page("/ui/runs?status=failed", "No run with status failed")
	run := b.page("/ui/runs/"+id[1], `data-phase="connect"`, `data-phase="read"`, `data-phase="commit"`, `aria-valuenow="100.0"`)
	if strings.Contains(run, "hx-trigger") {
		t.Error("an ended run's page still polls")
	}
	live := b.page("/ui/runs/"+id[1]+"/live", `id="live"`)
	if strings.Contains(live, "<html") {
		t.Error("the live fragment is a whole page")
	}
	b.page("/ui/connections", `data-connection="shop"`, "sqlite", "shared")
	if shop := b.page("/ui/connections/shop", "products", "order_lines", "Estimated rows", "defined in the config file"); strings.Contains(shop, "updated") {
		t.Error("a config connection's page shows an updated time")
	}
	b.page("/ui/connections/new", `name="opt.password"`, `type="password"`)
	b.page("/ui/connections/new?type=sqlite", `name="opt.path"`)
	b.page("/ui/gc", "Dry run", "ttl 90d, min 10")
	rep := wantStatus(t, "dry run", b.post("/ui/gc/products", url.Values{"dry_run": {"true"}}, "HX-Request", "true"), http.StatusOK)
	// The transactions pruned are those of every run that committed no
	// version, the verifying ones too, not of failed runs alone.
	if !strings.Contains(rep, `data-dry-run="true"`) || !strings.Contains(rep, "Collect now") || strings.Contains(rep, "<html") || !strings.Contains(rep, "runs that committed no version") {
		t.Errorf("dry run fragment:\n%s", rep)
	}
	b.page("/ui/api", "/ui/static/vendor/swagger-ui/swagger-ui-bundle.js", "/ui/static/swagger-init.js")

	r = b.get("/ui/static/vendor/htmx/htmx.min.js")
	etag := r.header.Get("ETag")
	if r.status != http.StatusOK || etag == "" || !strings.Contains(r.header.Get("Content-Type"), "javascript") {
		t.Fatalf("htmx: %d %v", r.status, r.header)
	}
	if r = b.get("/ui/static/vendor/htmx/htmx.min.js", "If-None-Match", etag); r.status != http.StatusNotModified {
		t.Errorf("revalidation: %d, want 304", r.status)
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	r = b.get("/ui/nope")
	wantStatus(t, "unknown page", r, http.StatusNotFound)
	if !strings.Contains(string(r.body), "route_not_found") {
		t.Errorf("404 page: %s", r.body)
	}
	// A client that does not ask for HTML gets the API's problem.
	r = b.get("/ui/nope", "Accept", "*/*")
	if wantStatus(t, "unknown page, not HTML", r, http.StatusNotFound); r.header.Get("Content-Type") != server.ProblemContentType || r.problem(t).Code != "route_not_found" {
		t.Errorf("unknown page for a non-browser: %v %s", r.header, r.body)
	}
	r = b.get("/ui/datasets/nope")
	if wantStatus(t, "unknown dataset", r, http.StatusNotFound); !strings.Contains(string(r.body), "dataset_not_found") {
		t.Errorf("dataset 404 page: %s", r.body)
	}
}

// TestConsole_Forms creates a connection and an adapter through the
// forms, shows a refused form with its problem, and runs the adapter.
func TestConsole_Forms(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	b := newBrowser(t, f)
	shop, err := f.svc.GetConnection(t.Context(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	r := b.post("/ui/connections", url.Values{"name": {"shop2"}, "type": {"sqlite"}, "sharing": {"shared"}, "opt.path": {shop.Options["path"].(string)}})
	if wantStatus(t, "create connection", r, http.StatusSeeOther); r.header.Get("Location") != "/ui/connections/shop2" {
		t.Fatalf("create connection went to %q", r.header.Get("Location"))
	}
	// A secret is never shown again: not on the refused form, not on the
	// connection's page.
	r = b.post("/ui/connections", url.Values{"name": {"shop2"}, "type": {"mysql"}, "opt.user": {"u"}, "opt.password": {knownSecret}})
	if body := wantStatus(t, "duplicate connection", r, http.StatusConflict); !strings.Contains(body, "connection_exists") || strings.Contains(body, knownSecret) {
		t.Errorf("refused connection form:\n%s", body)
	}
	// Nor one given among the extra lines, as password=... or in a line
	// that does not parse: the line is filled back without its value, and
	// the refusal names the line by its number.
	r = b.post("/ui/connections", url.Values{"name": {"shop2"}, "type": {"mysql"}, "opt.user": {"u"}, "extra": {"max_open=4\npassword=" + knownSecret}})
	if body := wantStatus(t, "refused connection, extra password", r, http.StatusBadRequest); strings.Contains(body, knownSecret) || !strings.Contains(body, "max_open=4\npassword=<") {
		t.Errorf("refused connection form with an extra password:\n%s", body)
	}
	r = b.post("/ui/connections", url.Values{"name": {"db"}, "type": {"mysql"}, "opt.user": {"u"}, "extra": {"password: " + knownSecret}})
	if body := wantStatus(t, "extra line without =", r, http.StatusBadRequest); strings.Contains(body, knownSecret) || !strings.Contains(body, "line 1: want key=value") {
		t.Errorf("refused extra line:\n%s", body)
	}
	r = b.post("/ui/connections", url.Values{"name": {"db"}, "type": {"mysql"}, "opt.host": {"127.0.0.1"}, "opt.user": {"u"}, "opt.password": {knownSecret}, "extra": {"max_open=4"}, "sharing": {"pooled"}})
	wantStatus(t, "mysql connection", r, http.StatusSeeOther)
	b.page("/ui/connections/db", "REDACTED", "max_open", "api, revision 1, updated")
	// An adapter of a source that does not answer is saved, and the
	// adapters page says what was not checked, once.
	r = b.post("/ui/adapters", url.Values{"name": {"later"}, "connection": {"db"}, "resource": {"t"}})
	if body := wantStatus(t, "adapter of an unreachable source", r, http.StatusOK); !strings.Contains(body, `id="save-warnings"`) ||
		!strings.Contains(body, `resource &#34;t&#34; not checked: data connection &#34;db&#34;`) || !strings.Contains(body, `id="adapter-later"`) || strings.Contains(body, knownSecret) {
		t.Errorf("adapter of an unreachable source:\n%s", body)
	}
	if body := b.page("/ui/adapters", `id="adapter-later"`); strings.Contains(body, "save-warnings") {
		t.Errorf("the warning stays on the adapters page")
	}
	if err := f.svc.DeleteAdapter(t.Context(), "later"); err != nil {
		t.Fatal(err)
	}
	// Source options: the fields of the types that declare them; a list
	// is comma-separated text; a type without them refuses them.
	b.page("/ui/adapters/new", `name="source_options.columns"`, `name="source_options.start"`, "(snapstore connections)")
	r = b.post("/ui/adapters", url.Values{"name": {"cols"}, "connection": {"shop2"}, "resource": {"products"}, "source_options.columns": {"id"}})
	if body := wantStatus(t, "source options of a sqlite connection", r, http.StatusBadRequest); !strings.Contains(body, "takes no source_options") ||
		!regexp.MustCompile(`name="source_options.columns" value="id"`).MatchString(body) {
		t.Errorf("source options of a sqlite connection:\n%s", body)
	}
	if _, err := f.svc.CreateConnection(t.Context(), api.Connection{Name: "edge", Type: "snapstore", Options: map[string]any{"url": "http://127.0.0.1:1"}}); err != nil {
		t.Fatal(err)
	}
	r = b.post("/ui/adapters", url.Values{"name": {"part"}, "connection": {"edge"}, "resource": {"orders"},
		"source_options.columns": {"region, id ,total"}, "source_options.start": {"EU"}})
	wantStatus(t, "adapter with source options", r, http.StatusOK) // saved unchecked: the edge does not answer
	if a, err := f.svc.GetAdapter(t.Context(), "part"); err != nil || fmt.Sprint(a.SourceOptions) != "map[columns:[region id total] start:[EU]]" {
		t.Errorf("source options from the form: %v %v", a.SourceOptions, err)
	}
	b.page("/ui/adapters/part/edit", `name="source_options.columns" value="region, id, total"`, `name="source_options.start" value="EU"`)
	if err := f.svc.DeleteAdapter(t.Context(), "part"); err != nil {
		t.Fatal(err)
	}

	form := url.Values{"name": {"p2"}, "connection": {"shop2"}, "resource": {"products"}, "schedule": {"every hour"}, "ttl": {"36h"}}
	r = b.post("/ui/adapters", form)
	body := wantStatus(t, "bad schedule", r, http.StatusBadRequest)
	if !strings.Contains(body, "bad_schedule") || !regexp.MustCompile(`name="schedule" value="every hour"[^>]*aria-invalid="true"`).MatchString(body) {
		t.Errorf("refused adapter form:\n%s", body)
	}
	form.Set("schedule", "@every 1h")
	form.Set("ttl", "soon")
	if body = wantStatus(t, "bad ttl", b.post("/ui/adapters", form), http.StatusBadRequest); !strings.Contains(body, "retention.ttl") {
		t.Errorf("bad ttl form:\n%s", body)
	}
	form.Set("ttl", "1d12h")
	wantStatus(t, "create adapter", b.post("/ui/adapters", form), http.StatusSeeOther)
	a, err := f.svc.GetAdapter(t.Context(), "p2")
	if err != nil || a.Schedule != "@every 1h" || a.Retention.TTL != api.Duration(36*time.Hour) {
		t.Fatalf("adapter from the form: %+v %v", a, err)
	}
	// Alone, the form leaves out the cluster's fields while they hold
	// their defaults, and shows them once they do not.
	b.page("/ui/adapters/products/edit", `name="ttl" value="90d"`)
	if body := b.page("/ui/adapters/p2/edit", `value="@every 1h"`, `value="36h"`); strings.Contains(body, `id="cluster-fields"`) || strings.Contains(body, `name="strategy"`) {
		t.Errorf("cluster fields on a server alone:\n%s", body)
	}
	form.Set("schedule", "")
	form.Set("strategy", "single-node")
	wantStatus(t, "replace adapter", b.post("/ui/adapters/p2", form), http.StatusSeeOther)
	if a, _ = f.svc.GetAdapter(t.Context(), "p2"); a.Schedule != "" || a.Strategy != string(adapters.StrategySingleNode) {
		t.Errorf("replaced adapter: schedule %q, strategy %q", a.Schedule, a.Strategy)
	}
	b.page("/ui/adapters/p2/edit", `id="cluster-fields"`, `<option value="single-node" selected>`)
	// Every field of an adapter is in the form: an edit keeps the flags.
	form.Set("commit_unchanged", "true")
	form.Set("embed_json", "true")
	wantStatus(t, "flags on", b.post("/ui/adapters/p2", form), http.StatusSeeOther)
	if a, _ = f.svc.GetAdapter(t.Context(), "p2"); !a.CommitUnchanged || !a.EmbedJSON {
		t.Errorf("flags from the form: commit_unchanged %v, embed_json %v", a.CommitUnchanged, a.EmbedJSON)
	}
	b.page("/ui/adapters/p2/edit", `name="commit_unchanged" value="true" checked`, `name="embed_json" value="true" checked`)
	form.Del("commit_unchanged")
	form.Del("embed_json")
	// The notify list: [] is none, kept apart from absent (the default);
	// a webhook this server lacks is refused at its field.
	form.Set("notify", "[]")
	wantStatus(t, "notify none", b.post("/ui/adapters/p2", form), http.StatusSeeOther)
	if a, _ = f.svc.GetAdapter(t.Context(), "p2"); a.Notify == nil || len(a.Notify) != 0 {
		t.Errorf("notify from the form: %#v", a.Notify)
	}
	b.page("/ui/adapters/p2/edit", `name="notify" value="[]"`)
	form.Set("notify", "ops")
	if body = wantStatus(t, "unknown webhook", b.post("/ui/adapters/p2", form), http.StatusBadRequest); !regexp.MustCompile(`name="notify"[^>]*aria-invalid="true"`).MatchString(body) {
		t.Errorf("unknown webhook form:\n%s", body)
	}
	form.Del("notify")
	wantStatus(t, "notify default", b.post("/ui/adapters/p2", form), http.StatusSeeOther)
	if a, _ = f.svc.GetAdapter(t.Context(), "p2"); a.Notify != nil {
		t.Errorf("notify from an empty field: %#v", a.Notify)
	}
	form.Set("strategy", "spread")
	if body = wantStatus(t, "bad strategy", b.post("/ui/adapters/p2", form), http.StatusBadRequest); !regexp.MustCompile(`<select name="strategy"[^>]*aria-invalid="true"`).MatchString(body) {
		t.Errorf("bad strategy form:\n%s", body)
	}
	form.Set("strategy", "partition-by-key")
	form.Set("partition_key", "stock, name")
	form.Set("transfer_compression", "all")
	wantStatus(t, "partition-by-key adapter", b.post("/ui/adapters/p2", form), http.StatusSeeOther)
	if a, _ = f.svc.GetAdapter(t.Context(), "p2"); !slices.Equal(a.PartitionKey, []string{"stock", "name"}) || a.TransferCompression != "all" {
		t.Errorf("partition-by-key adapter: partition_key %v, transfer_compression %q", a.PartitionKey, a.TransferCompression)
	}
	b.page("/ui/adapters/p2/edit", `name="partition_key" value="stock, name"`, `<option value="all" selected>`)
	form.Set("partition_key", "stock, colour")
	if body = wantStatus(t, "a partition key the source lacks", b.post("/ui/adapters/p2", form), http.StatusBadRequest); !strings.Contains(body, `&#34;colour&#34; is not a column of products`) {
		t.Errorf("partition key form:\n%s", body)
	}
	form.Del("partition_key")
	form.Del("transfer_compression")
	form.Set("strategy", "local")
	wantStatus(t, "replace adapter", b.post("/ui/adapters/p2", form), http.StatusSeeOther)
	r = b.post("/ui/adapters/p2/run", url.Values{})
	loc := r.header.Get("Location")
	if wantStatus(t, "run now", r, http.StatusSeeOther); !strings.HasPrefix(loc, "/ui/runs/r") {
		t.Fatalf("run now went to %q", loc)
	}
	rec, err := f.svc.WaitRun(t.Context(), strings.TrimPrefix(loc, "/ui/runs/"))
	if err != nil || rec.Status != "succeeded" || rec.Trigger != "console" {
		t.Fatalf("run from the console: %+v %v", rec, err)
	}
	if page := b.page(loc, "succeeded", `aria-valuenow="100.0"`, "read in full"); strings.Contains(page, "of about") {
		t.Errorf("a finished run's page gives its rows read against the estimate:\n%s", page)
	}
	// Nothing changed since: the run verifies the current version.
	r = b.post("/ui/adapters/p2/run", url.Values{})
	again := r.header.Get("Location")
	if rec, err := f.svc.WaitRun(t.Context(), strings.TrimPrefix(again, "/ui/runs/")); err != nil || !rec.Verified {
		t.Fatalf("second run from the console: %+v %v", rec, err)
	}
	b.page(again, "nothing changed: verified", "no version committed")
	// A run the guard refuses offers to run again with force.
	f.exec(`DELETE FROM products`)
	refused := b.post("/ui/adapters/p2/run", url.Values{}).header.Get("Location")
	if rec, err := f.svc.WaitRun(t.Context(), strings.TrimPrefix(refused, "/ui/runs/")); err != nil || rec.Code != "guard_refused" {
		t.Fatalf("an emptying run from the console: %+v %v", rec, err)
	}
	// Refused, with the guard's reason, not an error bar stopped at 99%.
	if body := b.page(refused, "guard_refused", `id="refused"`, "Refused by the commit guard", "force", `name="force" value="true"`, "Run again with force"); strings.Contains(body, `id="progress"`) || strings.Contains(body, `id="run-error"`) {
		t.Errorf("a refused run shows a progress bar or an error:\n%s", body)
	}
	forced := b.post("/ui/adapters/p2/run", url.Values{"force": {"true"}}).header.Get("Location")
	if rec, err := f.svc.WaitRun(t.Context(), strings.TrimPrefix(forced, "/ui/runs/")); err != nil || rec.Status != "succeeded" || !rec.Forced {
		t.Fatalf("a forced run from the console: %+v %v", rec, err)
	}
	b.page(forced, "(forced)")
	b.page("/ui/datasets/p2", "at least 1 version</dd>")
	wantStatus(t, "delete adapter", b.post("/ui/adapters/p2/delete", url.Values{}), http.StatusSeeOther)
	if _, err := f.svc.GetAdapter(t.Context(), "p2"); err == nil {
		t.Error("the adapter outlived its delete")
	}
}

// TestConsole_Auth: the login sets a session cookie that holds no token;
// a reader sees data but no admin action and gets 403 for an admin form;
// a page needing a higher role than the viewer's is a 403; a cross-origin
// form is refused even with a valid session.
func TestConsole_Auth(t *testing.T) {
	const adminTok, readerTok = "admin-token-Zq81-console", "reader-token-Pp20-console"
	f := newFixture(t, fixtureOpts{tokens: []server.Token{{Name: "ops", Token: adminTok, Role: server.RoleAdmin}, {Name: "viewer", Token: readerTok, Role: server.RoleReader}}})
	f.token = adminTok
	v1 := f.run("products")
	f.exec(`UPDATE products SET stock = 7 WHERE id = 1`)
	f.run("products")
	f.token = ""
	s1 := itoa(v1)

	anon := newBrowser(t, f)
	r := anon.get("/ui/datasets/products")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/login?next=%2Fui%2Fdatasets%2Fproducts" {
		t.Fatalf("anonymous page: %d Location %q", r.status, r.header.Get("Location"))
	}
	if r = anon.get("/ui/runs", "HX-Request", "true"); r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("HX-Redirect"), "/ui/login") {
		t.Errorf("anonymous htmx request: %d %v", r.status, r.header)
	}
	wantStatus(t, "anonymous form", anon.post("/ui/datasets/products/rollback", url.Values{"version": {s1}}), http.StatusUnauthorized)
	anon.page("/ui/login", `type="password" name="token"`)
	r = anon.post("/ui/login", url.Values{"token": {"wrong"}})
	if wantStatus(t, "wrong token", r, http.StatusUnauthorized); len(r.header.Values("Set-Cookie")) != 0 {
		t.Error("a wrong token got a cookie")
	}

	login := func(tok string) *browser {
		b := newBrowser(t, f)
		r := b.post("/ui/login", url.Values{"token": {tok}, "next": {"/ui/datasets/products"}})
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/datasets/products" {
			t.Fatalf("login: %d %q %s", r.status, r.header.Get("Location"), r.body)
		}
		ck := r.header.Get("Set-Cookie")
		for _, want := range []string{server.SessionCookie + "=", "Path=/ui/", "HttpOnly", "SameSite=Strict"} {
			if !strings.Contains(ck, want) {
				t.Errorf("session cookie %q lacks %q", ck, want)
			}
		}
		if strings.Contains(ck, tok) {
			t.Errorf("the session cookie holds the token: %s", ck)
		}
		return b
	}

	reader := login(readerTok)
	page := reader.page("/ui/datasets/products", "version "+s1, "viewer")
	for _, admin := range []string{"roll back to this", "tagform", "Run now"} {
		if strings.Contains(page, admin) {
			t.Errorf("a reader sees %q", admin)
		}
	}
	// /metrics takes a bearer token, which a browser's session does not
	// send: with tokens the footer does not offer it.
	if strings.Contains(page, `href="/metrics"`) {
		t.Error("a server with tokens offers /metrics to the browser")
	}
	if page = reader.page("/ui/adapters"); strings.Contains(page, "Run now") || strings.Contains(page, "New adapter") || strings.Contains(page, ">Edit<") {
		t.Errorf("a reader sees adapter actions:\n%s", page)
	}
	if page = reader.page("/ui/gc"); strings.Contains(page, "Dry run") {
		t.Error("a reader sees the GC buttons")
	}
	if strings.Contains(reader.page("/ui/"), `href="/ui/connections"`) {
		t.Error("a reader is offered the connections page")
	}
	wantStatus(t, "reader connections page", reader.get("/ui/connections"), http.StatusForbidden)
	for _, post := range []struct {
		path string
		form url.Values
	}{
		{"/ui/datasets/products/rollback", url.Values{"version": {s1}}},
		{"/ui/datasets/products/tags", url.Values{"tag": {"x"}, "version": {s1}}},
		{"/ui/adapters/products/run", url.Values{}},
		{"/ui/gc/products", url.Values{"dry_run": {"true"}}},
	} {
		if body := wantStatus(t, "reader posts "+post.path, reader.post(post.path, post.form), http.StatusForbidden); !strings.Contains(body, `token &#34;viewer&#34; has role reader`) {
			t.Errorf("reader's 403 page for %s:\n%s", post.path, body)
		}
	}

	admin := login(adminTok)
	admin.page("/ui/datasets/products", "roll back to this", "tagform", "ops")
	if r = admin.post("/ui/datasets/products/tags", url.Values{"tag": {"first"}, "version": {s1}}); r.status != http.StatusSeeOther {
		t.Fatalf("admin tags: %d %s", r.status, r.body)
	}
	// The console refuses an all-digit tag by snapshot's rule.
	if r = admin.post("/ui/datasets/products/tags", url.Values{"tag": {"12"}, "version": {s1}}); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "only digits and") {
		t.Fatalf("admin tags 12: %d %s", r.status, r.body)
	}
	if vi, err := f.db.VersionInfo(t.Context(), "products", v1); err != nil || len(vi.Tags) != 1 || vi.Tags[0] != "first" {
		t.Fatalf("tags after the form: %+v %v", vi.Tags, err)
	}
	// Cross-origin forms fail even with the admin's session.
	for _, hdr := range [][]string{{"Origin", "http://evil.example"}, {"Sec-Fetch-Site", "cross-site"}} {
		r := admin.send("POST", "/ui/datasets/products/tags/first/delete", url.Values{}, hdr...)
		if body := wantStatus(t, "cross-origin "+hdr[0], r, http.StatusForbidden); !strings.Contains(body, "cross-origin") {
			t.Errorf("cross-origin refusal page:\n%s", body)
		}
	}
	wantStatus(t, "untag", admin.post("/ui/datasets/products/tags/first/delete", url.Values{}), http.StatusSeeOther)
	wantStatus(t, "logout", admin.post("/ui/logout", url.Values{}), http.StatusSeeOther)
	wantStatus(t, "after logout", admin.get("/ui/"), http.StatusSeeOther)

	// A tampered session is no session: the reader's, renamed to the
	// admin's token.
	forged := newBrowser(t, f)
	u, _ := url.Parse(f.ts.URL + "/ui/")
	good := sessionOf(t, newBrowser(t, f).post("/ui/login", url.Values{"token": {readerTok}}))
	forged.jar.SetCookies(u, []*http.Cookie{{Name: server.SessionCookie, Value: strings.Replace(good, "dmlld2Vy", "b3Bz", 1), Path: "/ui/"}})
	wantStatus(t, "forged session", forged.get("/ui/"), http.StatusSeeOther)

	for _, body := range f.bodies {
		if strings.Contains(body, adminTok) || strings.Contains(body, readerTok) {
			t.Fatalf("a page holds a token:\n%s", body)
		}
	}
	if strings.Contains(f.logs.String(), adminTok) || strings.Contains(f.logs.String(), readerTok) {
		t.Error("the log holds a token")
	}
}

// TestSafeNext: a login redirects only to a console path of this server.
func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{"/ui/runs?status=failed": "/ui/runs?status=failed", "//evil.example/ui/": "/ui/", "https://evil.example/ui/": "/ui/", "/v1/datasets": "/ui/", "": "/ui/", "/ui/\\evil": "/ui/"} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

// TestConsole_SessionIdle: a session no request used for the idle
// timeout ends; each request moves its idle deadline (a new cookie),
// never past the absolute expiry.
func TestConsole_SessionIdle(t *testing.T) {
	const tok = "admin-token-Idle-console"
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	advance := func(d time.Duration) { now.Add(int64(d)) }
	f := newFixture(t, fixtureOpts{tokens: []server.Token{{Name: "ops", Token: tok, Role: server.RoleAdmin}}, now: clock, sessionIdle: 10 * time.Minute})

	b := newBrowser(t, f)
	r := b.post("/ui/login", url.Values{"token": {tok}})
	wantStatus(t, "login", r, http.StatusSeeOther)
	first := sessionOf(t, r)
	advance(9 * time.Minute)
	r = b.get("/ui/adapters")
	wantStatus(t, "9 minutes after the login", r, http.StatusOK)
	if slid := sessionOf(t, r); slid == first || !strings.HasPrefix(slid, first[:strings.LastIndexByte(first[:strings.LastIndexByte(first, '.')], '.')]) {
		t.Fatalf("a request did not move the idle deadline of the same session: %q then %q", first, slid)
	}
	advance(9 * time.Minute) // 18 minutes after the login, 9 after the last request
	wantStatus(t, "9 minutes after the last request", b.get("/ui/adapters"), http.StatusOK)
	withCookie := func(value string) int {
		req, _ := http.NewRequest("GET", f.ts.URL+"/ui/adapters", nil)
		req.AddCookie(&http.Cookie{Name: server.SessionCookie, Value: value})
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := withCookie(first); s != http.StatusSeeOther {
		t.Errorf("the login's cookie, idle for 18 minutes: %d, want a redirect to the login", s)
	}
	advance(10 * time.Minute)
	if r = b.get("/ui/adapters"); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/ui/login") {
		t.Fatalf("a session idle for 10 minutes: %d %q", r.status, r.header.Get("Location"))
	}

	// Used every 7 minutes, a session still ends SessionLifetime after
	// its login.
	b = newBrowser(t, f)
	wantStatus(t, "login", b.post("/ui/login", url.Values{"token": {tok}}), http.StatusSeeOther)
	const step = 7 * time.Minute
	for range server.SessionLifetime / step {
		advance(step)
		wantStatus(t, "a session in use", b.get("/ui/adapters"), http.StatusOK)
	}
	advance(server.SessionLifetime % step)
	wantStatus(t, "a session in use past its lifetime", b.get("/ui/adapters"), http.StatusSeeOther)
}

// sessionOf returns the session cookie value an answer sets.
func sessionOf(t *testing.T, r response) string {
	t.Helper()
	for _, ck := range r.header.Values("Set-Cookie") {
		if v, ok := strings.CutPrefix(ck, server.SessionCookie+"="); ok {
			v, _, _ = strings.Cut(v, ";")
			return v
		}
	}
	t.Fatalf("no session cookie set: %v", r.header)
	return ""
}

// TestConsole_LoopbackHost: without tokens the console answers only to a
// loopback host name, so that a page of a rebound DNS name cannot drive it.
func TestConsole_LoopbackHost(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	b := newBrowser(t, f)
	wantStatus(t, "rebound host", b.get("/ui/", "Host", "evil.example:8080"), http.StatusMisdirectedRequest)
	b.page("/ui/")
	if r := b.get("/ui/", "Host", "localhost:8080"); r.status != http.StatusOK {
		t.Errorf("localhost: %d", r.status)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestConsole_RollbackSaysWhatItDoes: the confirmation names the versions
// and tags a rollback takes away, and after it the server did exactly
// that: the later version reads 410, its tag is gone, the target is
// current. A change of rollback's rule fails here until the page says the
// new one.
func TestConsole_RollbackSaysWhatItDoes(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v1 := f.run("products")
	f.exec(`UPDATE products SET stock = 7 WHERE id = 1`)
	v2 := f.run("products")
	s1, s2 := itoa(v1), itoa(v2)
	f.must(200, "PUT", "/v1/datasets/products/tags/second", "")
	b := newBrowser(t, f)
	b.page("/ui/datasets/products/rollback?version="+s1,
		"commits a new version with the content of version "+s1, "the current version "+s2,
		"versions after "+s1+" stay readable",
		// The adapter that feeds the dataset undoes the rollback at its
		// next run, as the CLI's question says.
		`id="rollback-adapter"`, "the next run of the adapter", `<a href="/ui/adapters#adapter-products">products</a>`,
		"undoes it unless the source was set right too")
	if r := b.post("/ui/datasets/products/rollback", url.Values{"version": {s1}}); r.status != http.StatusSeeOther {
		t.Fatalf("rollback: %d %s", r.status, r.body)
	}
	// What the page said: the later version stays, with its tag; a new
	// version restored from the target is current.
	f.must(200, "GET", "/v1/datasets/products/versions/"+s2, "")
	f.must(200, "GET", "/v1/datasets/products/rows/1?tag=second", "")
	var d struct {
		Current int64 `json:"current_version"`
		Info    struct {
			RestoredFrom int64 `json:"restored_from"`
		} `json:"current"`
	}
	f.must(200, "GET", "/v1/datasets/products", "").json(t, &d)
	if d.Current <= v2 || d.Info.RestoredFrom != v1 {
		t.Fatalf("current %d restored from %d after the rollback to %d", d.Current, d.Info.RestoredFrom, v1)
	}
}

// TestConsole_BadTagStaysOnThePage: a refused tag name comes back to the
// dataset page (not an error page) with the problem shown and the name
// in the input of its version; the inputs carry the API's TagName pattern.
func TestConsole_BadTagStaysOnThePage(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	v := itoa(f.run("products"))
	b := newBrowser(t, f)
	b.page("/ui/datasets/products", `pattern="[A-Za-z0-9_.:@\-]*([A-Za-z_:@]|\.[A-Za-z0-9_.:@\-]*[0-9\-]|[0-9\-][A-Za-z0-9_.:@\-]*\.)[A-Za-z0-9_.:@\-]*"`)
	r := b.post("/ui/datasets/products/tags", url.Values{"tag": {"bad/tag"}, "version": {v}})
	body := wantStatus(t, "a bad tag", r, http.StatusBadRequest)
	for _, want := range []string{`id="tag-problem"`, "bad/tag", `value="bad/tag" aria-invalid="true"`, `id="versions"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page after a bad tag lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "Back to the datasets") {
		t.Errorf("a bad tag gives an error page:\n%s", body)
	}
	wantStatus(t, "a good tag", b.post("/ui/datasets/products/tags", url.Values{"tag": {"good"}, "version": {v}}), http.StatusSeeOther)
	b.page("/ui/datasets/products", `data-tag="good"`)
}

// TestConsole_Grants: a token limited to some datasets sees only those,
// their adapters and runs; a page of another dataset, adapter or run is
// the page of one that does not exist; global pages are refused.
func TestConsole_Grants(t *testing.T) {
	const rootTok, limitedTok = "root-token-Jw71-console", "limited-token-Kx35-console"
	f := newFixture(t, fixtureOpts{tokens: []server.Token{
		{Name: "root", Token: rootTok, Role: server.RoleAdmin},
		{Name: "sales", Token: limitedTok, Role: server.RoleAdmin, Datasets: []string{"prod*"}},
	}})
	f.token = rootTok
	f.run("products")
	f.run("notes")
	var runs struct {
		Runs []adapters.RunRecord `json:"runs"`
	}
	f.must(200, "GET", "/v1/adapters/notes/runs", "").json(t, &runs)
	notesRun := runs.Runs[0].ID
	f.token = ""

	b := newBrowser(t, f)
	if r := b.post("/ui/login", url.Values{"token": {limitedTok}, "next": {"/ui/"}}); r.status != http.StatusSeeOther {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	for path, want := range map[string]string{
		"/ui/":         `href="/ui/datasets/products"`,
		"/ui/adapters": "products",
		"/ui/runs":     "products",
		"/ui/gc":       "products",
		// shop is the connection of products and of notes: only products
		// shows.
		"/ui/connections":      `href="/ui/connections/shop"`,
		"/ui/connections/shop": "products",
	} {
		if page := b.page(path, want); strings.Contains(page, "/ui/datasets/notes") || strings.Contains(page, "adapter-notes") || strings.Contains(page, ">notes</a>") {
			t.Errorf("%s shows notes to a token limited to prod*:\n%s", path, page)
		}
	}
	b.page("/ui/datasets/products", "products")
	for _, c := range []struct{ method, other, missing string }{
		{"GET", "/ui/datasets/notes", "/ui/datasets/nothing"},
		{"GET", "/ui/datasets/notes/rows", "/ui/datasets/nothing/rows"},
		{"GET", "/ui/datasets/notes/diff", "/ui/datasets/nothing/diff"},
		{"GET", "/ui/runs?adapter=notes", "/ui/runs?adapter=nothing"},
		{"GET", "/ui/runs/" + notesRun, "/ui/runs/r0000000000000000009-0009"},
		{"POST", "/ui/adapters/notes/run", "/ui/adapters/nothing/run"},
		{"POST", "/ui/gc/notes", "/ui/gc/nothing"},
	} {
		send := func(path string) response {
			if c.method == "POST" {
				return b.post(path, url.Values{"dry_run": {"true"}})
			}
			return b.get(path)
		}
		got, want := send(c.other), send(c.missing)
		otherName, missingName := "notes", "nothing"
		if strings.HasPrefix(c.other, "/ui/runs/") {
			otherName, missingName = notesRun, "r0000000000000000009-0009"
		}
		if got.status != want.status || string(got.body) != strings.ReplaceAll(string(want.body), missingName, otherName) {
			t.Errorf("%s %s answered %d, %s %d:\n%s\n---\n%s", c.method, c.other, got.status, c.missing, want.status, got.body, want.body)
		}
		if got.status != http.StatusNotFound {
			t.Errorf("%s %s: %d, want 404", c.method, c.other, got.status)
		}
	}
	for _, path := range []string{"/ui/audit", "/ui/cluster", "/ui/connections/new"} {
		wantStatus(t, "limited token on "+path, b.get(path), http.StatusForbidden)
	}
	if page := b.page("/ui/adapters"); strings.Contains(page, "New adapter") || strings.Contains(page, ">Edit<") {
		t.Errorf("a limited admin is offered to define adapters:\n%s", page)
	}
}

// TestConsole_LogoutEndsTheSession: after a logout a copy of the session
// cookie no longer logs in, nor one a later request slid, on this node at
// once and on another node of the same table within TokenRefresh, and
// the record is gone once the session would have expired.
func TestConsole_LogoutEndsTheSession(t *testing.T) {
	const tok = "admin-token-Lg42-console"
	tokens := []server.Token{{Name: "ops", Token: tok, Role: server.RoleAdmin}}
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	f := newFixture(t, fixtureOpts{tokens: tokens, now: clock})
	var otherNow atomic.Int64
	otherNow.Store(now.Load())
	other, err := server.New(server.Options{DB: f.db, Adapters: f.svc, Tokens: tokens, Logger: slog.New(slog.DiscardHandler), BuildVersion: "test",
		Console: New, Now: func() time.Time { return time.Unix(0, otherNow.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	otherTS := httptest.NewServer(other.Handler())
	defer otherTS.Close()

	b := newBrowser(t, f)
	r := b.post("/ui/login", url.Values{"token": {tok}})
	wantStatus(t, "login", r, http.StatusSeeOther)
	session := sessionOf(t, r)
	withCookie := func(base, value string) response {
		req, _ := http.NewRequest("GET", base+"/ui/adapters", nil)
		req.AddCookie(&http.Cookie{Name: server.SessionCookie, Value: value})
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return response{status: resp.StatusCode, header: resp.Header}
	}
	if s := withCookie(otherTS.URL, session).status; s != http.StatusOK {
		t.Fatalf("the session on the other node before the logout: %d", s)
	}
	now.Add(int64(time.Minute))
	r = withCookie(f.ts.URL, session)
	if r.status != http.StatusOK {
		t.Fatalf("the session before the logout: %d", r.status)
	}
	slid := sessionOf(t, r)
	wantStatus(t, "logout", b.post("/ui/logout", url.Values{}), http.StatusSeeOther)
	for what, value := range map[string]string{"a copy of the session": session, "a copy of the session with a later idle deadline": slid} {
		if s := withCookie(f.ts.URL, value).status; s != http.StatusSeeOther {
			t.Errorf("%s after the logout: %d, want a redirect to the login", what, s)
		}
	}
	otherNow.Add(int64(server.TokenRefresh))
	if s := withCookie(otherTS.URL, session).status; s != http.StatusSeeOther {
		t.Errorf("the session on the other node after the logout: %d, want a redirect to the login", s)
	}
	// Past the session's expiry the record goes: the next reading of the
	// records deletes it.
	now.Add(int64(server.SessionLifetime + server.TokenRefresh))
	withCookie(f.ts.URL, session)
	if recs, err := f.db.ListRecords(context.Background(), "server.session_ended"); err != nil || len(recs) != 0 {
		t.Errorf("ended session records past their expiry: %d, %v", len(recs), err)
	}
}

// TestConsole_TablesAdapter: an adapter of several tables made with the
// form, its selection on the adapters page and the edit form, and its run
// page with the point of the source and each table; a connection without
// a point refuses such an adapter, naming the field.
func TestConsole_TablesAdapter(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	b := newBrowser(t, f)
	// A table_keys entry without columns is refused naming it, one
	// without a colon saying the form; the form kept, the field marked.
	r := b.post("/ui/adapters", url.Values{"name": {"shopdb"}, "connection": {"shop"}, "resources": {"products, order_lines"}, "table_keys": {"order_lines: id; products:"}})
	if body := wantStatus(t, "adapter with an empty table key", r, http.StatusBadRequest); !strings.Contains(body, "table_keys.products") || !regexp.MustCompile(`name="table_keys" value="order_lines: id; products:"[^>]*aria-invalid="true"`).MatchString(body) {
		t.Errorf("the refused form:\n%s", body)
	}
	r = b.post("/ui/adapters", url.Values{"name": {"shopdb"}, "connection": {"shop"}, "resources": {"products, order_lines"}, "table_keys": {"order_lines id, line"}})
	if body := wantStatus(t, "adapter with a table key without a colon", r, http.StatusBadRequest); !strings.Contains(body, "entry 1 &#34;order_lines id, line&#34;: want table: column, column") ||
		!regexp.MustCompile(`name="table_keys" value="order_lines id, line"[^>]*aria-invalid="true"`).MatchString(body) {
		t.Errorf("the refused form:\n%s", body)
	}
	r = b.post("/ui/adapters", url.Values{"name": {"shopdb"}, "connection": {"shop"}, "resources": {"products, order_lines"}, "parallelism": {"2"}, "allow_dropped_tables": {"true"},
		"table_keys": {" order_lines : order_id, line ; "}})
	wantStatus(t, "adapter of several tables", r, http.StatusSeeOther)
	a, err := f.svc.GetAdapter(t.Context(), "shopdb")
	if err != nil || fmt.Sprint(a.Resources) != "[products order_lines]" || a.Parallelism != 2 || !a.AllowDroppedTables || a.Resource != "" || fmt.Sprint(a.TableKeys) != "map[order_lines:[order_id line]]" {
		t.Fatalf("adapter from the form: %+v %v", a.Adapter, err)
	}
	b.page("/ui/adapters", `<code>products, order_lines</code>`)
	b.page("/ui/adapters/shopdb/edit", `name="resources" value="products, order_lines"`, `name="parallelism" value="2"`, `name="allow_dropped_tables" value="true" checked`, `name="table_keys" value="order_lines: order_id, line"`)
	rec, err := f.svc.StartRun(t.Context(), "shopdb", adapters.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err = f.svc.WaitRun(t.Context(), rec.ID); err != nil || rec.Status != adapters.RunSucceeded {
		t.Fatalf("run: %+v %v", rec, err)
	}
	run := b.page("/ui/runs/"+rec.ID, `id="point"`, "one_transaction", `id="run-tables"`)
	if !regexp.MustCompile(`data-table="[^"]*products"`).MatchString(run) || !regexp.MustCompile(`data-table="[^"]*order_lines"`).MatchString(run) {
		t.Errorf("the run page lacks a table:\n%s", run)
	}
	// order_lines no longer selected: the next run drops it, and its
	// page says so beside the rows it deleted.
	a.Resources = []string{"products"}
	if _, _, err := f.svc.PutAdapter(t.Context(), a.Adapter); err != nil {
		t.Fatal(err)
	}
	if rec, err = f.svc.StartRun(t.Context(), "shopdb", adapters.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec, err = f.svc.WaitRun(t.Context(), rec.ID); err != nil || rec.Status != adapters.RunSucceeded || rec.Stats.Deleted == 0 {
		t.Fatalf("run dropping order_lines: %+v %v", rec, err)
	}
	run = b.page("/ui/runs/"+rec.ID, "dropped: gone from the source or the selection, its rows deleted")
	if !regexp.MustCompile(fmt.Sprintf(`data-table="[^"]*order_lines">.*dropped: .*−%d</span>`, rec.Stats.Deleted)).MatchString(run) {
		t.Errorf("the run page does not show order_lines dropped with its %d rows:\n%s", rec.Stats.Deleted, run)
	}
	r = b.post("/ui/adapters", url.Values{"name": {"badsel"}, "connection": {"shop"}, "resources": {"products"}, "exclude": {"prod*"}})
	if body := wantStatus(t, "a table both named and excluded", r, http.StatusBadRequest); !strings.Contains(body, "named and excluded") {
		t.Errorf("a table both named and excluded:\n%s", body)
	}
}

// TestConsole_AdapterFormMaxShrinkNotANumber: the adapter form's
// max_shrink of NaN or Inf (which strconv.ParseFloat takes) is refused
// as any value outside 0 to 1 is, on the form, not a 500 when the
// adapter is stored; nothing is saved.
func TestConsole_AdapterFormMaxShrinkNotANumber(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	b := newBrowser(t, f)
	for _, v := range []string{"NaN", "nan", "Inf", "-Inf"} {
		r := b.post("/ui/adapters", url.Values{"name": {"shrinky"}, "connection": {"shop"}, "resource": {"products"}, "max_shrink": {v}})
		body := wantStatus(t, "max_shrink "+v, r, http.StatusBadRequest)
		if !strings.Contains(body, "want a fraction from 0 to 1") {
			t.Errorf("max_shrink %s: the page does not say why:\n%s", v, body)
		}
	}
	f.must(404, "GET", "/v1/adapters/shrinky", "")
}
