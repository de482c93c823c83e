// Package config is the configuration of the snapstore binary: its schema
// and defaults, reading it from a YAML file, SNAPSTORE_* variables and
// flags, and its validation, which names every offending key at once
// (after Prometheus's config/config.go and etcd's server/embed/config.go).
// docs/config.md documents every key.
package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/adapters"
	_ "github.com/snapstore/snapstore/adapters/install" // the connection types a file's connections may name
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/boundedread"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

// Config is the whole configuration of the snapstore binary. Sources, in
// increasing precedence: the defaults below, the YAML file given with
// --config, SNAPSTORE_* environment variables (see applyEnv), and flags;
// Load (load.go) reads them in that order.
// docs/config.md documents every key; docs/snapstore.sample.yaml is an
// annotated example.
type Config struct {
	// Data is the Pebble data directory; default "./data".
	Data string `yaml:"data"`
	// Listen is the HTTP listen address host:port; default
	// "127.0.0.1:8080". Without auth tokens only loopback is accepted.
	Listen string `yaml:"listen"`
	// Log sets logging.
	Log LogConfig `yaml:"log"`
	// Storage selects and tunes the storage backend.
	Storage StorageConfig `yaml:"storage"`
	// Auth holds the bearer tokens of the HTTP API.
	Auth AuthConfig `yaml:"auth"`
	// TLS serves the API and the console over HTTPS (server/tls.go).
	TLS TLSConfig `yaml:"tls"`
	// Snapshot tunes the dataset layer.
	Snapshot SnapshotConfig `yaml:"snapshot"`
	// ShutdownTimeout bounds a graceful shutdown (SIGTERM): running runs
	// are aborted and HTTP requests drained within it; default 30s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// GCInterval is the period of the garbage collection that applies every
	// dataset's retention; default 1h, 0 disables it (GC then runs only
	// through POST /v1/datasets/{dataset}/gc).
	GCInterval time.Duration `yaml:"gc_interval"`
	// Connections are data connections defined in the file (read-only
	// through the API; a file definition wins over an API one).
	Connections []api.Connection `yaml:"connections"`
	// Adapters are adapters defined in the file.
	Adapters []api.Adapter `yaml:"adapters"`
	// ConnectionFileDirs are absolute directories under which an option
	// of a connection defined through the API that names a file (a SQLite
	// database, a certificate) may name one; none: any file on a server
	// without tokens, no file on one with tokens (FileOptionLimits).
	ConnectionFileDirs []string `yaml:"connection_file_dirs"`
	// Cluster makes this node a member of a cluster; with no
	// cluster.bind the node runs alone and starts no serf.
	Cluster ClusterConfig `yaml:"cluster"`
	// Secrets bounds the secret references of connections defined
	// through the API and names the keys that encrypt their literal
	// secrets at rest.
	Secrets SecretsConfig `yaml:"secrets"`
	// Audit configures the audit trail (docs/security.md).
	Audit AuditConfig `yaml:"audit"`
	// Notify configures run notifications (notify.go,
	// docs/notifications.md).
	Notify NotifyConfig `yaml:"notify"`
	// ParquetCache bounds the cache of built Parquet answers
	// (server/parquetcache.go).
	ParquetCache ParquetCacheConfig `yaml:"parquet_cache"`

	// AuditOut receives the audit trail's JSON lines (serve sets
	// stderr); nil: the logger serve is given. Not a key of the file.
	AuditOut io.Writer `yaml:"-"`
	// unknownEnv lists SNAPSTORE_* variables that name no key.
	unknownEnv []string
	// lines maps a key path (adapters[0].schedule) to its line in the
	// file; envKeys maps a key path to the variable that set it, flagKeys
	// to the command-line flag that set it; file is the file's path.
	lines    map[string]int
	envKeys  map[string]string
	flagKeys map[string]string
	file     string
}

// LogConfig sets the log level and format.
type LogConfig struct {
	// Level is debug, info (default), warn or error.
	Level string `yaml:"level"`
	// Format is text (default, logfmt-like) or json.
	Format string `yaml:"format"`
}

// StorageConfig selects the storage backend. In the file, "storage: pebble"
// is short for "storage: {backend: pebble}".
type StorageConfig struct {
	// Backend is "pebble" (default, embedded, in Data) or "hbase".
	Backend string `yaml:"backend"`
	// Pebble tunes the embedded backend.
	Pebble PebbleConfig `yaml:"pebble"`
	// HBase configures the HBase backend (through its Thrift2 gateway).
	HBase HBaseConfig `yaml:"hbase"`
}

// PebbleConfig tunes Pebble; zero fields keep store/pebble's defaults.
type PebbleConfig struct {
	// MemTableSize is the memtable size in bytes; default 64 MiB.
	MemTableSize uint64 `yaml:"memtable_size"`
	// CacheSize is the block cache size in bytes; default 128 MiB.
	CacheSize int64 `yaml:"cache_size"`
	// MemoryHeadroom is what serve's Go memory limit allows beyond the
	// block cache and two memtables, in bytes; default 64 MiB; negative:
	// no limit is set (GOMEMLIMIT, when set, wins either way).
	MemoryHeadroom int64 `yaml:"memory_headroom"`
}

// HBaseConfig configures the HBase backend (store/hbase); zero fields keep
// that package's defaults.
type HBaseConfig struct {
	// Thrift is the Thrift2 gateway address host:port, e.g.
	// "127.0.0.1:9090"; required with backend hbase.
	Thrift string `yaml:"thrift"`
	// Namespace is the HBase namespace, created when absent; default
	// "snapstore".
	Namespace string `yaml:"namespace"`
	// Table is the one HBase table holding every snapstore table; default
	// "cells". Two processes with the same thrift, namespace and table share
	// data.
	Table string `yaml:"table"`
	// PoolSize is the most Thrift connections kept open; default 8.
	PoolSize int `yaml:"pool_size"`
	// DialTimeout bounds opening one connection; default 5s.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// CallTimeout bounds one Thrift call; default 60s.
	CallTimeout time.Duration `yaml:"call_timeout"`
	// ReadOnly makes this process a read-only reader of a table another
	// snapstore process writes (snapshot.W1, docs/hbase.md): it runs
	// nothing and refuses writes; default false. The environment may also
	// set it as SNAPSTORE_HBASE_READ_ONLY (envAliases).
	ReadOnly bool `yaml:"read_only"`
	// WriterSlotLease is how long a dataset's writer slot lasts without
	// renewal (snapshot.W1, snapshot.Options.SlotLease): after a crash,
	// another process takes a dataset the dead one held once this long
	// passed; a process that could not renew for this long stops writing.
	// Default 30s, MinWriterSlotLease to MaxWriterSlotLease.
	WriterSlotLease time.Duration `yaml:"writer_slot_lease"`
	// WriterSlotRenew is how often a process renews the writer slots it
	// holds (snapshot.Options.SlotRenew); default 10s, at least
	// MinWriterSlotRenew and under half of WriterSlotLease, so that a
	// renewal that fails once is retried before the lease ends.
	WriterSlotRenew time.Duration `yaml:"writer_slot_renew"`
}

// Bounds of storage.hbase.writer_slot_lease and writer_slot_renew: a
// lease under 5 s expires under a long GC pause or a slow HBase call; one
// over 10 min keeps a dead process's datasets that long.
const (
	MinWriterSlotLease = 5 * time.Second
	MaxWriterSlotLease = 10 * time.Minute
	MinWriterSlotRenew = time.Second
)

// AuthConfig lists bearer tokens and bounds the console's sessions.
type AuthConfig struct {
	Tokens []TokenConfig `yaml:"tokens"`
	// SessionIdleTimeout ends a console session that no request used for
	// this long (each request moves its end, never past
	// server.SessionLifetime after the login); default 30m
	// (server.DefaultSessionIdle), 1m to server.SessionLifetime.
	SessionIdleTimeout time.Duration `yaml:"session_idle_timeout"`
}

// TokenConfig is one bearer token, given by exactly one of Token and
// TokenHash. Token may be literal, "env:NAME" or "file:/path" (the file's
// first line), at least server.MinTokenLength characters; it never appears
// in logs. TokenHash is its hash (server.HashToken, snapstore token hash),
// so that the file does not hold the secret.
type TokenConfig struct {
	Name      string `yaml:"name"`
	Token     string `yaml:"token"`
	TokenHash string `yaml:"token_hash"`
	// Role is reader, operator or admin.
	Role string `yaml:"role"`
	// Datasets limits the token to the datasets whose names match one of
	// these glob patterns (path.Match: * ? [a-z]; server.Grant), its role
	// applying within them; absent or empty for every dataset.
	Datasets []string `yaml:"datasets"`
}

// SecretsConfig bounds what the secret references (env:NAME,
// file:/path) of connections defined through the API may name; the
// file's own references name anything (adapters.SecretRefLimits). It also
// names the keys that encrypt their literal secrets at rest
// (adapters.SecretKeys).
type SecretsConfig struct {
	// KeyFile is a file of keys that encrypt the literal secrets of
	// API connections, one per line as the standard base64 of 32 bytes;
	// the first encrypts, every one decrypts what it encrypted. Default
	// none: on Pebble a key is then generated in the data directory at
	// first need; on HBase literal secrets are refused.
	KeyFile string `yaml:"key_file"`
	// KeyFiles are more files of keys, read after KeyFile in order.
	KeyFiles []string `yaml:"key_files"`
	// FileDirs are absolute directories under which an API file:
	// reference may name a file; none (the default) refuses them.
	FileDirs []string `yaml:"file_dirs"`
	// EnvPrefix starts the name of every variable an API env: reference
	// may name, e.g. SNAPSTORE_SECRET_; "" (the default) refuses them.
	EnvPrefix string `yaml:"env_prefix"`
}

// SecretRefLimits converts the secrets section for package adapters.
func (c *Config) SecretRefLimits() adapters.SecretRefLimits {
	return adapters.SecretRefLimits{FileDirs: c.Secrets.FileDirs, EnvPrefix: c.Secrets.EnvPrefix}
}

// FileOptionLimits converts connection_file_dirs for package adapters.
// With no directory, a server without tokens lets the API name any file:
// it answers only on loopback (server.CheckListen), where whoever calls it
// can read those files anyway; a server with tokens serves callers who
// may not, so it names none.
func (c *Config) FileOptionLimits() adapters.FileOptionLimits {
	return adapters.FileOptionLimits{Dirs: c.ConnectionFileDirs, AnyFile: len(c.Auth.Tokens) == 0}
}

// SecretKeys converts the secrets section's key files for package
// adapters; a Pebble store, which is this process's alone, may keep a
// generated key in its data directory.
func (c *Config) SecretKeys() adapters.SecretKeys {
	k := adapters.SecretKeys{KeyFileOption: "secrets.key_file"}
	if c.Secrets.KeyFile != "" {
		k.KeyFiles = append(k.KeyFiles, c.Secrets.KeyFile)
	}
	k.KeyFiles = append(k.KeyFiles, c.Secrets.KeyFiles...)
	if len(c.Secrets.KeyFile) == 0 && len(c.Secrets.KeyFiles) > 0 {
		k.KeyFileOption = "secrets.key_files"
	}
	if c.Storage.Backend == "pebble" {
		k.GenerateDir = c.Data
	}
	return k
}

// AuditConfig configures the audit trail (server.AuditOptions).
type AuditConfig struct {
	// Retention is how long entries are kept; default 2160h (90 days).
	Retention time.Duration `yaml:"retention"`
	// TrustedProxies are the addresses or CIDR prefixes of the proxies
	// whose X-Forwarded-For header names the client; default none.
	TrustedProxies []string `yaml:"trusted_proxies"`
}

// ParquetCacheConfig bounds the cache of built Parquet answers on local
// disk: the HEAD, the GET and the Range requests of one answer are
// served from one file, built once.
type ParquetCacheConfig struct {
	// Size is the most bytes of files kept, whole and being built;
	// default 256 MiB, 0 disables the cache.
	Size int64 `yaml:"size"`
	// Dir is the cache's directory, emptied of its files at start;
	// default <data>/parquet-cache.
	Dir string `yaml:"dir"`
}

// DefaultParquetCacheSize is the default parquet_cache.size.
const DefaultParquetCacheSize = 256 << 20

// Options returns the server's options of the cache of Parquet answers:
// none when Size is 0, its directory under data by default.
func (p ParquetCacheConfig) Options(data string) server.ParquetCacheOptions {
	if p.Size <= 0 {
		return server.ParquetCacheOptions{}
	}
	dir := p.Dir
	if dir == "" {
		dir = filepath.Join(data, "parquet-cache")
	}
	return server.ParquetCacheOptions{Dir: dir, Size: p.Size}
}

// Options returns the server's audit options: entries logged as JSON
// lines to out, or by log when out is nil.
func (a AuditConfig) Options(out io.Writer, log *slog.Logger) server.AuditOptions {
	o := server.AuditOptions{Retention: a.Retention, Logger: log}
	if out != nil {
		o.Logger = slog.New(slog.NewJSONHandler(out, nil))
	}
	for _, p := range a.TrustedProxies {
		if pr, err := parsePrefix(p); err == nil {
			o.TrustedProxies = append(o.TrustedProxies, pr)
		}
	}
	return o
}

// parsePrefix reads an address (one host) or a CIDR prefix.
func parsePrefix(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.ParsePrefix(s)
}

// TLSConfig serves HTTPS (server.TLSOptions); with no cert_file the
// server speaks plain HTTP.
type TLSConfig struct {
	// CertFile is the PEM certificate (a chain may follow the leaf),
	// re-read when it changes and on SIGHUP.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the PEM private key of the certificate.
	KeyFile string `yaml:"key_file"`
	// ClientCAFile, if set, makes clients present a certificate that
	// chains to one of its CAs.
	ClientCAFile string `yaml:"client_ca_file"`
	// CAFile is a PEM bundle of the CAs that signed the other nodes' API
	// certificates, trusted when this node calls them (hand-offs) beside
	// the system's, cluster.transfer.ca_file and ClientCAFile. The CLI
	// given this config trusts it for this server's certificate too
	// (cmd/snapstore serverTrust).
	CAFile string `yaml:"ca_file"`
	// MinVersion is "1.2" or "1.3" (default).
	MinVersion string `yaml:"min_version"`
	// PlaintextBehindProxy says a TLS-terminating proxy is in front, so
	// that a server with tokens may listen on a non-loopback address
	// without TLS; default false.
	PlaintextBehindProxy bool `yaml:"plaintext_behind_proxy"`
}

// Enabled reports whether the server speaks HTTPS.
func (t TLSConfig) Enabled() bool { return t.CertFile != "" }

// Options returns the server's TLS options.
func (t TLSConfig) Options(log *slog.Logger, reg prometheus.Registerer) server.TLSOptions {
	v, _ := server.ParseTLSVersion(t.MinVersion) // Validate checked it
	return server.TLSOptions{CertFile: t.CertFile, KeyFile: t.KeyFile, ClientCAFile: t.ClientCAFile, MinVersion: v, Logger: log, Registerer: reg}
}

// SnapshotConfig tunes package snapshot.
type SnapshotConfig struct {
	// Partitions is the number of hash partitions of new datasets; default 1.
	Partitions int `yaml:"partitions"`
}

// MinSessionIdleTimeout is the least auth.session_idle_timeout: a minute
// of reading a page is not idleness.
const MinSessionIdleTimeout = time.Minute

// Defaults of the configuration.
const (
	DefaultData            = "./data"
	DefaultListen          = "127.0.0.1:8080"
	DefaultShutdownTimeout = 30 * time.Second
	DefaultGCInterval      = time.Hour
)

// Default returns the embedded defaults: Pebble in ./data, loopback
// listen, info logs as text.
func Default() Config {
	return Config{
		Data:   DefaultData,
		Listen: DefaultListen,
		Log:    LogConfig{Level: "info", Format: "text"},
		Storage: StorageConfig{Backend: "pebble",
			HBase: HBaseConfig{WriterSlotLease: snapshot.DefaultSlotLease, WriterSlotRenew: snapshot.DefaultSlotLease / 3}},
		Snapshot:        SnapshotConfig{Partitions: 1},
		Auth:            AuthConfig{SessionIdleTimeout: server.DefaultSessionIdle},
		ShutdownTimeout: DefaultShutdownTimeout,
		GCInterval:      DefaultGCInterval,
		Audit:           AuditConfig{Retention: server.DefaultAuditRetention},
		Cluster:         defaultCluster(),
		ParquetCache:    ParquetCacheConfig{Size: DefaultParquetCacheSize},
	}
}

// KeyError is a problem with one configuration key, or with keys of one
// section that only make sense together (Key is then a list such as
// "cluster.transfer.ca_file, cert_file, key_file").
type KeyError struct {
	Key  string
	Line int    // 0 when not from the file
	Env  string // the variable that set the key, if one did
	// Msg says what is wrong; when empty, Err does.
	Msg string
	Err error // the cause, for errors.Is; may be nil
}

func (e *KeyError) Error() string {
	what := "config key " + e.Key
	if strings.Contains(e.Key, ", ") {
		what = "config keys " + e.Key
	}
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	switch {
	case e.Env != "":
		return fmt.Sprintf("%s (from environment variable %s): %s", what, e.Env, msg)
	case e.Line > 0:
		return fmt.Sprintf("%s (line %d): %s", what, e.Line, msg)
	}
	return fmt.Sprintf("%s: %s", what, msg)
}

func (e *KeyError) Unwrap() error { return e.Err }

// keyError is a problem with key, placed by the variable that set it or
// its line in the file (the nearest enclosing key's line when the key
// itself is absent, as a missing adapters[0].resource is).
func (c *Config) keyError(key, msg string) *KeyError {
	e := &KeyError{Key: key, Msg: msg}
	if v, ok := c.envKeys[key]; ok {
		e.Env = v
		return e
	}
	for k := key; k != ""; k = ParentKey(k) {
		if l, ok := c.lines[k]; ok {
			e.Line = l
			break
		}
	}
	return e
}

// KeySource says where key's value came from, the way the flags win over
// the environment and the environment over the file: "the --listen
// flag", "environment variable SNAPSTORE_LISTEN", "listen in
// snapstore.yaml line 3", or "the default listen".
func (c *Config) KeySource(key string) string {
	if f, ok := c.flagKeys[key]; ok {
		return "the " + f + " flag"
	}
	if v, ok := c.envKeys[key]; ok {
		return "environment variable " + v
	}
	if l, ok := c.lines[key]; ok {
		return fmt.Sprintf("%s in %s line %d", key, c.file, l)
	}
	return "the default " + key
}

// ParentKey drops the last element of a key path: a.b[2].c -> a.b[2] ->
// a.b -> a -> "".
func ParentKey(k string) string {
	i := strings.LastIndexAny(k, ".[")
	if i < 0 {
		return ""
	}
	return k[:i]
}

// Validate checks the whole configuration and reports every problem, each
// naming its key (pebble's Options.Validate, raft's ValidateConfig).
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, c.keyError(key, fmt.Sprintf(format, args...)))
	}
	if c.Data == "" {
		bad("data", "must name a directory")
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen", "want host:port, got %q", c.Listen)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "want debug, info, warn or error, got %q", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		bad("log.format", "want text or json, got %q", c.Log.Format)
	}
	switch c.Storage.Backend {
	case "pebble":
	case "hbase":
		if _, _, err := net.SplitHostPort(c.Storage.HBase.Thrift); err != nil {
			bad("storage.hbase.thrift", "want the Thrift2 gateway's host:port, got %q", c.Storage.HBase.Thrift)
		}
		if c.Storage.HBase.PoolSize < 0 || c.Storage.HBase.PoolSize > 1024 {
			bad("storage.hbase.pool_size", "want 0 (default) to 1024, got %d", c.Storage.HBase.PoolSize)
		}
	default:
		bad("storage.backend", "want pebble or hbase, got %q", c.Storage.Backend)
	}
	if h := c.Storage.HBase; h.WriterSlotLease < MinWriterSlotLease || h.WriterSlotLease > MaxWriterSlotLease {
		bad("storage.hbase.writer_slot_lease", "want %s to %s, got %s", MinWriterSlotLease, MaxWriterSlotLease, h.WriterSlotLease)
	} else if h.WriterSlotRenew < MinWriterSlotRenew || h.WriterSlotRenew >= h.WriterSlotLease/2 {
		bad("storage.hbase.writer_slot_renew", "want %s to under half of storage.hbase.writer_slot_lease (%s), got %s", MinWriterSlotRenew, h.WriterSlotLease/2, h.WriterSlotRenew)
	}
	if c.Storage.HBase.ReadOnly && c.Storage.Backend != "hbase" {
		bad("storage.hbase.read_only", "a read-only reader needs storage.backend hbase: a Pebble data directory has one process")
	}
	if c.Snapshot.Partitions < 1 || c.Snapshot.Partitions > 4096 {
		bad("snapshot.partitions", "want 1 to 4096, got %d", c.Snapshot.Partitions)
	}
	if c.ShutdownTimeout <= 0 {
		bad("shutdown_timeout", "must be positive")
	}
	if c.ParquetCache.Size < 0 {
		bad("parquet_cache.size", "want 0 (no cache) or more bytes, got %d", c.ParquetCache.Size)
	}
	if c.Audit.Retention <= 0 {
		bad("audit.retention", "must be positive (default 2160h, 90 days)")
	}
	for i, p := range c.Audit.TrustedProxies {
		if _, err := parsePrefix(p); err != nil {
			bad(fmt.Sprintf("audit.trusted_proxies[%d]", i), "want an IP address or a CIDR prefix (10.0.0.0/8), got %q", p)
		}
	}
	if c.GCInterval < 0 {
		bad("gc_interval", "must not be negative")
	}
	if d := c.Auth.SessionIdleTimeout; d < MinSessionIdleTimeout || d > server.SessionLifetime {
		bad("auth.session_idle_timeout", "want %s to %s (a session's lifetime), got %s", MinSessionIdleTimeout, server.SessionLifetime, d)
	}
	names := map[string]bool{}
	for i, t := range c.Auth.Tokens {
		key := fmt.Sprintf("auth.tokens[%d]", i)
		if t.Name == "" {
			bad(key+".name", "required")
		} else if names[t.Name] {
			bad(key+".name", "duplicate token name %q", t.Name)
		}
		names[t.Name] = true
		switch {
		case t.Token == "" && t.TokenHash == "":
			bad(key+".token", "required (or token_hash)")
		case t.Token != "" && t.TokenHash != "":
			bad(key+".token_hash", "give token or token_hash, not both")
		case t.TokenHash != "":
			if _, err := server.ParseTokenHash(t.TokenHash); err != nil {
				bad(key+".token_hash", "%v", err)
			}
		}
		if _, err := server.ParseRole(t.Role); err != nil {
			bad(key+".role", "%v", err)
		}
		for j, p := range t.Datasets {
			if err := server.CheckDatasetPattern(p); err != nil {
				bad(fmt.Sprintf("%s.datasets[%d]", key, j), "%v", err)
			}
		}
	}
	for i, d := range c.Secrets.FileDirs {
		if !filepath.IsAbs(d) {
			bad(fmt.Sprintf("secrets.file_dirs[%d]", i), "want an absolute directory, got %q", d)
		}
	}
	for i, d := range c.ConnectionFileDirs {
		if !filepath.IsAbs(d) {
			bad(fmt.Sprintf("connection_file_dirs[%d]", i), "want an absolute directory, got %q", d)
		}
	}
	for i, f := range c.Secrets.KeyFiles {
		if f == "" {
			bad(fmt.Sprintf("secrets.key_files[%d]", i), "must name a file of keys")
		}
	}
	if p := c.Secrets.EnvPrefix; p != "" {
		if !envNameChars.MatchString(p) {
			bad("secrets.env_prefix", "want a variable name prefix of letters, digits and _, got %q", p)
		} else if key := configEnvOverlap(p); key != "" {
			bad("secrets.env_prefix", "%q would let API references read the configuration's own variables (%s%s...); choose a longer prefix such as SNAPSTORE_SECRET_", p, envPrefix, key)
		}
	}
	errs = append(errs, c.validateTLS()...)
	errs = append(errs, c.validateCluster()...)
	errs = append(errs, c.validateNotify()...)
	// Connections and adapters: the adapters package's own checks, every
	// problem at once, before anything is opened.
	for _, err := range adapters.ValidateConfig(c.Connections, c.Adapters) {
		var oe *adapters.OptionError
		if !errors.As(err, &oe) {
			errs = append(errs, err)
			continue
		}
		ce := c.keyError(oe.Key, oe.Msg)
		ce.Err = err
		errs = append(errs, ce)
	}
	return errors.Join(errs...)
}

// envNameChars matches what an environment variable name may hold.
var envNameChars = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// configEnvOverlap returns the top-level key (upper case) of a variable
// of the configuration (SNAPSTORE_AUTH_TOKENS_0_TOKEN) whose name a
// variable starting with prefix could be, or "" for none.
func configEnvOverlap(prefix string) string {
	if strings.HasPrefix(envPrefix, prefix) {
		return "*"
	}
	t := reflect.TypeFor[Config]()
	for i := 0; i < t.NumField(); i++ {
		k := strings.ToUpper(yamlKey(t.Field(i)))
		if k == "" {
			continue
		}
		if name := envPrefix + k; strings.HasPrefix(name, prefix) || strings.HasPrefix(prefix, name+"_") {
			return k
		}
	}
	for alias := range envAliases {
		if strings.HasPrefix(alias, prefix) || strings.HasPrefix(prefix, alias) {
			return strings.TrimPrefix(alias, envPrefix)
		}
	}
	return ""
}

// resolveSecret reads "env:NAME" and "file:/path" references; the error
// says what is wrong with the reference, never its value.
func resolveSecret(v string) (string, error) {
	switch {
	case strings.HasPrefix(v, "env:"):
		name := strings.TrimPrefix(v, "env:")
		s, ok := os.LookupEnv(name)
		if !ok || s == "" {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		return s, nil
	case strings.HasPrefix(v, "file:"):
		path := strings.TrimPrefix(v, "file:")
		b, err := readTokenFile(path)
		if err != nil {
			return "", err
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if line = strings.TrimSpace(line); line == "" {
			return "", fmt.Errorf("the token file %s is empty", path)
		}
		return line, nil
	}
	return v, nil
}

// maxTokenFileBytes bounds a token file, as a secret file of a
// connection is bounded (64 KiB): a device such as /dev/zero, named by
// mistake, is refused rather than read until the memory runs out.
const maxTokenFileBytes = 64 << 10

// readTokenFile reads the token file at path, at most maxTokenFileBytes.
// Errors name the file, never its content.
func readTokenFile(path string) ([]byte, error) {
	b, err := boundedread.File(path, maxTokenFileBytes)
	switch {
	case errors.Is(err, boundedread.ErrTooLarge):
		return nil, fmt.Errorf("the token file %s is %v", path, err)
	case err != nil:
		return nil, fmt.Errorf("reading the token file %s: %v", path, errors.Unwrap(err))
	}
	return b, nil
}

// CheckServe checks what serve alone needs, for the same report as
// Validate (loadServeConfig): every token reference resolves (env:NAME is
// set, file:/path is readable and not empty), no two tokens are equal,
// the files of tls and of secrets at rest load (checkServeFiles),
// with no tokens the listen address is loopback (server.CheckListen),
// and with tokens but no TLS it is loopback unless
// tls.plaintext_behind_proxy (server.CheckPlaintext). It returns the resolved tokens. The client commands skip it: they need
// neither the server's tokens nor its listen policy.
func (c *Config) CheckServe() ([]server.Token, []error) {
	var out []server.Token
	var errs []error
	seen := map[string]int{}
	for i, t := range c.Auth.Tokens {
		key := fmt.Sprintf("auth.tokens[%d].token", i)
		var tok server.Token
		switch {
		case t.TokenHash != "":
			key += "_hash"
			if _, err := server.ParseTokenHash(t.TokenHash); err != nil {
				continue // Validate named it
			}
			tok = server.Token{Name: t.Name, Hash: strings.ToLower(t.TokenHash)}
		case t.Token != "":
			// Every problem of the entry at once: the token is resolved
			// and compared even when Validate refused its role or name.
			text, err := resolveSecret(t.Token)
			if err != nil {
				errs = append(errs, c.keyError(key, err.Error()))
				continue
			}
			if n := len(text); n < server.MinTokenLength {
				errs = append(errs, c.keyError(key, fmt.Sprintf("the token has %d characters; a token must have at least %d to be a secret (snapstore token new makes one)", n, server.MinTokenLength)))
				continue
			}
			tok = server.Token{Name: t.Name, Token: text}
		default:
			continue // Validate named it
		}
		h := tok.Hash
		if h == "" {
			h = server.HashToken(tok.Token)
		}
		if j, dup := seen[h]; dup {
			errs = append(errs, c.keyError(key, fmt.Sprintf("the same token as auth.tokens[%d]; each token must differ so the log names who called", j)))
			continue
		}
		seen[h] = i
		if role, err := server.ParseRole(t.Role); err == nil {
			tok.Role = role
			tok.Datasets = t.Datasets
			out = append(out, tok)
		}
	}
	errs = append(errs, c.checkServeFiles()...)
	if _, _, err := net.SplitHostPort(c.Listen); err == nil {
		if len(c.Auth.Tokens) == 0 {
			if err := server.CheckListen(c.Listen, nil); err != nil {
				errs = append(errs, c.keyError("listen", strings.TrimPrefix(err.Error(), "server: ")))
			}
		} else if !c.TLS.Enabled() && !c.TLS.PlaintextBehindProxy {
			if err := server.CheckPlaintext(c.Listen); err != nil {
				errs = append(errs, c.keyError("listen", strings.TrimPrefix(err.Error(), "server: ")))
			}
		}
	}
	return out, errs
}

// checkServeFiles checks the files serve reads at start, each problem
// named by its own key: the TLS certificate and key load as a pair, the
// CA files of tls hold a PEM certificate, the files of the cluster's
// transfer can be read, the key files of secrets at rest hold keys. The daemon reads them again when it opens them; this
// puts their problems in the one report, before anything is opened.
func (c *Config) checkServeFiles() []error {
	var errs []error
	bad := func(key string, err error) {
		errs = append(errs, c.keyError(key, err.Error()))
	}
	t := c.TLS
	if t.CertFile != "" && t.KeyFile != "" {
		_, certErr := boundedread.PEMFile(t.CertFile)
		_, keyErr := boundedread.PEMFile(t.KeyFile)
		switch {
		case certErr != nil || keyErr != nil:
			if certErr != nil {
				bad("tls.cert_file", certErr)
			}
			if keyErr != nil {
				bad("tls.key_file", keyErr)
			}
		default:
			if _, err := boundedread.KeyPair(t.CertFile, t.KeyFile); err != nil {
				bad("tls.cert_file", fmt.Errorf("%s and tls.key_file %s do not load as a certificate and its key: %w", t.CertFile, t.KeyFile, err))
			}
		}
		for _, f := range []struct{ key, path string }{{"tls.client_ca_file", t.ClientCAFile}, {"tls.ca_file", t.CAFile}} {
			if f.path == "" {
				continue
			}
			pem, err := boundedread.PEMFile(f.path)
			if err == nil && !x509.NewCertPool().AppendCertsFromPEM(pem) {
				err = fmt.Errorf("%s holds no PEM certificate", f.path)
			}
			if err != nil {
				bad(f.key, err)
			}
		}
	}
	if c.Clustered() {
		// Readable here; whether the certificate chains to the CA and
		// names the node is checked when the transfer opens.
		x := c.Cluster.Transfer
		for _, f := range []struct{ key, path string }{
			{"cluster.transfer.ca_file", x.CAFile}, {"cluster.transfer.cert_file", x.CertFile}, {"cluster.transfer.key_file", x.KeyFile}} {
			if f.path == "" {
				continue
			}
			if _, err := boundedread.PEMFile(f.path); err != nil {
				bad(f.key, err)
			}
		}
	}
	if f := c.Secrets.KeyFile; f != "" {
		if err := adapters.CheckSecretKeyFile(f); err != nil {
			bad("secrets.key_file", err)
		}
	}
	for i, f := range c.Secrets.KeyFiles {
		if f == "" {
			continue // Validate named it
		}
		if err := adapters.CheckSecretKeyFile(f); err != nil {
			bad(fmt.Sprintf("secrets.key_files[%d]", i), err)
		}
	}
	return errs
}

// validateTLS checks the tls section: both files or neither, a client
// CA only with them, a known minimum version.
func (c *Config) validateTLS() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, c.keyError(key, fmt.Sprintf(format, args...)))
	}
	t := c.TLS
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		bad("tls.key_file", "required with tls.cert_file")
	case t.CertFile == "" && t.KeyFile != "":
		bad("tls.cert_file", "required with tls.key_file")
	}
	if t.CAFile != "" && t.CertFile == "" {
		bad("tls.ca_file", "needs tls.cert_file and tls.key_file: it is trusted when this node calls the other nodes over HTTPS")
	}
	if t.ClientCAFile != "" && t.CertFile == "" {
		bad("tls.client_ca_file", "needs tls.cert_file and tls.key_file: client certificates are asked for over HTTPS only")
	}
	if _, err := server.ParseTLSVersion(t.MinVersion); err != nil {
		bad("tls.min_version", "%v", err)
	}
	if t.PlaintextBehindProxy && t.CertFile != "" {
		bad("tls.plaintext_behind_proxy", "the server speaks TLS itself (tls.cert_file); drop one of the two")
	}
	return errs
}

// NewLogger builds the slog logger of the configuration, writing to w.
func (c *Config) NewLogger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(strings.ToUpper(c.Log.Level)))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// UnknownEnv lists the SNAPSTORE_* variables Load saw that name no key:
// serve warns of them (the scripts and tests set variables of their own).
func (c *Config) UnknownEnv() []string { return c.unknownEnv }
