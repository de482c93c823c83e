package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store/hbase"
	"github.com/snapstore/snapstore/store/hbase/hbasetest"
)

// TestAudit_SharedTrailOnHBase: two nodes on one HBase table write one
// audit trail: what each recorded, changes and refusals, is listed by
// either, newest first, each entry naming the node that answered. It
// needs the test HBase (SNAPSTORE_TEST_HBASE_THRIFT) and is skipped
// without it.
func TestAudit_SharedTrailOnHBase(t *testing.T) {
	ctx := context.Background()
	opts := hbasetest.Options(t)
	hbasetest.Open(t, func(o *hbase.Options) { *o = opts }) // creates the table, dropped at the end
	tokens := []Token{{Name: "root", Token: auditAdminTok, Role: RoleAdmin}, {Name: "viewer", Token: auditReaderTok, Role: RoleReader}}
	var urls []string
	for _, self := range []string{"a", "b"} {
		st := hbasetest.OpenOptions(t, opts)
		db, err := snapshot.Open(ctx, st, snapshot.Options{})
		if err != nil {
			t.Fatal(err)
		}
		svc, err := adapters.New(ctx, db, adapters.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cl := testCluster()
		for i := range cl.nodes {
			cl.nodes[i].Self = cl.nodes[i].ID == self
		}
		srv, err := New(Options{DB: db, Adapters: svc, Tokens: tokens, Cluster: cl})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(func() {
			ts.Close()
			svc.Close(ctx)
			db.Close()
		})
		urls = append(urls, ts.URL)
	}
	send := func(url, method, path, tok, body string, want int) {
		t.Helper()
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
		}
	}
	conn := `{"name":"wh","type":"mysql","options":{"host":"127.0.0.1","user":"u","database":"d"}}`
	send(urls[0], "POST", "/v1/connections", auditAdminTok, conn, 201)
	time.Sleep(2 * time.Millisecond)
	send(urls[1], "DELETE", "/v1/connections/wh", auditReaderTok, "", 403)
	time.Sleep(2 * time.Millisecond)
	send(urls[1], "POST", "/v1/connections", auditAdminTok, strings.Replace(conn, `"wh"`, `"wh2"`, 1), 201)
	time.Sleep(2 * time.Millisecond)
	send(urls[0], "GET", "/v1/datasets", "wrong-token-text", "", 401)

	for _, url := range urls {
		req, _ := http.NewRequest("GET", url+"/v1/audit", nil)
		req.Header.Set("Authorization", "Bearer "+auditAdminTok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page AuditPage
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range page.Entries {
			got = append(got, e.Node+" "+e.Actor+" "+e.Action+" "+itoa(int64(e.Status)))
		}
		want := []string{"a anonymous listDatasets 401", "b root createConnection 201", "b viewer dropConnection 403", "a root createConnection 201"}
		if !slices.Equal(got, want) {
			t.Errorf("trail read on %s:\n%s\nwant\n%s", url, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
