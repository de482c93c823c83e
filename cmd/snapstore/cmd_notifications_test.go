package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/notify"
	"github.com/snapstore/snapstore/server"
)

// TestCLI_Notifications serves with a webhook on a real receiver: a
// failed run reaches it signed, `notifications deliveries` lists the
// attempt, `notifications test` sends one, an operator may list but not
// test.
func TestCLI_Notifications(t *testing.T) {
	const adminTok, opsTok, secret = "admin-token-cli-notify-1", "ops-token-cli-notify-2", "whsec-cli-Hh8"
	got := make(chan []byte, 10)
	var verr error
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := notify.Verify([]byte(secret), r.Header, b, time.Now(), 0); err != nil {
			verr = err
		}
		got <- b
	}))
	defer rc.Close()
	t.Setenv("TEST_CLI_WEBHOOK_SECRET", secret)

	dir := t.TempDir()
	srcPath := filepath.Join(dir, "src.db")
	sqliteSource(t, srcPath, `CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL); INSERT INTO products VALUES (1,'cup');`)
	cfg := config.Default()
	cfg.Data = filepath.Join(dir, "data")
	cfg.Listen = "127.0.0.1:0"
	cfg.Connections = []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": srcPath}}}
	cfg.Adapters = []api.Adapter{{Name: "gone", Connection: "src", Resource: "products"}}
	cfg.Notify = config.NotifyConfig{Default: []string{"ops"}, Webhooks: []config.WebhookConfig{{Name: "ops", URL: rc.URL, Secret: "env:TEST_CLI_WEBHOOK_SECRET"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tokens := []server.Token{{Name: "root", Token: adminTok, Role: server.RoleAdmin}, {Name: "ops", Token: opsTok, Role: server.RoleOperator}}
	ctx, cancel := context.WithCancel(context.Background())
	ready, errc := make(chan string, 1), make(chan error, 1)
	go func() { errc <- serve(ctx, &cfg, tokens, slog.New(slog.DiscardHandler), ready) }()
	var url string
	select {
	case addr := <-ready:
		url = "http://" + addr
	case err := <-errc:
		t.Fatalf("serve: %v", err)
	}
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	do := cliAt(t, url)

	sqliteSource(t, srcPath, `DROP TABLE products`)
	do(1, "run", "gone", "--token", opsTok)
	select {
	case b := <-got:
		if !strings.Contains(string(b), `"event":"run_failed"`) || strings.Contains(string(b), secret) {
			t.Fatalf("body %s", b)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the receiver got nothing")
	}
	if verr != nil {
		t.Fatalf("signature: %v", verr)
	}
	var out string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if out, _ = do(0, "notifications", "deliveries", "--token", opsTok); strings.Contains(out, "delivered") {
			break
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(lines[1], "ops") || !strings.Contains(lines[1], "run_failed") ||
		!strings.Contains(lines[1], "gone") || !strings.Contains(lines[1], "1/5") || !strings.Contains(lines[1], "200") {
		t.Fatalf("deliveries:\n%s", out)
	}
	do(1, "notifications", "test", "ops", "--token", opsTok)
	out, _ = do(0, "notifications", "test", "ops", "--token", adminTok)
	if !strings.Contains(out, "delivered") || !strings.Contains(out, "200") {
		t.Fatalf("test:\n%s", out)
	}
	<-got
	do(1, "notifications", "test", "nope", "--token", adminTok)
	out, _ = do(0, "notifications", "deliveries", "--event", "test", "--output", "json", "--token", opsTok)
	var body struct {
		Deliveries []notify.Delivery `json:"deliveries"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil || len(body.Deliveries) != 1 || body.Deliveries[0].Event != "test" {
		t.Fatalf("json: %v %s", err, out)
	}
	out, errs := do(0, "notifications", "deliveries", "--limit", "1", "--token", opsTok)
	if strings.Count(strings.TrimSpace(out), "\n") != 1 || !strings.Contains(errs, "older entries not listed") {
		t.Fatalf("--limit 1:\n%s%s", out, errs)
	}
}
