package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/snapshot"
)

// Tokens of the audit tests: their text must appear in no stored entry
// and no log line.
const (
	auditAdminTok  = "admin-token-Au7-never-stored"
	auditOpsTok    = "operator-token-Bq2-never-stored"
	auditReaderTok = "reader-token-Cz9-never-stored"
	// auditLimitedTok's token may read dataset "lines" only.
	auditLimitedTok = "limited-token-Dx4-never-stored"
)

// journalAll reads a whole (test-sized) journal.
var journalAll = snapshot.JournalQuery{Limit: 1 << 20}

func newAuditFixture(t *testing.T, ao AuditOptions) *fixture {
	t.Helper()
	f := newFixture(t, fixtureOpts{cluster: testCluster(), audit: ao, tokens: []Token{
		{Name: "root", Token: auditAdminTok, Role: RoleAdmin},
		{Name: "ops", Token: auditOpsTok, Role: RoleOperator},
		{Name: "viewer", Token: auditReaderTok, Role: RoleReader},
		{Name: "limited", Token: auditLimitedTok, Role: RoleOperator, Datasets: []string{"lines"}},
	}})
	t.Cleanup(func() {
		// No token text in the stored trail or the log (the raw journal
		// values, not what the API makes of them).
		page, _, err := f.db.JournalPage(context.Background(), auditJournal, journalAll)
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
func (f *fixture) auditTrail(query string) []AuditEntry {
	f.t.Helper()
	var out []AuditEntry
	tok := ""
	for range 100 {
		q, err := url.ParseQuery(query)
		if err != nil {
			f.t.Fatal(err)
		}
		if tok != "" {
			q.Set("page_token", tok)
		}
		var page AuditPage
		f.must(http.StatusOK, "GET", "/v1/audit?"+q.Encode(), "", "Authorization", "Bearer "+auditAdminTok).json(f.t, &page)
		out = append(out, page.Entries...)
		if tok = page.NextPageToken; tok == "" {
			return out
		}
	}
	f.t.Fatal("the audit trail does not end")
	return nil
}

// TestAudit_EveryAction runs each kind of change once, a 401 and a 403,
// and finds each recorded once, with its actor, target, status and code;
// reads are not recorded (the products adapter does not ask for it).
func TestAudit_EveryAction(t *testing.T) {
	f := newAuditFixture(t, AuditOptions{})
	admin := []string{"Authorization", "Bearer " + auditAdminTok}
	ops := []string{"Authorization", "Bearer " + auditOpsTok}
	viewer := []string{"Authorization", "Bearer " + auditReaderTok}

	conn := `{"name":"warehouse","type":"mysql","options":{"host":"127.0.0.1","port":1,"user":"u","password":"` + knownSecret + `","database":"d"}}`
	f.must(201, "POST", "/v1/connections", conn, admin...)
	f.must(200, "PUT", "/v1/connections/warehouse", `{"type":"mysql","options":{"host":"127.0.0.1","user":"u2","password":"`+knownSecret+`"}}`, admin...)
	f.must(204, "DELETE", "/v1/connections/warehouse", "", admin...)
	f.must(201, "POST", "/v1/adapters", `{"name":"lines","connection":"shop","resource":"order_lines"}`, admin...)
	f.must(200, "PUT", "/v1/adapters/lines", `{"connection":"shop","resource":"order_lines","schedule":"@every 1h"}`, admin...)
	f.must(200, "POST", "/v1/adapters/products/runs?wait=true", "", ops...)
	f.must(200, "POST", "/v1/adapters/products/runs?wait=true&force=true", "", ops...)
	f.must(204, "DELETE", "/v1/adapters/lines", "", admin...)
	f.must(200, "PUT", "/v1/datasets/products/tags/release", `{"version":1}`, admin...)
	f.must(204, "DELETE", "/v1/datasets/products/tags/release", "", admin...)
	f.must(200, "POST", "/v1/datasets/products/rollback", `{"version":1}`, admin...)
	f.must(200, "POST", "/v1/datasets/products/gc", "", admin...)
	f.must(200, "POST", "/v1/adapters/notes/runs?wait=true", "", admin...)
	f.must(204, "DELETE", "/v1/datasets/notes", "", admin...)
	f.must(200, "POST", "/v1/cluster/nodes/b/drain", "", admin...)
	f.must(200, "DELETE", "/v1/cluster/nodes/b/drain", "", admin...)
	f.must(204, "DELETE", "/v1/cluster/nodes/c", "", admin...)
	f.must(200, "POST", "/v1/cluster/keys/install", `{"key":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="}`, admin...)
	var created struct{ Token string }
	f.must(201, "POST", "/v1/tokens", `{"name":"ci","role":"reader"}`, admin...).json(t, &created)
	f.must(204, "DELETE", "/v1/tokens/ci", "", admin...)
	f.must(200, "POST", "/v1/secrets/rotate", "", admin...)
	f.must(200, "GET", "/v1/datasets/products/rows", "", viewer...) // a read: not recorded
	f.wantProblem(401, "unauthorized", "", "GET", "/v1/datasets", "", "Authorization", "Bearer "+auditAdminTok+"-wrong")
	f.wantProblem(403, "forbidden", "", "POST", "/v1/datasets/products/gc", "", viewer...)
	f.wantProblem(403, "forbidden", "", "POST", "/v1/adapters/products/runs", "", viewer...)
	f.wantProblem(409, "adapter_exists", "", "POST", "/v1/adapters", `{"name":"products","connection":"shop","resource":"products"}`, admin...)
	// An expired API token is still known: its refusal names it.
	var brief struct{ Token string }
	f.must(201, "POST", "/v1/tokens", `{"name":"brief","role":"reader","expires_in":"1h"}`, admin...).json(t, &brief)
	f.srv.now = func() time.Time { return time.Now().Add(61 * time.Minute) }
	f.wantProblem(401, "token_expired", "", "GET", "/v1/datasets", "", "Authorization", "Bearer "+brief.Token)
	f.srv.now = time.Now

	got := f.auditTrail("")
	slices.Reverse(got) // oldest first, as sent
	type want struct {
		action, actor, target string
		status                int
		code                  string
	}
	wants := []want{
		{"createConnection", "root", "connection=warehouse", 201, ""},
		{"putConnection", "root", "connection=warehouse", 200, ""},
		{"dropConnection", "root", "connection=warehouse", 204, ""},
		{"createAdapter", "root", "adapter=lines dataset=lines", 201, ""},
		{"putAdapter", "root", "adapter=lines dataset=lines", 200, ""},
		{"startRun", "ops", "adapter=products dataset=products wait=true", 200, ""},
		{"startRun", "ops", "adapter=products dataset=products force=true wait=true", 200, ""},
		{"deleteAdapter", "root", "adapter=lines", 204, ""},
		{"putTag", "root", "dataset=products tag=release", 200, ""},
		{"deleteTag", "root", "dataset=products tag=release", 204, ""},
		{"rollback", "root", "dataset=products", 200, ""},
		{"gc", "root", "dataset=products", 200, ""},
		{"startRun", "root", "adapter=notes dataset=notes wait=true", 200, ""},
		{"dropDataset", "root", "dataset=notes", 204, ""},
		{"drainClusterNode", "root", "node=b", 200, ""},
		{"resumeClusterNode", "root", "node=b", 200, ""},
		{"forgetClusterNode", "root", "node=c", 204, ""},
		{"changeClusterKeys", "root", "op=install", 200, ""},
		{"createToken", "root", "token=ci", 201, ""},
		{"revokeToken", "root", "token=ci", 204, ""},
		{"rotateSecrets", "root", "", 200, ""},
		{"listDatasets", "anonymous", "", 401, "unauthorized"},
		{"gc", "viewer", "dataset=products", 403, "forbidden"},
		{"startRun", "viewer", "adapter=products dataset=products", 403, "forbidden"},
		{"createAdapter", "root", "adapter=products dataset=products", 409, "adapter_exists"},
		{"createToken", "root", "token=brief", 201, ""},
		{"listDatasets", "brief", "", 401, "token_expired"},
	}
	if len(got) != len(wants) {
		for _, e := range got {
			t.Logf("%+v", e)
		}
		t.Fatalf("%d entries, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		e := got[i]
		if e.Action != w.action || e.Actor != w.actor || auditTargets(e) != w.target || e.Status != w.status || e.Code != w.code {
			t.Errorf("entry %d: %s %s [%s] %d %q, want %s %s [%s] %d %q", i, e.Action, e.Actor, auditTargets(e), e.Status, e.Code, w.action, w.actor, w.target, w.status, w.code)
		}
		if e.Remote != "127.0.0.1" || e.Node != "a" || e.ID == "" || e.Time.IsZero() || e.Route == "" || e.Method == "" {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	if got[8].Route != "/v1/datasets/{dataset}/tags/{tag}" || got[8].Method != "PUT" {
		t.Errorf("route of putTag: %s %s", got[8].Method, got[8].Route)
	}
	// One JSON-able log line per entry, logger=audit.
	if n := strings.Count(f.logs.String(), "msg=audit logger=audit"); n != len(wants) {
		t.Errorf("%d audit log lines, want %d", n, len(wants))
	}
	// The created token's text is neither stored in the trail nor logged.
	if raw, _ := json.Marshal(got); created.Token == "" || strings.Contains(string(raw), created.Token) || strings.Contains(f.logs.String(), created.Token) {
		t.Errorf("the created token's text in the trail or the log, or none created")
	}
	// The trail is the admin's: a reader is refused (and that is recorded).
	f.wantProblem(403, "forbidden", "", "GET", "/v1/audit", "", viewer...)
}

// auditTargets writes an entry's targets as sorted key=value pairs.
func auditTargets(e AuditEntry) string {
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

// TestAudit_NodeCall: a cluster node's call is recorded under the node's
// name, and one refused for a bearer token under the token's.
func TestAudit_NodeCall(t *testing.T) {
	f := newAuditFixture(t, AuditOptions{})
	body := `{"adapter":"nope","run_id":"r1764669600000000000-0001","trigger":"api","placed_by":"n1"}`
	f.do("POST", "/v1/cluster/runs", body, "Authorization", "Snapstore-Node n1 ok")
	f.do("POST", "/v1/cluster/runs", body, "Authorization", "Bearer "+auditAdminTok)
	got := f.auditTrail("action=takeHandedRun")
	if len(got) != 2 || got[1].Actor != "node:n1" || got[1].Status != 404 || got[1].Code != "adapter_not_found" ||
		got[0].Actor != "root" || got[0].Status != 403 {
		t.Fatalf("entries %+v", got)
	}
}

// TestAudit_NoTokens: a server without tokens records its changes as
// anonymous.
func TestAudit_NoTokens(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.must(200, "PUT", "/v1/datasets/products/tags/x", `{"version":`+itoa(f.run("products"))+`}`)
	var page AuditPage
	f.must(200, "GET", "/v1/audit?action=putTag", "").json(t, &page)
	if len(page.Entries) != 1 || page.Entries[0].Actor != "anonymous" || page.Entries[0].Node != "" {
		t.Fatalf("entries %+v", page.Entries)
	}
}

// TestAudit_FiltersAndPages: since/until, actor, action and dataset
// select entries; pages of every size give the same trail, newest first;
// a bad page token or time is a 400 naming it.
func TestAudit_FiltersAndPages(t *testing.T) {
	f := newAuditFixture(t, AuditOptions{})
	admin := []string{"Authorization", "Bearer " + auditAdminTok}
	viewer := []string{"Authorization", "Bearer " + auditReaderTok}
	vp := itoa(f.runAs("products", auditAdminTok))
	vn := itoa(f.runAs("notes", auditAdminTok))
	mid := time.Now().UTC()
	time.Sleep(5 * time.Millisecond)
	for i := range 5 {
		f.must(200, "PUT", fmt.Sprintf("/v1/datasets/products/tags/t%d", i), `{"version":`+vp+`}`, admin...)
	}
	f.must(200, "PUT", "/v1/datasets/notes/tags/n", `{"version":`+vn+`}`, admin...)
	f.wantProblem(403, "forbidden", "", "DELETE", "/v1/datasets/notes/tags/n", "", viewer...)

	all := f.auditTrail("")
	if len(all) != 9 {
		t.Fatalf("%d entries, want 9", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Time.After(all[i-1].Time) {
			t.Fatalf("entry %d is newer than entry %d", i, i-1)
		}
	}
	for _, limit := range []int{1, 2, 4, 9, 10} {
		paged := f.auditTrail(fmt.Sprintf("limit=%d", limit))
		if !slices.EqualFunc(paged, all, func(a, b AuditEntry) bool { return a.ID == b.ID }) {
			t.Errorf("pages of %d differ from the whole trail", limit)
		}
	}
	count := func(q string) int { return len(f.auditTrail(q)) }
	for q, want := range map[string]int{
		"action=putTag":                         6,
		"action=putTag&dataset=notes":           1,
		"dataset=products":                      6,
		"actor=viewer":                          1,
		"actor=root&limit=2":                    8,
		"since=" + mid.Format(time.RFC3339Nano): 7,
		"until=" + mid.Format(time.RFC3339Nano): 2,
		"action=putTag&limit=2&since=" + mid.Format(time.RFC3339Nano): 6,
		"action=rotateSecrets": 0,
	} {
		if got := count(q); got != want {
			t.Errorf("%s: %d entries, want %d", q, got, want)
		}
	}
	f.wantProblem(400, "bad_page_token", "page_token", "GET", "/v1/audit?page_token=bm9wZQ", "", admin...)
	f.wantProblem(400, "bad_request", "since", "GET", "/v1/audit?since=yesterday", "", admin...)
	if p := f.wantProblem(400, "bad_request", "action", "GET", "/v1/audit?action=rollbackDataset", "", admin...); !strings.Contains(p.Detail, `unknown "rollbackDataset"`) || !strings.Contains(p.Detail, "rollback, ") || !strings.Contains(p.Detail, "login") {
		t.Errorf("an unknown action: %q", p.Detail)
	}
}

// TestAudit_Retention: trimming removes the entries older than the
// retention and keeps the others.
func TestAudit_Retention(t *testing.T) {
	f := newAuditFixture(t, AuditOptions{Retention: 24 * time.Hour})
	ctx := context.Background()
	now := time.Now()
	f.srv.RecordAudit(ctx, AuditEntry{Time: now.Add(-48 * time.Hour), Action: "old", Status: 200})
	f.srv.RecordAudit(ctx, AuditEntry{Time: now.Add(-25 * time.Hour), Action: "old", Status: 200})
	f.srv.RecordAudit(ctx, AuditEntry{Time: now.Add(-23 * time.Hour), Action: "kept", Status: 200})
	f.must(200, "PUT", "/v1/datasets/products/tags/x", `{"version":`+itoa(f.runAs("products", auditAdminTok))+`}`, "Authorization", "Bearer "+auditAdminTok)
	f.srv.TrimAudit(ctx)
	var actions []string
	for _, e := range f.auditTrail("") {
		actions = append(actions, e.Action)
	}
	if got := strings.Join(actions, " "); got != "putTag startRun kept" {
		t.Fatalf("after retention: %s", got)
	}
	if def := newAuditTrail(AuditOptions{}, nil); def.retention != DefaultAuditRetention {
		t.Errorf("default retention %v", def.retention)
	}
}

// runAs runs an adapter with token tok and returns the version.
func (f *fixture) runAs(adapter, tok string) int64 {
	f.t.Helper()
	saved := f.token
	f.token = tok
	defer func() { f.token = saved }()
	return f.run(adapter)
}

// TestAudit_Reads: a dataset whose adapter has audit_reads records one
// entry per read request (rows, a row, a diff, by GET or HEAD, which the
// entry names; the console's reads are
// package console's tests), without the row key; another dataset's reads are not
// recorded.
func TestAudit_Reads(t *testing.T) {
	f := newAuditFixture(t, AuditOptions{})
	admin := []string{"Authorization", "Bearer " + auditAdminTok}
	viewer := []string{"Authorization", "Bearer " + auditReaderTok}
	f.must(201, "POST", "/v1/adapters", `{"name":"lines","connection":"shop","resource":"order_lines","audit_reads":true}`, admin...)
	f.runAs("lines", auditAdminTok)
	f.runAs("products", auditAdminTok)
	f.must(200, "GET", "/v1/datasets/lines/rows?limit=2", "", viewer...)
	f.must(200, "GET", "/v1/datasets/lines/rows/1001/2", "", viewer...)
	f.must(200, "GET", "/v1/datasets/lines/diff?stats_only=true&from=1&to=1", "", viewer...)
	f.must(200, "HEAD", "/v1/datasets/lines/rows/1001/2", "", viewer...)
	f.must(200, "GET", "/v1/datasets/products/rows", "", viewer...)
	f.must(200, "GET", "/v1/datasets/products/rows/1", "", viewer...)

	var reads []string
	for _, e := range f.auditTrail("actor=viewer") {
		reads = append(reads, e.Method+" "+e.Action+" "+e.Dataset+" "+e.Route)
		if strings.Contains(fmt.Sprint(e.Params), "1001") {
			t.Errorf("a row key is recorded: %+v", e)
		}
	}
	want := []string{
		"HEAD getRow lines /v1/datasets/{dataset}/rows/{key}",
		"GET diff lines /v1/datasets/{dataset}/diff",
		"GET getRow lines /v1/datasets/{dataset}/rows/{key}",
		"GET scanRows lines /v1/datasets/{dataset}/rows",
	}
	if !slices.Equal(reads, want) {
		t.Errorf("reads\n%s\nwant\n%s", strings.Join(reads, "\n"), strings.Join(want, "\n"))
	}
}

// TestAudit_OutsideGrant: a limited token's request for a dataset, an
// adapter or a run outside its grant is answered as not found and
// recorded as a refusal (params grant=outside), reads included; the same
// not found for a token of every dataset, and a read inside the grant,
// are not recorded.
func TestAudit_OutsideGrant(t *testing.T) {
	f := newAuditFixture(t, AuditOptions{})
	admin := []string{"Authorization", "Bearer " + auditAdminTok}
	limited := []string{"Authorization", "Bearer " + auditLimitedTok}
	f.must(201, "POST", "/v1/adapters", `{"name":"lines","connection":"shop","resource":"order_lines"}`, admin...)
	f.runAs("lines", auditAdminTok)
	f.runAs("products", auditAdminTok)
	f.must(200, "GET", "/v1/datasets/lines/rows?limit=2", "", limited...)
	f.wantProblem(404, "dataset_not_found", "", "GET", "/v1/datasets/products/rows", "", limited...)
	f.wantProblem(404, "dataset_not_found", "", "GET", "/v1/datasets/nope/rows", "", admin...)
	f.wantProblem(404, "adapter_not_found", "", "POST", "/v1/adapters/products/runs", "", limited...)
	f.wantProblem(404, "adapter_not_found", "adapter", "GET", "/v1/runs?adapter=products", "", limited...)
	f.wantProblem(404, "adapter_not_found", "adapter", "GET", "/v1/runs?adapter=nope", "", admin...)

	var got []string
	for _, e := range f.auditTrail("") {
		if e.Actor == "limited" || e.Status == 404 {
			got = append(got, fmt.Sprintf("%s %s %s %d %s %s", e.Method, e.Action, e.Actor, e.Status, e.Code, auditTargets(e)))
		}
	}
	want := []string{
		"GET listAllRuns limited 404 adapter_not_found adapter=products dataset=products grant=outside",
		"POST startRun limited 404 adapter_not_found adapter=products dataset=products grant=outside",
		"GET scanRows limited 404 dataset_not_found dataset=products grant=outside",
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAudit_ClientAddr: X-Forwarded-For is believed from a trusted proxy
// only, and then only up to the first address that is not trusted.
func TestAudit_ClientAddr(t *testing.T) {
	a := newAuditTrail(AuditOptions{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}}, nil)
	none := newAuditTrail(AuditOptions{}, nil)
	for _, c := range []struct {
		peer, xff string
		want      string
		trail     *auditTrail
	}{
		{"127.0.0.1:5000", "203.0.113.7", "203.0.113.7", a},
		{"127.0.0.1:5000", "203.0.113.7", "127.0.0.1", none},
		{"10.1.2.3:5000", "198.51.100.1, 203.0.113.7, 10.9.9.9", "203.0.113.7", a},
		{"192.0.2.1:5000", "203.0.113.7", "192.0.2.1", a}, // not a proxy: header ignored
		{"10.1.2.3:5000", "", "10.1.2.3", a},
		{"10.1.2.3:5000", "10.0.0.5", "10.0.0.5", a},  // all trusted: the leftmost
		{"10.1.2.3:5000", "not-an-ip", "10.1.2.3", a}, // mangled: the proxy
		{"[::ffff:10.1.2.3]:5000", "203.0.113.9", "203.0.113.9", a},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.peer
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := c.trail.clientAddr(r); got != c.want {
			t.Errorf("peer %s xff %q: %s, want %s", c.peer, c.xff, got, c.want)
		}
	}
	f := newAuditFixture(t, AuditOptions{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	f.wantProblem(401, "unauthorized", "", "GET", "/v1/datasets", "", "X-Forwarded-For", "203.0.113.50")
	if got := f.auditTrail(""); len(got) != 1 || got[0].Remote != "203.0.113.50" {
		t.Fatalf("entries %+v", got)
	}
}

// TestAudit_JSONLogLine: each entry is one JSON line of the audit
// logger, msg "audit", logger "audit", with the entry's fields and its id
// in the trail; never the token.
func TestAudit_JSONLogLine(t *testing.T) {
	buf := &testenv.SyncBuffer{}
	f := newAuditFixture(t, AuditOptions{Logger: slog.New(slog.NewJSONHandler(buf, nil))})
	f.runAs("products", auditAdminTok)
	buf.Reset() // the run's entry
	f.wantProblem(403, "forbidden", "", "DELETE", "/v1/datasets/products", "", "Authorization", "Bearer "+auditReaderTok)
	f.must(200, "POST", "/v1/datasets/products/gc?dry_run=true", "", "Authorization", "Bearer "+auditAdminTok)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), buf)
	}
	trail := f.auditTrail("")[:2]
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, l)
		}
		if m["msg"] != "audit" || m["logger"] != "audit" || m["level"] != "INFO" || m["id"] != trail[1-i].ID {
			t.Errorf("line %d: %s", i, l)
		}
		if strings.Contains(l, auditReaderTok) || strings.Contains(l, auditAdminTok) {
			t.Errorf("line %d holds a token: %s", i, l)
		}
	}
	var first, second map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if first["actor"] != "viewer" || first["action"] != "dropDataset" || first["status"] != float64(403) || first["code"] != "forbidden" ||
		first["dataset"] != "products" || first["remote"] != "127.0.0.1" || first["node"] != "a" {
		t.Errorf("refusal line: %s", lines[0])
	}
	if second["action"] != "gc" || second["params"].(map[string]any)["dry_run"] != "true" {
		t.Errorf("gc line: %s", lines[1])
	}
}

// TestAppendAudit: a command without a server appends to the same trail.
func TestAppendAudit(t *testing.T) {
	f := newAuditFixture(t, AuditOptions{})
	id, err := AppendAudit(context.Background(), f.db, AuditEntry{Action: "rotateSecrets", Status: 200})
	if err != nil {
		t.Fatal(err)
	}
	got := f.auditTrail("action=rotateSecrets")
	if len(got) != 1 || got[0].ID != id || got[0].Actor != "anonymous" || got[0].Time.IsZero() {
		t.Fatalf("entries %+v", got)
	}
}
