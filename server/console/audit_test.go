package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

// Tokens of the audit tests: their text must appear in no stored entry
// and no log line.
const (
	auditAdminTok  = "admin-token-Au7-never-stored"
	auditOpsTok    = "operator-token-Bq2-never-stored"
	auditReaderTok = "reader-token-Cz9-never-stored"
	// auditLimitedTok's token may read dataset "notes" only.
	auditLimitedTok = "limited-token-Dx4-never-stored"
)

// auditJournal is the journal of the audit trail in the metadata table
// (server/audit.go), read raw so that a token's text would show.
const auditJournal = "audit"

func newAuditFixture(t *testing.T, ao server.AuditOptions) *fixture {
	t.Helper()
	f := newFixture(t, fixtureOpts{audit: ao, tokens: []server.Token{
		{Name: "root", Token: auditAdminTok, Role: server.RoleAdmin},
		{Name: "ops", Token: auditOpsTok, Role: server.RoleOperator},
		{Name: "viewer", Token: auditReaderTok, Role: server.RoleReader},
		{Name: "limited", Token: auditLimitedTok, Role: server.RoleReader, Datasets: []string{"notes"}},
	}})
	t.Cleanup(func() {
		// No token text in the stored trail or the log (the raw journal
		// values, not what the API makes of them).
		page, _, err := f.db.JournalPage(context.Background(), auditJournal, snapshot.JournalQuery{Limit: 1 << 20})
		if err != nil {
			t.Error(err)
		}
		for _, e := range page {
			for _, tok := range []string{auditAdminTok, auditOpsTok, auditReaderTok, auditLimitedTok} {
				if strings.Contains(string(e.Value), tok) {
					t.Errorf("a stored audit entry holds a token's text: %s", e.Value)
				}
			}
		}
		for _, tok := range []string{auditAdminTok, auditOpsTok, auditReaderTok, auditLimitedTok} {
			if strings.Contains(f.logs.String(), tok) {
				t.Errorf("the log holds a token's text")
			}
		}
	})
	return f
}

// auditTrail reads the whole trail through GET /v1/audit (as admin),
// newest first, following the page tokens.
func (f *fixture) auditTrail(query string) []server.AuditEntry {
	f.t.Helper()
	var out []server.AuditEntry
	tok := ""
	for range 100 {
		q, err := url.ParseQuery(query)
		if err != nil {
			f.t.Fatal(err)
		}
		if tok != "" {
			q.Set("page_token", tok)
		}
		var page server.AuditPage
		f.must(http.StatusOK, "GET", "/v1/audit?"+q.Encode(), "", "Authorization", "Bearer "+auditAdminTok).json(f.t, &page)
		out = append(out, page.Entries...)
		if tok = page.NextPageToken; tok == "" {
			return out
		}
	}
	f.t.Fatal("the audit trail does not end")
	return nil
}

// auditTargets writes an entry's targets as sorted key=value pairs.
func auditTargets(e server.AuditEntry) string {
	var out []string
	for k, v := range map[string]string{"dataset": e.Dataset, "adapter": e.Adapter, "connection": e.Connection} {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	for k, v := range e.Params {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// runAs runs an adapter with token tok and returns the version.
func (f *fixture) runAs(adapter, tok string) int64 {
	f.t.Helper()
	saved := f.token
	f.token = tok
	defer func() { f.token = saved }()
	return f.run(adapter)
}

// TestAudit_ConsoleReads: the console's pages of a dataset's rows are
// recorded as the API's reads when its adapter has audit_reads, without
// the row key; another dataset's are not.
func TestAudit_ConsoleReads(t *testing.T) {
	f := newAuditFixture(t, server.AuditOptions{})
	admin := []string{"Authorization", "Bearer " + auditAdminTok}
	f.must(201, "POST", "/v1/adapters", `{"name":"lines","connection":"shop","resource":"order_lines","audit_reads":true}`, admin...)
	f.runAs("lines", auditAdminTok)
	f.runAs("products", auditAdminTok)
	b := newBrowser(t, f)
	if r := b.post("/ui/login", url.Values{"token": {auditReaderTok}}); r.status != http.StatusSeeOther {
		t.Fatalf("login %d", r.status)
	}
	b.page("/ui/datasets/lines/rows")
	b.page("/ui/datasets/products/rows")

	var reads []string
	for _, e := range f.auditTrail("actor=viewer") {
		reads = append(reads, e.Action+" "+e.Dataset+" "+e.Route)
		if strings.Contains(fmt.Sprint(e.Params), "1001") {
			t.Errorf("a row key is recorded: %+v", e)
		}
	}
	want := []string{
		"scanRows lines /ui/datasets/{dataset}/rows",
		"login  /ui/login",
	}
	if !slices.Equal(reads, want) {
		t.Errorf("reads\n%s\nwant\n%s", strings.Join(reads, "\n"), strings.Join(want, "\n"))
	}
}

// TestAudit_Console: a console form is recorded as the operation it
// mirrors, a refused form and a refused login as refusals; the audit page
// lists the trail for an admin and filters it.
func TestAudit_Console(t *testing.T) {
	f := newAuditFixture(t, server.AuditOptions{})
	f.runAs("products", auditAdminTok)
	anon := newBrowser(t, f)
	wantStatus(t, "wrong token", anon.post("/ui/login", url.Values{"token": {"wrong-" + auditAdminTok}}), http.StatusUnauthorized)
	reader := newBrowser(t, f)
	reader.post("/ui/login", url.Values{"token": {auditReaderTok}})
	wantStatus(t, "reader gc", reader.post("/ui/gc/products", url.Values{"dry_run": {"false"}}), http.StatusForbidden)
	admin := newBrowser(t, f)
	admin.post("/ui/login", url.Values{"token": {auditAdminTok}})
	wantStatus(t, "tag", admin.post("/ui/datasets/products/tags", url.Values{"tag": {"gold"}, "version": {"1"}}), http.StatusSeeOther)
	wantStatus(t, "gc", admin.post("/ui/gc/products", url.Values{"dry_run": {"false"}}), http.StatusOK)
	if r := admin.post("/ui/adapters/notes/run", url.Values{"force": {"true"}}); r.status >= 400 {
		t.Fatalf("run: %d %s", r.status, r.body)
	}

	var got []string
	for _, e := range f.auditTrail("") {
		if strings.HasPrefix(e.Route, "/ui/") {
			got = append(got, fmt.Sprintf("%s %s %s %d %s %s", e.Action, e.Actor, e.Route, e.Status, e.Code, auditTargets(e)))
		}
	}
	want := []string{
		"startRun root /ui/adapters/{name}/run 303  adapter=notes dataset=notes force=true",
		"gc root /ui/gc/{dataset} 200  dataset=products dry_run=false",
		"putTag root /ui/datasets/{dataset}/tags 303  dataset=products tag=gold",
		"login root /ui/login 303  ",
		"gc viewer /ui/gc/{dataset} 403 forbidden dataset=products dry_run=false",
		"login viewer /ui/login 303  ",
		"login anonymous /ui/login 401 unauthorized ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("console entries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	admin.page("/ui/audit", `<table class="list" id="audit">`, `data-action="putTag"`, "gold", "viewer")
	admin.page("/ui/audit?actor=viewer&limit=1", `data-action="gc"`)
	if r := reader.get("/ui/audit"); r.status != http.StatusForbidden {
		t.Errorf("a reader's audit page: %d", r.status)
	}
	if strings.Contains(reader.page("/ui/"), `href="/ui/audit"`) {
		t.Error("a reader is offered the audit page")
	}
}

// TestAudit_ConsoleOutsideGrant: a console page of a dataset outside a
// limited token's grant is answered as not found and recorded as a
// refusal (params grant=outside); a page inside the grant is not.
func TestAudit_ConsoleOutsideGrant(t *testing.T) {
	f := newAuditFixture(t, server.AuditOptions{})
	f.runAs("products", auditAdminTok)
	b := newBrowser(t, f)
	if r := b.post("/ui/login", url.Values{"token": {auditLimitedTok}}); r.status != http.StatusSeeOther {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	wantStatus(t, "a dataset outside the grant", b.get("/ui/datasets/products"), http.StatusNotFound)
	wantStatus(t, "the runs of an adapter outside the grant", b.get("/ui/runs?adapter=products"), http.StatusNotFound)
	wantStatus(t, "the datasets list", b.get("/ui/"), http.StatusOK)
	var got []string
	for _, e := range f.auditTrail("actor=limited") {
		got = append(got, fmt.Sprintf("%s %s %d %s %s", e.Action, e.Route, e.Status, e.Code, auditTargets(e)))
	}
	want := []string{
		"listRuns /ui/runs 404 adapter_not_found grant=outside",
		"getDataset /ui/datasets/{dataset} 404 dataset_not_found dataset=products grant=outside",
		"login /ui/login 303  ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
