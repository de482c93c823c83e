package console

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/notify"
	"github.com/snapstore/snapstore/server"
)

// TestNotifications_Console: the notifications page for operators, the
// test button for admins, its test event recorded in the audit trail;
// a reader is not offered the page.
func TestNotifications_Console(t *testing.T) {
	const secret = "whsec-console-Zk4"
	got := make(chan *http.Request, 10)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		got <- r
	}))
	defer rc.Close()
	f := newFixture(t, fixtureOpts{
		tokens: []server.Token{
			{Name: "root", Token: auditAdminTok, Role: server.RoleAdmin},
			{Name: "ops", Token: auditOpsTok, Role: server.RoleOperator},
			{Name: "viewer", Token: auditReaderTok, Role: server.RoleReader},
		},
		notify: &notify.Options{
			Webhooks: []notify.Webhook{{Name: "ops", URL: rc.URL + "/?token=in-url-Qp9", Secret: secret, MaxAttempts: 2}},
			Default:  []string{"ops"},
		},
	})
	ops := []string{"Authorization", "Bearer " + auditOpsTok}
	// A failed run is notified and delivered.
	f.exec(`ALTER TABLE notes RENAME TO notes_gone`)
	f.must(200, "POST", "/v1/adapters/notes/runs?wait=true", "", ops...)
	select {
	case <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the receiver got nothing")
	}
	var page server.DeliveryPage
	for deadline := time.Now().Add(10 * time.Second); len(page.Deliveries) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		f.do("GET", "/v1/notifications/deliveries?adapter=notes", "", ops...).json(t, &page)
	}
	if len(page.Deliveries) != 1 {
		t.Fatalf("deliveries %+v", page)
	}
	// A test event through the API.
	f.must(200, "POST", "/v1/notifications/webhooks/ops/test", "", "Authorization", "Bearer "+auditAdminTok)
	<-got

	// The console: the page for operators, the test button for admins.
	opsB := newBrowser(t, f)
	opsB.post("/ui/login", url.Values{"token": {auditOpsTok}})
	html := opsB.page("/ui/notifications?event=run_failed", `<table class="list" id="deliveries">`, `data-event="run_failed"`, `data-outcome="delivered"`)
	if strings.Contains(html, `data-event="test"`) || strings.Contains(html, "Send a test event") {
		t.Errorf("the filtered page for an operator:\n%s", html)
	}
	if !strings.Contains(opsB.page("/ui/"), `href="/ui/notifications"`) {
		t.Error("an operator is not offered the notifications page")
	}
	adminB := newBrowser(t, f)
	adminB.post("/ui/login", url.Values{"token": {auditAdminTok}})
	adminB.page("/ui/notifications", "Send a test event", `data-event="test"`)
	wantStatus(t, "console test", adminB.post("/ui/notifications/webhooks/ops/test", nil), http.StatusSeeOther)
	if req := <-got; req.Header.Get(notify.HeaderEvent) != notify.EventTest {
		t.Fatalf("console test event headers %v", req.Header)
	}
	wantStatus(t, "operator's console test", opsB.post("/ui/notifications/webhooks/ops/test", nil), http.StatusForbidden)
	ap, err := f.srv.AuditList(context.Background(), server.AuditFilter{Action: "testWebhook"})
	if err != nil || len(ap.Entries) < 2 || ap.Entries[0].Params["webhook"] != "ops" || ap.Entries[0].Adapter != "" {
		t.Fatalf("console audit %+v %v", ap, err)
	}
	viewerB := newBrowser(t, f)
	viewerB.post("/ui/login", url.Values{"token": {auditReaderTok}})
	if strings.Contains(viewerB.page("/ui/"), `href="/ui/notifications"`) {
		t.Error("a reader is offered the notifications page")
	}

	for _, b := range append(f.bodies, f.logs.String()) {
		for _, s := range []string{secret, "in-url-Qp9"} {
			if strings.Contains(b, s) {
				t.Fatalf("%q leaked: %s", s, b)
			}
		}
	}
}
