package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/server"
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
	t.Setenv("SNAPSTORE_UNIT_TOKEN", "s3cret-from-env-0")
	f := writeFile(t, "tok", "s3cret-from-file-0\n")
	cfg := defaultConfig()
	cfg.Auth.Tokens = []TokenConfig{
		{Name: "a", Token: "env:SNAPSTORE_UNIT_TOKEN", Role: "reader"},
		{Name: "b", Token: "file:" + f, Role: "admin"},
		{Name: "c", Token: "literal-token-text", Role: "operator"},
		{Name: "h", TokenHash: server.HashToken("a token given by its hash"), Role: "reader"},
	}
	toks, errs := cfg.checkServe()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if toks[0].Token != "s3cret-from-env-0" || toks[1].Token != "s3cret-from-file-0" || toks[2].Token != "literal-token-text" || toks[3].Hash != server.HashToken("a token given by its hash") {
		t.Fatalf("got %+v", toks)
	}
	cfg.Auth.Tokens = []TokenConfig{{Name: "d", Token: "env:SNAPSTORE_UNIT_MISSING", Role: "reader"}}
	if _, errs := cfg.checkServe(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "auth.tokens[0].token") {
		t.Fatalf("missing env: %v", errs)
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
	// In the order of the file: by line, then key.
	lines := regexp.MustCompile(`\(line (\d+)\)`).FindAllStringSubmatch(msg, -1)
	for i := 1; i < len(lines); i++ {
		a, _ := strconv.Atoi(lines[i-1][1])
		b, _ := strconv.Atoi(lines[i][1])
		if a > b {
			t.Errorf("line %d listed after line %d:\n%s", b, a, msg)
		}
	}
	if !strings.Contains(msg, "options.path (line 8)") || strings.Index(msg, "options.path (line 8)") > strings.Index(msg, "options.pth (line 9)") {
		t.Errorf("line 8 not before line 9:\n%s", msg)
	}
	if strings.Contains(msg, `"shop" is not defined`) || strings.Contains(msg, `"shop" does not exist`) {
		t.Errorf("follow-on error for the rejected connection shop:\n%s", msg)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data directory was created by a refused start: %v", err)
	}
}

// TestServe_BadConfigTokensAndListenWithTheRest: the token references and
// the listen policy are checked in the same pass as every other key, each
// named with its line; nothing is opened.
func TestServe_BadConfigTokensAndListenWithTheRest(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	// No tokens: listen must be loopback, reported beside a bad log level.
	p := writeFile(t, "open.yaml", "log:\n  level: loud\nlisten: 0.0.0.0:8080\n")
	code, _, msg := cli(t, "serve", "--config", p, "--data", data)
	for _, want := range []string{
		"config key log.level (line 2)",
		"config key listen (line 3): listen address \"0.0.0.0:8080\" is not loopback and no auth tokens are configured",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	// Tokens: a missing variable, an unreadable file, a repeated token, a
	// bad role, entries with two problems each, beside an unknown key.
	t.Setenv("SNAPSTORE_UNIT_TOKEN_A", "same-token-text-16")
	p = writeFile(t, "tokens.yaml", `listen: 0.0.0.0:8080
auth:
  tokens:
    - {name: a, token: "env:SNAPSTORE_UNIT_TOKEN_NOT_SET", role: admin}
    - {name: b, token: "file:/nonexistent/token", role: reader}
    - {name: c, token: "env:SNAPSTORE_UNIT_TOKEN_A", role: reader}
    - {name: d, token: same-token-text-16, role: reader}
    - {name: e, token: x-long-enough-token, role: root}
    - {name: f, token: "env:SNAPSTORE_UNIT_TOKEN_F_NOT_SET", role: superuser}
    - {token: "env:SNAPSTORE_UNIT_TOKEN_G_NOT_SET", role: reader}
storag: pebble
tls: {plaintext_behind_proxy: true}
`)
	code, _, msg = cli(t, "serve", "--config", p, "--data", data)
	for _, want := range []string{
		"config key auth.tokens[0].token (line 4): environment variable SNAPSTORE_UNIT_TOKEN_NOT_SET is not set",
		"config key auth.tokens[1].token (line 5): reading the token file",
		"config key auth.tokens[3].token (line 7): the same token as auth.tokens[2]",
		"config key auth.tokens[4].role (line 8)",
		// Every problem of one entry at once.
		"config key auth.tokens[5].role (line 9)",
		"config key auth.tokens[5].token (line 9): environment variable SNAPSTORE_UNIT_TOKEN_F_NOT_SET is not set",
		"config key auth.tokens[6].name (line 10)",
		"config key auth.tokens[6].token (line 10): environment variable SNAPSTORE_UNIT_TOKEN_G_NOT_SET is not set",
		"config key storag (line 11): unknown key",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "same-token-text-16") || strings.Contains(msg, "config key listen") {
		t.Errorf("a token in the error, or listen refused with tokens configured:\n%s", msg)
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data directory was created by a refused start: %v", err)
	}
}

// TestConfig_YAMLErrorsAndRepeatedKeys: a YAML syntax error names the line
// where the problem is, and a key given twice is an error naming both
// lines rather than the later value winning silently.
func TestConfig_YAMLErrorsAndRepeatedKeys(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"data: ./d\nlog: {level: info\nlisten: x\n", "line 3: did not find expected ',' or '}'"},
		{"data: ./d\nlog:\n  level: info\n   format: text\n", "line 4: mapping values are not allowed"},
		{"data: ./d\nadapters:\n- name: a\n  key_columns: [id, x\nlisten: y\n", "line 5: did not find expected ',' or ']'"},
		{"data: ./d\n- x\n", "line 2: did not find expected key"},
	} {
		_, err := loadConfig(&commonFlags{config: writeFile(t, "c.yaml", tc.file)}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.file, err, tc.want)
		}
	}
	p := writeFile(t, "c.yaml", "data: ./a\nlog:\n  level: info\n  level: debug\ndata: ./b\nconnections:\n  - name: c\n    type: sqlite\n    options: {path: x, path: y}\n")
	_, err := loadConfig(&commonFlags{config: p}, nil)
	for _, want := range []string{
		"config key log.level (line 4): given twice (first at line 3)",
		"config key data (line 5): given twice (first at line 1)",
		"config key connections[0].options.path (line 9): given twice (first at line 9)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// TestConfig_TokenHashesAndTLS: a token given by its hash is accepted; a
// short token, a token with a hash, a malformed hash, a client CA without
// a certificate, TLS 1.1, and tokens served in clear off loopback are
// refused, each naming its key, never showing a token.
func TestConfig_TokenHashesAndTLS(t *testing.T) {
	cfg := defaultConfig()
	cfg.Listen = "0.0.0.0:8443"
	cfg.Auth.Tokens = []TokenConfig{
		{Name: "short", Token: "tiny-token", Role: "reader"},
		{Name: "both", Token: "long-enough-token-text", TokenHash: server.HashToken("long-enough-token-text"), Role: "reader"},
		{Name: "badhash", TokenHash: "md5:abc", Role: "reader"},
		{Name: "ok", TokenHash: server.HashToken("a token given by its hash"), Role: "admin"},
	}
	cfg.TLS = TLSConfig{ClientCAFile: "ca.crt", MinVersion: "1.1"}
	var msgs []string
	for _, e := range joined(cfg.Validate()) {
		msgs = append(msgs, e.Error())
	}
	_, errs := cfg.checkServe()
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		"config key auth.tokens[0].token: the token has 10 characters; a token must have at least 16",
		"config key auth.tokens[1].token_hash: give token or token_hash, not both",
		"config key auth.tokens[2].token_hash: want sha256: followed by 64 hex digits",
		"config key tls.client_ca_file: needs tls.cert_file",
		"config key tls.min_version: unsupported TLS version \"1.1\"",
		"config key listen: listen address \"0.0.0.0:8443\" is not loopback and the server has tokens but no TLS",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "tiny-token") || strings.Contains(all, "long-enough-token-text") || strings.Contains(all, "auth.tokens[3]") {
		t.Errorf("a token in an error, or the good entry refused:\n%s", all)
	}
	// Behind a TLS-terminating proxy, or with TLS, the address is accepted.
	cfg.Auth.Tokens = cfg.Auth.Tokens[3:]
	cfg.TLS = TLSConfig{PlaintextBehindProxy: true}
	if toks, errs := cfg.checkServe(); len(errs) != 0 || len(toks) != 1 || toks[0].Hash == "" {
		t.Fatalf("behind a proxy: %v %+v", errs, toks)
	}
	cfg.TLS = TLSConfig{CertFile: "a.crt", KeyFile: "a.key"}
	if _, errs := cfg.checkServe(); len(errs) != 0 {
		t.Fatalf("with TLS: %v", errs)
	}
}
