package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfig_DefaultsAreValid(t *testing.T) {
	cfg := defaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Data != "./data" || cfg.Listen != "127.0.0.1:8080" || cfg.Storage.Backend != "pebble" {
		t.Fatalf("defaults changed: %+v", cfg)
	}
}

func TestConfig_ValidateNamesKeys(t *testing.T) {
	cfg := defaultConfig()
	cfg.Listen = "nohostport"
	cfg.Storage.Backend = "hbase"
	cfg.Log.Level = "loud"
	cfg.Auth.Tokens = []TokenConfig{{Name: "x", Token: "t", Role: "root"}}
	cfg.Connections = []ConnectionConfig{{Name: "c", Type: "sqlite"}, {Name: "c", Type: "sqlite", Sharing: "sometimes"}}
	cfg.Adapters = []AdapterConfig{{Name: "a", Connection: "c", Resource: "t", Schedule: "every tuesday"}, {Name: "b", Guard: GuardConfig{MaxShrink: 2}}}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, key := range []string{"listen", "storage.hbase.thrift", "log.level", "auth.tokens[0].role",
		"connections[1].name", "connections[1].sharing", "adapters[0].schedule", "adapters[1].connection",
		"adapters[1].resource", "adapters[1].guard.max_shrink"} {
		if !strings.Contains(err.Error(), "config key "+key+":") {
			t.Errorf("error does not name %s:\n%v", key, err)
		}
	}
}

func TestConfig_TokenReferences(t *testing.T) {
	t.Setenv("SNAPSTORE_UNIT_TOKEN", "s3cret-from-env")
	f := writeFile(t, "tok", "s3cret-from-file\n")
	cfg := defaultConfig()
	cfg.Auth.Tokens = []TokenConfig{
		{Name: "a", Token: "env:SNAPSTORE_UNIT_TOKEN", Role: "reader"},
		{Name: "b", Token: "file:" + f, Role: "admin"},
		{Name: "c", Token: "literal", Role: "operator"},
	}
	toks, err := cfg.tokens()
	if err != nil {
		t.Fatal(err)
	}
	if toks[0].Token != "s3cret-from-env" || toks[1].Token != "s3cret-from-file" || toks[2].Token != "literal" {
		t.Fatalf("got %+v", toks)
	}
	cfg.Auth.Tokens = []TokenConfig{{Name: "d", Token: "env:SNAPSTORE_UNIT_MISSING", Role: "reader"}}
	if _, err := cfg.tokens(); err == nil || !strings.Contains(err.Error(), "auth.tokens[0].token") {
		t.Fatalf("missing env: %v", err)
	}
}

// TestSampleConfigs loads the annotated sample and the make-run config.
func TestSampleConfigs(t *testing.T) {
	t.Setenv("WAREHOUSE_PASSWORD", "x")
	for _, p := range []string{"../../docs/snapstore.sample.yaml", "../../examples/snapstore.yaml"} {
		cfg, err := loadConfig(&commonFlags{config: p}, nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(cfg.Adapters) == 0 || len(cfg.Connections) == 0 {
			t.Fatalf("%s: %+v", p, cfg)
		}
	}
}

func TestMain_BadConfigRefusesToStart(t *testing.T) {
	p := writeFile(t, "c.yaml", "storage:\n  backend: cassandra\n")
	var out, errb bytes.Buffer
	code := runMain(context.Background(), []string{"serve", "--config", p, "--data", t.TempDir()}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "config key storage.backend") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestServe_BadConfigEveryKeyWithLine: one start names
// every bad key with its line, before the data directory is created, with
// no follow-on error for an adapter whose connection was rejected, and
// exit code 2.
func TestServe_BadConfigEveryKeyWithLine(t *testing.T) {
	p := writeFile(t, "bad.yaml", `listen: 127.0.0.1:0
storage:
  backend: pebble
  backnd: pebble
connections:
  - name: shop
    type: sqlite
    options:
      pth: /tmp/shop.db
adapters:
  - name: products
    connection: shop
    resource: products
    schedule: "every 15s"
    retention:
      ttl: 3600
    guard:
      max_shrink: 2
  - name: copy
    connection: shop
    resource: products
    dataset: products
  - name: lost
    connection: nowhere
    resource: t
`)
	data := filepath.Join(t.TempDir(), "data")
	var out, errb bytes.Buffer
	code := runMain(context.Background(), []string{"serve", "--config", p, "--data", data}, &out, &errb)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	msg := errb.String()
	for _, want := range []string{
		"config key storage.backnd (line 4): unknown key",
		"config key connections[0].options.pth (line 9): unknown option",
		"config key connections[0].options.path (line 8): required",
		"config key adapters[0].schedule (line 14)",
		"config key adapters[0].retention.ttl (line 16)",
		"config key adapters[0].guard.max_shrink (line 18)",
		"config key adapters[1].dataset (line 22)",
		`config key adapters[2].connection (line 24): data connection "nowhere"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, `"shop" is not defined`) || strings.Contains(msg, `"shop" does not exist`) {
		t.Errorf("follow-on error for the rejected connection shop:\n%s", msg)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data directory was created by a refused start: %v", err)
	}
}
