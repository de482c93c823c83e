package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/internal/boundedread"
	"github.com/snapstore/snapstore/server"
)

func TestConfig_DefaultsAreValid(t *testing.T) {
	cfg := Default()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Data != "./data" || cfg.Listen != "127.0.0.1:8080" || cfg.Storage.Backend != "pebble" {
		t.Fatalf("defaults changed: %+v", cfg)
	}
}

func TestConfig_ValidateNamesKeys(t *testing.T) {
	cfg := Default()
	cfg.Listen = "nohostport"
	cfg.Storage.Backend = "hbase"
	cfg.Log.Level = "loud"
	cfg.Auth.Tokens = []TokenConfig{{Name: "x", Token: "t", Role: "root", Datasets: []string{"sales_*", "hr[", ""}}}
	cfg.Connections = []api.Connection{{Name: "c", Type: "sqlite"}, {Name: "c", Type: "sqlite", Sharing: "sometimes"}}
	cfg.Adapters = []api.Adapter{{Name: "a", Connection: "c", Resource: "t", Schedule: "every tuesday"}, {Name: "b", Guard: api.Guard{MaxShrink: 2}}}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	if strings.Contains(err.Error(), "auth.tokens[0].datasets[0]") {
		t.Errorf("a valid pattern refused:\n%v", err)
	}
	for _, key := range []string{"listen", "storage.hbase.thrift", "log.level", "auth.tokens[0].role",
		"auth.tokens[0].datasets[1]", "auth.tokens[0].datasets[2]",
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
	cfg := Default()
	cfg.Auth.Tokens = []TokenConfig{
		{Name: "a", Token: "env:SNAPSTORE_UNIT_TOKEN", Role: "reader"},
		{Name: "b", Token: "file:" + f, Role: "admin"},
		{Name: "c", Token: "literal-token-text", Role: "operator"},
		{Name: "h", TokenHash: server.HashToken("a token given by its hash"), Role: "reader"},
	}
	toks, errs := cfg.CheckServe()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if toks[0].Token != "s3cret-from-env-0" || toks[1].Token != "s3cret-from-file-0" || toks[2].Token != "literal-token-text" || toks[3].Hash != server.HashToken("a token given by its hash") {
		t.Fatalf("got %+v", toks)
	}
	cfg.Auth.Tokens = []TokenConfig{{Name: "d", Token: "env:SNAPSTORE_UNIT_MISSING", Role: "reader"}}
	if _, errs := cfg.CheckServe(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "auth.tokens[0].token") {
		t.Fatalf("missing env: %v", errs)
	}
}

// TestConfig_TokenFileBounded: a token file is read up to 64 KiB: a
// device named by mistake (/dev/zero) or a larger file is a bad key of
// the configuration, naming the file, not a process out of memory.
func TestConfig_TokenFileBounded(t *testing.T) {
	big := writeFile(t, "tok", "s3cret-from-file-1\n"+strings.Repeat("z", 70<<10))
	for _, path := range []string{big, "/dev/zero"} {
		cfg := Default()
		cfg.Auth.Tokens = []TokenConfig{{Name: "f", Token: "file:" + path, Role: "reader"}}
		_, errs := cfg.CheckServe()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "auth.tokens[0].token") || !strings.Contains(errs[0].Error(), "the token file "+path+" is larger than 65536 bytes") {
			t.Errorf("%s: %v", path, errs)
		}
		for _, e := range errs {
			if strings.Contains(e.Error(), "s3cret") {
				t.Errorf("the error quotes the file: %v", e)
			}
		}
	}
}

// TestSampleConfigs loads the annotated sample and the make-run config.
func TestSampleConfigs(t *testing.T) {
	t.Setenv("WAREHOUSE_PASSWORD", "x")
	for _, p := range []string{"../docs/snapstore.sample.yaml", "../examples/snapstore.yaml"} {
		cfg, err := Load(Flags{File: p}, nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(cfg.Adapters) == 0 || len(cfg.Connections) == 0 {
			t.Fatalf("%s: %+v", p, cfg)
		}
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
		_, err := Load(Flags{File: writeFile(t, "c.yaml", tc.file)}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.file, err, tc.want)
		}
	}
	p := writeFile(t, "c.yaml", "data: ./a\nlog:\n  level: info\n  level: debug\ndata: ./b\nconnections:\n  - name: c\n    type: sqlite\n    options: {path: x, path: y}\n")
	_, err := Load(Flags{File: p}, nil)
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

// writeFile writes text to the file name in a temporary directory and
// returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfig_TokenHashesAndTLS: a token given by its hash is accepted; a
// short token, a token with a hash, a malformed hash, a client CA without
// a certificate, TLS 1.1, and tokens served in clear off loopback are
// refused, each naming its key, never showing a token.
func TestConfig_TokenHashesAndTLS(t *testing.T) {
	cfg := Default()
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
	_, errs := cfg.CheckServe()
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
	if toks, errs := cfg.CheckServe(); len(errs) != 0 || len(toks) != 1 || toks[0].Hash == "" {
		t.Fatalf("behind a proxy: %v %+v", errs, toks)
	}
	caCert, caKey, err := transfer.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := transfer.NewServerCert(caCert, caKey, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = TLSConfig{CertFile: writeFile(t, "a.crt", string(cert)), KeyFile: writeFile(t, "a.key", string(key)),
		ClientCAFile: writeFile(t, "ca.crt", string(caCert))}
	if _, errs := cfg.CheckServe(); len(errs) != 0 {
		t.Fatalf("with TLS: %v", errs)
	}
	// The files are read: a key of another certificate is named.
	_, otherKey, err := transfer.NewServerCert(caCert, caKey, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS.KeyFile = writeFile(t, "other.key", string(otherKey))
	if _, errs := cfg.CheckServe(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "config key tls.cert_file: ") {
		t.Fatalf("a key of another certificate: %v", errs)
	}
}

// TestConfig_TLSFilesBounded: a TLS file of more than
// boundedread.MaxPEMBytes (a path naming a log or a device by mistake) is
// refused at the check naming its key and the bound, not read whole.
func TestConfig_TLSFilesBounded(t *testing.T) {
	caCert, caKey, err := transfer.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := transfer.NewServerCert(caCert, caKey, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// PEM text then padding: what a loader reading the whole file takes.
	huge := writeFile(t, "huge.pem", string(caCert)+strings.Repeat("#", boundedread.MaxPEMBytes))
	good := TLSConfig{CertFile: writeFile(t, "a.crt", string(cert)), KeyFile: writeFile(t, "a.key", string(key)),
		ClientCAFile: writeFile(t, "ca.crt", string(caCert)), CAFile: writeFile(t, "ca2.crt", string(caCert))}
	for _, c := range []struct {
		key string
		set func(*TLSConfig)
	}{
		{"tls.cert_file", func(tc *TLSConfig) { tc.CertFile = huge }},
		{"tls.key_file", func(tc *TLSConfig) { tc.KeyFile = huge }},
		{"tls.client_ca_file", func(tc *TLSConfig) { tc.ClientCAFile = huge }},
		{"tls.ca_file", func(tc *TLSConfig) { tc.CAFile = huge }},
	} {
		cfg := Default()
		cfg.Auth.Tokens = []TokenConfig{{Name: "a", Token: "0123456789abcdef0123", Role: "admin"}}
		cfg.TLS = good
		c.set(&cfg.TLS)
		_, errs := cfg.CheckServe()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "config key "+c.key+": "+huge+" is larger than 1048576 bytes") {
			t.Errorf("%s: %v", c.key, errs)
		}
	}
	// The transfer's files too: the transfer reads them whole when it
	// opens, after this check.
	cfg, err := Load(Flags{File: writeFile(t, "c.yaml", clusterFile+"  transfer: {listen: 127.0.0.1:7950, ca_file: "+huge+", cert_file: "+huge+", key_file: "+huge+"}\n")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, errs := cfg.CheckServe()
	all := fmt.Sprint(errs)
	for _, key := range []string{"cluster.transfer.ca_file", "cluster.transfer.cert_file", "cluster.transfer.key_file"} {
		if !strings.Contains(all, "config key "+key+" (line 5): "+huge+" is larger than 1048576 bytes") {
			t.Errorf("%s not refused: %s", key, all)
		}
	}
}

// TestConfig_SessionIdleTimeout: auth.session_idle_timeout from a file
// and the environment, its default, and its bounds naming the key.
func TestConfig_SessionIdleTimeout(t *testing.T) {
	if d := Default(); d.Auth.SessionIdleTimeout != server.DefaultSessionIdle || d.Validate() != nil {
		t.Fatalf("default %v", d.Auth.SessionIdleTimeout)
	}
	cfg, err := Load(Flags{File: writeFile(t, "c.yaml", "auth:\n  session_idle_timeout: 45m\n")}, nil)
	if err != nil || cfg.Auth.SessionIdleTimeout != 45*time.Minute {
		t.Fatalf("from the file: %v %v", cfg, err)
	}
	cfg, err = Load(Flags{}, []string{"SNAPSTORE_AUTH_SESSION_IDLE_TIMEOUT=2h"})
	if err != nil || cfg.Auth.SessionIdleTimeout != 2*time.Hour {
		t.Fatalf("from the environment: %v %v", cfg, err)
	}
	for _, d := range []time.Duration{0, 30 * time.Second, -time.Minute, server.SessionLifetime + time.Second} {
		bad := Default()
		bad.Auth.SessionIdleTimeout = d
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "config key auth.session_idle_timeout:") {
			t.Errorf("%v: %v", d, err)
		}
	}
	for _, d := range []time.Duration{MinSessionIdleTimeout, server.SessionLifetime} {
		ok := Default()
		ok.Auth.SessionIdleTimeout = d
		if err := ok.Validate(); err != nil {
			t.Errorf("%v: %v", d, err)
		}
	}
}

// TestConfig_TablesAdapterKeys: the keys of an adapter of several tables
// are checked in the file, every offending one named at once.
func TestConfig_TablesAdapterKeys(t *testing.T) {
	cfg := Default()
	cfg.Connections = []api.Connection{{Name: "c", Type: "sqlite", Options: map[string]any{"path": "x.db"}}}
	cfg.Adapters = []api.Adapter{
		{Name: "a", Connection: "c", Resource: "t", Include: []string{"orders_[", "*"}, Exclude: []string{""}, Parallelism: 65},
		{Name: "b", Connection: "c", Resources: []string{"t", "t"}, KeyColumns: []string{"id"}},
		{Name: "d", Connection: "c", Resource: "t", AllowDroppedTables: true, TableKeys: map[string][]string{"t": {"id"}}},
		{Name: "e", Connection: "c", Include: []string{"public.*"}, Exclude: []string{"audit_*"}, AllowDroppedTables: true, Parallelism: 8,
			TableKeys: map[string][]string{"public.events": {"at", "kind"}}},
		{Name: "f", Connection: "c", Include: []string{"*"}, TableKeys: map[string][]string{"x": nil, "y": {"a", "a"}, "z": {""}}},
	}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, key := range []string{"adapters[0].resource", "adapters[0].include[0]", "adapters[0].exclude[0]", "adapters[0].parallelism",
		"adapters[1].resources[1]", "adapters[1].key_columns", "adapters[2].allow_dropped_tables", "adapters[2].table_keys",
		"adapters[4].table_keys.x", "adapters[4].table_keys.y[1]", "adapters[4].table_keys.z[0]"} {
		if !strings.Contains(err.Error(), "config key "+key+":") {
			t.Errorf("error does not name %s:\n%v", key, err)
		}
	}
	if strings.Contains(err.Error(), "adapters[3]") || strings.Contains(err.Error(), "adapters[0].include[1]") {
		t.Errorf("a valid key refused:\n%v", err)
	}
}
