package config

import (
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
)

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
	cfg := Default()
	if err := loadFile(p, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a := cfg.Adapters[0]
	if cfg.Data != "/var/lib/snapstore" || cfg.Log.Format != "json" || cfg.ShutdownTimeout != 45*time.Second ||
		a.Retention.TTL != api.Duration(36*time.Hour) || a.Retention.MinVersions != 3 || !a.Guard.AllowEmpty || a.Guard.MaxShrink != 0.2 ||
		a.RetryBackoff != api.Duration(5*time.Second) || a.KeyColumns[0] != "id" || cfg.Connections[0].Options["path"] != "shop.db" {
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
	cfg := Default()
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
	cfg := Default()
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

func TestConfig_Env(t *testing.T) {
	cfg := Default()
	cfg.Connections = []api.Connection{{Name: "db", Type: "mysql", Options: map[string]any{"host": "h"}}}
	cfg.Adapters = []api.Adapter{{Name: "a", Connection: "db", Resource: "t"}}
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
		cfg := Default()
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
	cfg, err := Load(Flags{File: p, Listen: "127.0.0.1:3333"}, []string{"SNAPSTORE_LISTEN=127.0.0.1:2222", "SNAPSTORE_LOG_LEVEL=error"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Data != "fromfile" || cfg.Listen != "127.0.0.1:3333" || cfg.Log.Level != "error" {
		t.Fatalf("got %+v", cfg)
	}
	for key, want := range map[string]string{
		"listen":           "the --listen flag",
		"log.level":        "environment variable SNAPSTORE_LOG_LEVEL",
		"data":             "data in " + p + " line 1",
		"shutdown_timeout": "the default shutdown_timeout",
	} {
		if got := cfg.KeySource(key); got != want {
			t.Errorf("KeySource(%s) = %q, want %q", key, got, want)
		}
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
	_, err := Load(Flags{File: p}, []string{"SNAPSTORE_ADAPTERS_0_SCHEDULE=every 5s", "SNAPSTORE_CONNECTIONS_0_OPTIONS_PTH=x", "SNAPSTORE_ADAPTERS_0_TABLE_KEYS_EVENTS=at"})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"config key adapters[0].schedule (from environment variable SNAPSTORE_ADAPTERS_0_SCHEDULE)",
		"config key connections[0].options.pth (from environment variable SNAPSTORE_CONNECTIONS_0_OPTIONS_PTH): unknown option",
		"adapters[0].table_keys: cannot be set from the environment",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "(line 4)") {
		t.Errorf("error blames the file:\n%v", err)
	}
}

// TestConfig_HBaseReadOnly: storage.hbase.read_only is a key like any
// other, set by the file, SNAPSTORE_STORAGE_HBASE_READ_ONLY, or the older
// SNAPSTORE_HBASE_READ_ONLY; a bad value names the variable, and a reader
// of a Pebble directory is refused.
func TestConfig_HBaseReadOnly(t *testing.T) {
	file := writeFile(t, "c.yaml", "storage:\n  backend: hbase\n  hbase: {thrift: 127.0.0.1:9090}\n")
	for _, env := range [][]string{{"SNAPSTORE_HBASE_READ_ONLY=true"}, {"SNAPSTORE_STORAGE_HBASE_READ_ONLY=1"}, {"SNAPSTORE_HBASE_READ_ONLY=true", "SNAPSTORE_STORAGE_HBASE_READ_ONLY=false"}} {
		cfg, err := Load(Flags{File: file}, env)
		if err != nil {
			t.Fatalf("%v: %v", env, err)
		}
		want := !strings.Contains(strings.Join(env, " "), "=false")
		if cfg.Storage.HBase.ReadOnly != want || len(cfg.UnknownEnv()) != 0 {
			t.Errorf("%v: read_only %v, unknown %v", env, cfg.Storage.HBase.ReadOnly, cfg.UnknownEnv())
		}
	}
	_, err := Load(Flags{File: file}, []string{"SNAPSTORE_HBASE_READ_ONLY=maybe"})
	if err == nil || !strings.Contains(err.Error(), "SNAPSTORE_HBASE_READ_ONLY") {
		t.Errorf("a bad value: %v", err)
	}
	_, err = Load(Flags{}, []string{"SNAPSTORE_HBASE_READ_ONLY=true"})
	if err == nil || !strings.Contains(err.Error(), "config key storage.hbase.read_only (from environment variable SNAPSTORE_HBASE_READ_ONLY)") {
		t.Errorf("read_only on Pebble: %v", err)
	}
}

// TestConfig_SecretKeys: secrets.key_file and secrets.key_files decode
// from the file and the environment and reach adapters.SecretKeys in that
// order, the option named in errors the first one set; a Pebble store
// may generate a key in its data directory, an HBase one may not; an
// empty key_files entry is refused, naming the key.
func TestConfig_SecretKeys(t *testing.T) {
	p := writeFile(t, "c.yaml", "data: /var/lib/snapstore\nsecrets:\n  key_files: [/etc/snapstore/old.key]\n")
	cfg := Default()
	if err := loadFile(p, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	k := cfg.SecretKeys()
	if len(k.KeyFiles) != 1 || k.KeyFiles[0] != "/etc/snapstore/old.key" || k.KeyFileOption != "secrets.key_files" || k.GenerateDir != "/var/lib/snapstore" {
		t.Fatalf("key_files alone: %+v", k)
	}
	if _, err := applyEnv(&cfg, []string{"SNAPSTORE_SECRETS_KEY_FILE=/etc/snapstore/new.key"}); err != nil {
		t.Fatal(err)
	}
	k = cfg.SecretKeys()
	if len(k.KeyFiles) != 2 || k.KeyFiles[0] != "/etc/snapstore/new.key" || k.KeyFiles[1] != "/etc/snapstore/old.key" || k.KeyFileOption != "secrets.key_file" {
		t.Fatalf("key_file and key_files: %+v", k)
	}
	cfg.Storage.Backend = "hbase"
	if k := cfg.SecretKeys(); k.GenerateDir != "" {
		t.Errorf("HBase generates a key in %q", k.GenerateDir)
	}
	cfg = Default()
	cfg.Secrets.KeyFiles = []string{"/etc/snapstore/a.key", ""}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "config key secrets.key_files[1]: must name a file of keys") {
		t.Errorf("an empty key_files entry: %v", err)
	}
}

// TestConfig_Secrets: the secrets section decodes from the file and the
// environment and reaches adapters.SecretRefLimits; a relative directory
// and a prefix that would reach the configuration's own variables are
// refused, naming the key.
func TestConfig_Secrets(t *testing.T) {
	p := writeFile(t, "c.yaml", "secrets:\n  file_dirs: [/run/secrets]\n  env_prefix: SNAPSTORE_SECRET_\n")
	cfg := Default()
	if err := loadFile(p, &cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := applyEnv(&cfg, []string{"SNAPSTORE_SECRETS_FILE_DIRS=/run/secrets,/etc/snapstore/secrets", "SNAPSTORE_SECRET_DB=x"}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	l := cfg.SecretRefLimits()
	if len(l.FileDirs) != 2 || l.FileDirs[1] != "/etc/snapstore/secrets" || l.EnvPrefix != "SNAPSTORE_SECRET_" {
		t.Fatalf("limits %+v", l)
	}
	for prefix, ok := range map[string]bool{"SNAPSTORE_SECRET_": true, "APP_DB_": true, "SNAPSTORE_": false, "SNAP": false, "SNAPSTORE_AUTH_": false, "SNAPSTORE_CONNECTIONS": false, "SNAPSTORE_S": false, "SNAPSTORE_HBASE_": false, "BAD-NAME": false} {
		cfg := Default()
		cfg.Secrets = SecretsConfig{EnvPrefix: prefix, FileDirs: []string{"relative/dir"}}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "config key secrets.file_dirs[0]: want an absolute directory") {
			t.Errorf("relative file_dirs: %v", err)
		}
		if got := err != nil && strings.Contains(err.Error(), "secrets.env_prefix"); got == ok {
			t.Errorf("env_prefix %q: %v, want accepted %v", prefix, err, ok)
		}
	}
}

// TestConfig_ConnectionFileDirs: connection_file_dirs decodes from the
// file and the environment and reaches adapters.FileOptionLimits, a
// relative directory is refused naming the key, and with no directory a
// server without tokens lets the API name any file, one with tokens none.
func TestConfig_ConnectionFileDirs(t *testing.T) {
	p := writeFile(t, "c.yaml", "connection_file_dirs: [/srv/sqlite]\nconnections: [{name: a, type: sqlite, options: {path: /srv/a.db}}]\n")
	cfg := Default()
	if err := loadFile(p, &cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := applyEnv(&cfg, []string{"SNAPSTORE_CONNECTION_FILE_DIRS=/srv/sqlite,/srv/certs"}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if l := cfg.FileOptionLimits(); len(l.Dirs) != 2 || l.Dirs[1] != "/srv/certs" || len(cfg.Connections) != 1 {
		t.Fatalf("limits %+v, connections %+v", l, cfg.Connections)
	}
	cfg = Default()
	if l := cfg.FileOptionLimits(); l.Dirs != nil || !l.AnyFile {
		t.Errorf("no tokens: %+v, want any file", l)
	}
	cfg.Auth.Tokens = []TokenConfig{{Name: "ops", Token: "x", Role: "admin"}}
	if l := cfg.FileOptionLimits(); l.AnyFile {
		t.Errorf("tokens: %+v, want no file", l)
	}
	cfg = Default()
	cfg.ConnectionFileDirs = []string{"/srv/sqlite", "relative"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "config key connection_file_dirs[1]: want an absolute directory") {
		t.Errorf("relative connection_file_dirs: %v", err)
	}
}

// TestConfig_WriterSlot: storage.hbase.writer_slot_lease and
// writer_slot_renew default to 30s and 10s, are set by the file or the
// environment, and are refused out of their bounds (the renewal under
// half the lease), each error naming its key; cluster.confirm_failure is
// bounded too.
func TestConfig_WriterSlot(t *testing.T) {
	file := writeFile(t, "c.yaml", "storage:\n  backend: hbase\n  hbase: {thrift: 127.0.0.1:9090}\n")
	cfg, err := Load(Flags{File: file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := cfg.Storage.HBase; h.WriterSlotLease != 30*time.Second || h.WriterSlotRenew != 10*time.Second {
		t.Errorf("defaults: lease %s, renew %s", h.WriterSlotLease, h.WriterSlotRenew)
	}
	cfg, err = Load(Flags{File: file}, []string{"SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_LEASE=1m", "SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_RENEW=20s"})
	if err != nil {
		t.Fatal(err)
	}
	if h := cfg.Storage.HBase; h.WriterSlotLease != time.Minute || h.WriterSlotRenew != 20*time.Second {
		t.Errorf("from the environment: lease %s, renew %s", h.WriterSlotLease, h.WriterSlotRenew)
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_LEASE=2s"}, "config key storage.hbase.writer_slot_lease (from environment variable SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_LEASE): want 5s to 10m0s, got 2s"},
		{[]string{"SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_LEASE=11m"}, "writer_slot_lease (from environment variable SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_LEASE): want 5s to 10m0s"},
		{[]string{"SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_RENEW=15s"}, "config key storage.hbase.writer_slot_renew (from environment variable SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_RENEW): want 1s to under half of storage.hbase.writer_slot_lease (15s), got 15s"},
		{[]string{"SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_RENEW=500ms"}, "writer_slot_renew (from environment variable SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_RENEW): want 1s"},
		{[]string{"SNAPSTORE_CLUSTER_BIND=127.0.0.1:7946", "SNAPSTORE_CLUSTER_CONFIRM_FAILURE=500ms"}, "config key cluster.confirm_failure (from environment variable SNAPSTORE_CLUSTER_CONFIRM_FAILURE): want 1s to 1h0m0s, got 500ms"},
	} {
		if _, err := Load(Flags{File: file}, tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.env, err, tc.want)
		}
	}
}

// TestConfig_MaxShrinkNaNRefused: YAML's .nan (or NaN in the
// environment) is no fraction from 0 to 1; every comparison with it is
// false, so taken it would have switched the guard off.
func TestConfig_MaxShrinkNaNRefused(t *testing.T) {
	p := writeFile(t, "c.yaml", `connections:
  - {name: shop, type: sqlite, options: {path: /tmp/x.db}}
adapters:
  - {name: products, connection: shop, resource: products, guard: {max_shrink: .nan}}
  - {name: others, connection: shop, resource: others}
`)
	_, err := Load(Flags{File: p}, []string{"SNAPSTORE_ADAPTERS_1_GUARD_MAX_SHRINK=NaN"})
	for _, want := range []string{
		"config key adapters[0].guard.max_shrink (line 4): want a fraction from 0 (default 0.5) to 1, got NaN",
		"config key adapters[1].guard.max_shrink (from environment variable SNAPSTORE_ADAPTERS_1_GUARD_MAX_SHRINK): want a fraction",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestConfig_FileBounded: a config file is read up to 16 MiB; --config
// /dev/zero is a bad configuration, not a process out of memory.
func TestConfig_FileBounded(t *testing.T) {
	_, err := Load(Flags{File: "/dev/zero"}, nil)
	if err == nil || !strings.Contains(err.Error(), "reading config file: larger than 16777216 bytes") {
		t.Fatalf("--config /dev/zero: %v", err)
	}
}
