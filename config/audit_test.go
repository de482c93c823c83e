package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/server"
)

// TestConfig_Audit: the audit section from a file, its defaults, its
// errors naming the key, and the server options it makes: entries as
// JSON lines on the given writer.
func TestConfig_Audit(t *testing.T) {
	cfg, err := Load(Flags{File: writeFile(t, "c.yaml", "audit:\n  retention: 720h\n  trusted_proxies: [10.0.0.0/8, 192.0.2.1]\n")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Audit.Retention != 720*time.Hour || len(cfg.Audit.TrustedProxies) != 2 {
		t.Fatalf("audit %+v", cfg.Audit)
	}
	var out bytes.Buffer
	o := cfg.Audit.Options(&out, slog.New(slog.DiscardHandler))
	if o.Retention != 720*time.Hour || len(o.TrustedProxies) != 2 || o.TrustedProxies[1].String() != "192.0.2.1/32" {
		t.Fatalf("options %+v", o)
	}
	o.Logger.Info("audit", "actor", "ops")
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil || line["actor"] != "ops" {
		t.Fatalf("not a JSON line: %q %v", out.String(), err)
	}
	if d := Default(); d.Audit.Retention != server.DefaultAuditRetention {
		t.Errorf("default retention %v", d.Audit.Retention)
	}

	bad := Default()
	bad.Audit = AuditConfig{Retention: 0, TrustedProxies: []string{"10.0.0.0/8", "proxy.example"}}
	err = bad.Validate()
	for _, key := range []string{"audit.retention", "audit.trusted_proxies[1]"} {
		if err == nil || !strings.Contains(err.Error(), "config key "+key+":") {
			t.Errorf("error does not name %s: %v", key, err)
		}
	}
}
