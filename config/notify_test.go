package config

import (
	"strings"
	"testing"
	"time"
)

// TestConfig_Notify decodes the notify section and adapters' notify
// lists (webhook names; [] is none, absent the default), and names every
// problem by its key.
func TestConfig_Notify(t *testing.T) {
	cfg := Default()
	err := decodeYAML([]byte(`
notify:
  default: [ops]
  stale_after: 3
  stale_interval: 30s
  webhooks:
    - name: ops
      url: https://hooks.example/ops
      secret: env:OPS_SECRET
      events: [run_failed, stale]
      timeout: 5s
      max_attempts: 7
    - name: chat
      url: http://127.0.0.1:9/x
      secret: s3
adapters:
  - name: a
    connection: c
    resource: t
    notify: [ops, chat]
  - name: b
    connection: c
    resource: t
    notify: []
  - name: c
    connection: c
    resource: t
`), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.NotifyOptions(nil, nil)
	if len(o.Webhooks) != 2 || o.Webhooks[0].MaxAttempts != 7 || o.Webhooks[0].Timeout != 5*time.Second || o.StaleAfter != 3 ||
		o.StaleInterval != 30*time.Second || o.Webhooks[1].Name != "chat" || o.Webhooks[1].Secret != "s3" {
		t.Fatalf("options %+v", o)
	}
	if got := cfg.Adapters[0].Notify; len(got) != 2 || got[0] != "ops" || got[1] != "chat" {
		t.Fatalf("adapter a's webhooks %v", got)
	}
	if got := cfg.Adapters[1].Notify; got == nil || len(got) != 0 {
		t.Fatalf("adapter b's webhooks %#v (want none, not the default)", got)
	}
	if got := cfg.Adapters[2].Notify; got != nil {
		t.Fatalf("adapter c's webhooks %#v (want the default)", got)
	}
	if errs := cfg.validateNotify(); len(errs) != 0 {
		t.Fatalf("problems %v", errs)
	}

	bad := Default()
	err = decodeYAML([]byte(`
notify:
  default: [nope]
  webhooks:
    - name: ops
      url: ftp://secret-host/?token=abc
      events: [exploded]
      secret: file:relative
adapters:
  - name: a
    connection: c
    resource: t
    notify: [ops, missing]
`), &bad)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, e := range bad.validateNotify() {
		all = append(all, e.Error())
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{"notify.default[0]", "notify.webhooks[0].url", "notify.webhooks[0].events[0]", "notify.webhooks[0].secret", "adapters[0].notify[1]"} {
		if !strings.Contains(text, want) {
			t.Errorf("no problem at %s in:\n%s", want, text)
		}
	}
	if strings.Contains(text, "adapters[0].notify[0]") {
		t.Errorf("a known webhook named a problem:\n%s", text)
	}
	if strings.Contains(text, "abc") {
		t.Errorf("a problem quotes the URL:\n%s", text)
	}
}

// TestConfig_NotifyInline: an adapter's notify list holds names; an
// inline webhook is refused with its key.
func TestConfig_NotifyInline(t *testing.T) {
	cfg := Default()
	err := decodeYAML([]byte(`
adapters:
  - name: a
    connection: c
    resource: t
    notify: [{url: "http://x", secret: s}]
`), &cfg)
	if err == nil || !strings.Contains(err.Error(), "adapters[0].notify[0]") || !strings.Contains(err.Error(), "holds names") {
		t.Fatalf("inline webhook: %v", err)
	}
}
