package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfig_DefaultsAreValid(t *testing.T) {
	cfg := defaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Data != "./data" || cfg.Listen != "127.0.0.1:8080" || cfg.Storage.Backend != "pebble" {
		t.Fatalf("defaults changed: %+v", cfg)
	}
}

func TestConfig_FileDecodes(t *testing.T) {
	p := writeFile(t, "c.yaml", `
data: /var/lib/snapstore
listen: 127.0.0.1:9999
log: {level: debug, format: json}
shutdown_timeout: 45s
connections:
  - name: shop
    type: sqlite
    options: {path: shop.db, busy_timeout: 2s}
adapters:
  - name: products
    connection: shop
    resource: products
    key_columns: [id]
    schedule: "@every 15s"
    retention: {ttl: 36h, min_versions: 3}
    guard: {allow_empty: true, max_shrink: 0.2}
    retries: 2
    retry_backoff: 5s
`)
	cfg := defaultConfig()
	if err := loadFile(p, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a := cfg.adapterSpecs()[0]
	if cfg.Data != "/var/lib/snapstore" || cfg.Log.Format != "json" || cfg.ShutdownTimeout != 45*time.Second ||
		a.Retention.TTL != 36*time.Hour || a.Retention.MinVersions != 3 || !a.Guard.AllowEmpty || a.Guard.MaxShrink != 0.2 ||
		a.RetryBackoff != 5*time.Second || a.KeyColumns[0] != "id" || cfg.Connections[0].Options["path"] != "shop.db" {
		t.Fatalf("decoded %+v / %+v", cfg, a)
	}
	// Keys absent from the file keep their defaults.
	if cfg.Storage.Backend != "pebble" || cfg.Snapshot.Partitions != 1 {
		t.Fatalf("defaults lost: %+v", cfg)
	}
}

// TestConfig_BadFileNamesEveryKey checks that each problem is reported with
// its key path and line, all at once.
func TestConfig_BadFileNamesEveryKey(t *testing.T) {
	p := writeFile(t, "c.yaml", `listen: [1, 2]
storage:
  backnd: hbase
shutdown_timeout: soon
adapters:
  - name: a
    connection: c
    resource: t
    retries: many
    schedul: "@every 1s"
`)
	cfg := defaultConfig()
	err := loadFile(p, &cfg)
	if err == nil {
		t.Fatal("bad file accepted")
	}
	for _, want := range []string{
		"config key listen (line 1)",
		"config key storage.backnd (line 3): unknown key",
		"config key shutdown_timeout (line 4)",
		"config key adapters[0].retries (line 9)",
		"config key adapters[0].schedul (line 10): unknown key",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestConfig_StorageShorthand(t *testing.T) {
	cfg := defaultConfig()
	if err := decodeYAML([]byte("storage: hbase\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Storage.Backend != "hbase" {
		t.Fatalf("backend %q", cfg.Storage.Backend)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "storage.hbase.thrift") {
		t.Fatalf("hbase without thrift: %v", err)
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

func TestConfig_Env(t *testing.T) {
	cfg := defaultConfig()
	cfg.Connections = []ConnectionConfig{{Name: "db", Type: "mysql", Options: map[string]any{"host": "h"}}}
	cfg.Adapters = []AdapterConfig{{Name: "a", Connection: "db", Resource: "t"}}
	unknown, err := applyEnv(&cfg, []string{
		"SNAPSTORE_LISTEN=127.0.0.1:7000",
		"SNAPSTORE_STORAGE_BACKEND=hbase",
		"SNAPSTORE_STORAGE_HBASE_THRIFT=hb:9090",
		"SNAPSTORE_STORAGE_HBASE_TABLE=x_",
		"SNAPSTORE_SHUTDOWN_TIMEOUT=5s",
		"SNAPSTORE_ADAPTERS_0_SCHEDULE=@every 1m",
		"SNAPSTORE_ADAPTERS_0_KEY_COLUMNS=a, b",
		"SNAPSTORE_ADAPTERS_0_RETENTION_MIN_VERSIONS=4",
		"SNAPSTORE_CONNECTIONS_0_OPTIONS_PASSWORD=env:DBPW",
		"SNAPSTORE_TEST_MYSQL_DSN=ignored",
		"SNAPSTORE_SERVER=http://x",
		"SNAPSTORE_LISTN=typo",
		"SNAPSTORE_STORAGE_HBASE_THRIFT_PORT=9090",
		"HOME=/root",
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(unknown, " ") != "SNAPSTORE_LISTN SNAPSTORE_SERVER SNAPSTORE_STORAGE_HBASE_THRIFT_PORT SNAPSTORE_TEST_MYSQL_DSN" {
		t.Fatalf("unknown variables %v", unknown)
	}
	if cfg.Listen != "127.0.0.1:7000" || cfg.Storage.Backend != "hbase" || cfg.Storage.HBase.Thrift != "hb:9090" ||
		cfg.Storage.HBase.Table != "x_" || cfg.ShutdownTimeout != 5*time.Second || cfg.Adapters[0].Schedule != "@every 1m" ||
		strings.Join(cfg.Adapters[0].KeyColumns, "|") != "a|b" || cfg.Adapters[0].Retention.MinVersions != 4 ||
		cfg.Connections[0].Options["password"] != "env:DBPW" || cfg.Connections[0].Options["host"] != "h" {
		t.Fatalf("env not applied: %+v", cfg)
	}
	for _, bad := range []string{"SNAPSTORE_ADAPTERS_3_SCHEDULE=@hourly", "SNAPSTORE_SHUTDOWN_TIMEOUT=never", "SNAPSTORE_SNAPSHOT_PARTITIONS=two", "SNAPSTORE_ADAPTERS_X_SCHEDULE=@daily"} {
		cfg := defaultConfig()
		_, err := applyEnv(&cfg, []string{bad})
		name, _, _ := strings.Cut(bad, "=")
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: want an error naming it, got %v", bad, err)
		}
	}
}

// TestLoadConfig_Precedence: defaults < file < environment < flags.
func TestLoadConfig_Precedence(t *testing.T) {
	p := writeFile(t, "c.yaml", "data: fromfile\nlisten: 127.0.0.1:1111\nlog: {level: warn}\n")
	cfg, err := loadConfig(&commonFlags{config: p, listen: "127.0.0.1:3333"}, []string{"SNAPSTORE_LISTEN=127.0.0.1:2222", "SNAPSTORE_LOG_LEVEL=error"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Data != "fromfile" || cfg.Listen != "127.0.0.1:3333" || cfg.Log.Level != "error" {
		t.Fatalf("got %+v", cfg)
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

// TestServe_RefusesOpenListenWithoutTokens runs the command as a user would.
func TestServe_RefusesOpenListenWithoutTokens(t *testing.T) {
	var out, errb bytes.Buffer
	code := runMain(context.Background(), []string{"serve", "--data", t.TempDir(), "--listen", "0.0.0.0:0"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "not loopback") || !strings.Contains(errb.String(), "listen") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
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

func TestMain_UsageAndVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "snapstore ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
	if code := runMain(context.Background(), []string{"frobnicate"}, &out, &errb); code != 2 {
		t.Fatalf("unknown command exit %d", code)
	}
	if code := runMain(context.Background(), []string{"get", "onlydataset"}, &out, &errb); code != 2 {
		t.Fatalf("get without key exit %d", code)
	}
}

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		pos  string
		data string
		js   bool
	}{
		{[]string{"ds", "-5", "--data", "d1"}, "ds|-5", "d1", false},
		{[]string{"--data=d2", "ds", "--json", "k"}, "ds|k", "d2", true},
		{[]string{"-- SQL comment\nSELECT 1"}, "-- SQL comment\nSELECT 1", "", false},
		{[]string{"ds", "--", "--data", "x"}, "ds|--data|x", "", false},
	} {
		fs, cf := newFlagSet("t", io.Discard, false)
		js := fs.Bool("json", false, "")
		pos, err := parseArgs(fs, c.args)
		if err != nil || strings.Join(pos, "|") != c.pos || cf.data != c.data || *js != c.js {
			t.Errorf("parseArgs(%q) = %q data %q json %v, %v", c.args, pos, cf.data, *js, err)
		}
	}
	fs, _ := newFlagSet("t", io.Discard, false)
	if _, err := parseArgs(fs, []string{"--data"}); err == nil {
		t.Error("--data without a value accepted")
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

// TestLoadConfig_EnvValueNamesVariable: a bad value
// from the environment names the variable, not a line of the file.
func TestLoadConfig_EnvValueNamesVariable(t *testing.T) {
	p := writeFile(t, "c.yaml", `connections:
  - {name: shop, type: sqlite, options: {path: /tmp/x.db}}
adapters:
  - {name: products, connection: shop, resource: products, schedule: "@every 15s"}
`)
	_, err := loadConfig(&commonFlags{config: p}, []string{"SNAPSTORE_ADAPTERS_0_SCHEDULE=every 5s", "SNAPSTORE_CONNECTIONS_0_OPTIONS_PTH=x"})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 {
		t.Fatalf("want exit code 2, got %v", err)
	}
	for _, want := range []string{
		"config key adapters[0].schedule (from environment variable SNAPSTORE_ADAPTERS_0_SCHEDULE)",
		"config key connections[0].options.pth (from environment variable SNAPSTORE_CONNECTIONS_0_OPTIONS_PTH): unknown option",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "(line 4)") {
		t.Errorf("error blames the file:\n%v", err)
	}
}
