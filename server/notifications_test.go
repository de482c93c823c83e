package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/notify"
)

func TestNotifications(t *testing.T) {
	const secret = "whsec-server-Zk4"
	got := make(chan *http.Request, 10)
	bodies := make(chan []byte, 10)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer rc.Close()
	f := newFixture(t, fixtureOpts{
		tokens: []Token{
			{Name: "root", Token: auditAdminTok, Role: RoleAdmin},
			{Name: "ops", Token: auditOpsTok, Role: RoleOperator},
			{Name: "viewer", Token: auditReaderTok, Role: RoleReader},
		},
		notify: &notify.Options{
			Webhooks: []notify.Webhook{{Name: "ops", URL: rc.URL + "/?token=in-url-Qp9", Secret: secret, MaxAttempts: 2}},
			Default:  []string{"ops"},
		},
	})
	admin := []string{"Authorization", "Bearer " + auditAdminTok}
	ops := []string{"Authorization", "Bearer " + auditOpsTok}
	viewer := []string{"Authorization", "Bearer " + auditReaderTok}

	// A failed run is notified, signed.
	f.exec(`ALTER TABLE notes RENAME TO notes_gone`)
	f.must(200, "POST", "/v1/adapters/notes/runs?wait=true", "", ops...)
	var req *http.Request
	select {
	case req = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the receiver got nothing")
	}
	body := <-bodies
	if err := notify.Verify([]byte(secret), req.Header, body, time.Now(), 0); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if !strings.Contains(string(body), `"event":"run_failed"`) || !strings.Contains(string(body), `"adapter":"notes"`) {
		t.Fatalf("body %s", body)
	}

	// The delivery log: operator and up.
	var page DeliveryPage
	for deadline := time.Now().Add(10 * time.Second); len(page.Deliveries) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r := f.do("GET", "/v1/notifications/deliveries?adapter=notes", "", ops...)
		r.json(t, &page)
	}
	if len(page.Deliveries) != 1 || page.Deliveries[0].Outcome != notify.OutcomeDelivered || page.Deliveries[0].StatusCode != 200 || page.Deliveries[0].Webhook != "ops" {
		t.Fatalf("deliveries %+v", page)
	}
	if r := f.do("GET", "/v1/notifications/deliveries", "", viewer...); r.status != http.StatusForbidden {
		t.Fatalf("reader listing deliveries: %d", r.status)
	}
	if r := f.do("GET", "/v1/notifications/deliveries?page_token=bad", "", ops...); r.status != 400 || r.problem(t).Code != "bad_page_token" {
		t.Fatalf("bad token: %d %s", r.status, r.body)
	}
	if r := f.do("GET", "/v1/notifications/deliveries?event=nope", "", ops...); r.status != 400 {
		t.Fatalf("bad event: %d %s", r.status, r.body)
	}

	// A test event: admin only.
	if r := f.do("POST", "/v1/notifications/webhooks/ops/test", "", ops...); r.status != http.StatusForbidden {
		t.Fatalf("operator testing a webhook: %d", r.status)
	}
	r := f.must(200, "POST", "/v1/notifications/webhooks/ops/test", "", admin...)
	var d notify.Delivery
	r.json(t, &d)
	if d.Event != notify.EventTest || d.Outcome != notify.OutcomeDelivered || d.StatusCode != 200 {
		t.Fatalf("test delivery %+v", d)
	}
	if req := <-got; req.Header.Get(notify.HeaderEvent) != notify.EventTest {
		t.Fatalf("test event headers %v", req.Header)
	}
	<-bodies
	if r := f.do("POST", "/v1/notifications/webhooks/nope/test", "", admin...); r.status != 404 || r.problem(t).Code != "webhook_not_found" {
		t.Fatalf("unknown webhook: %d %s", r.status, r.body)
	}

	// Two pages of one entry each.
	var p1, p2 DeliveryPage
	f.do("GET", "/v1/notifications/deliveries?limit=1", "", ops...).json(t, &p1)
	if len(p1.Deliveries) != 1 || p1.Deliveries[0].Event != notify.EventTest || p1.NextPageToken == "" {
		t.Fatalf("first page %+v", p1)
	}
	f.do("GET", "/v1/notifications/deliveries?limit=1&page_token="+p1.NextPageToken, "", ops...).json(t, &p2)
	if len(p2.Deliveries) != 1 || p2.Deliveries[0].Event != notify.EventRunFailed {
		t.Fatalf("second page %+v", p2)
	}

	// The test request is in the audit trail, naming the webhook.
	ap, err := f.srv.AuditList(context.Background(), AuditFilter{Action: "testWebhook"})
	if err != nil || len(ap.Entries) == 0 || ap.Entries[0].Params["webhook"] != "nope" {
		t.Fatalf("audit %+v %v", ap, err)
	}
	for _, b := range append(f.bodies, f.logs.String()) {
		for _, s := range []string{secret, "in-url-Qp9"} {
			if strings.Contains(b, s) {
				t.Fatalf("%q leaked: %s", s, b)
			}
		}
	}
}

// TestAdapterNotify: an adapter defined through the API names its
// webhooks; its events go to them rather than to notify.default, an
// unknown name is refused, and the list reads back as given.
func TestAdapterNotify(t *testing.T) {
	ops, chat := make(chan []byte, 10), make(chan []byte, 10)
	receiver := func(got chan []byte) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got <- b
		}))
	}
	rops, rchat := receiver(ops), receiver(chat)
	defer rops.Close()
	defer rchat.Close()
	f := newFixture(t, fixtureOpts{notify: &notify.Options{
		Webhooks: []notify.Webhook{{Name: "ops", URL: rops.URL, Secret: "s1"}, {Name: "chat", URL: rchat.URL, Secret: "s2"}},
		Default:  []string{"ops"},
	}})

	p := f.must(400, "PUT", "/v1/adapters/n2", `{"connection":"shop","resource":"notes","notify":["chat","nope"]}`).problem(t)
	if !strings.Contains(p.Detail, `"nope"`) || !strings.Contains(p.Field, "notify[1]") {
		t.Fatalf("unknown webhook: %+v", p)
	}
	f.must(201, "PUT", "/v1/adapters/n2", `{"connection":"shop","resource":"notes","notify":["chat"]}`)
	f.must(201, "PUT", "/v1/adapters/n3", `{"connection":"shop","resource":"notes","notify":[]}`)
	f.must(201, "PUT", "/v1/adapters/n4", `{"connection":"shop","resource":"notes"}`)
	for name, want := range map[string]string{"n2": `"notify":["chat"]`, "n3": `"notify":[]`} {
		if b := string(f.must(200, "GET", "/v1/adapters/"+name, "").body); !strings.Contains(b, want) {
			t.Fatalf("%s: %s", name, b)
		}
	}
	if b := string(f.must(200, "GET", "/v1/adapters/n4", "").body); strings.Contains(b, `"notify"`) {
		t.Fatalf("n4 without a notify list: %s", b)
	}

	f.exec(`ALTER TABLE notes RENAME TO notes_gone`)
	for _, name := range []string{"n3", "n2"} {
		f.must(200, "POST", "/v1/adapters/"+name+"/runs?wait=true", "")
	}
	select {
	case b := <-chat:
		if !strings.Contains(string(b), `"adapter":"n2"`) {
			t.Fatalf("chat got %s", b)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("chat got nothing")
	}
	f.must(200, "POST", "/v1/adapters/n4/runs?wait=true", "")
	select {
	case b := <-ops:
		if !strings.Contains(string(b), `"adapter":"n4"`) {
			t.Fatalf("ops got %s (n2 and n3 name their own webhooks)", b)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ops got nothing")
	}
}
