package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/server"
)

// testConfig is a valid configuration of a Pebble directory in a
// temporary directory, listening on a free loopback port.
func testConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Data = filepath.Join(t.TempDir(), "data")
	cfg.Listen = "127.0.0.1:0"
	cfg.ShutdownTimeout = 10 * time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

func testOptions(cfg *config.Config) Options {
	return Options{Config: cfg, Logger: slog.New(slog.DiscardHandler), BuildVersion: "test"}
}

// TestDaemon_RunServesUntilCancelled: after Open the API answers at Addr
// once Run serves; cancelling Run's context shuts down cleanly and
// releases the data directory.
func TestDaemon_RunServesUntilCancelled(t *testing.T) {
	cfg := testConfig(t)
	d, err := Open(context.Background(), testOptions(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	resp, err := http.Get("http://" + d.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close after Run: %v", err)
	}
	reopen(t, cfg)
}

// TestDaemon_CloseWithoutRun: a daemon opened and closed without Run
// releases its listener and its data directory.
func TestDaemon_CloseWithoutRun(t *testing.T) {
	cfg := testConfig(t)
	d, err := Open(context.Background(), testOptions(cfg))
	if err != nil {
		t.Fatal(err)
	}
	addr := d.Addr()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.Listen = addr
	reopen(t, cfg)
}

// reopen opens and closes a daemon of cfg: it fails while another holds
// the data directory or the listen address.
func reopen(t *testing.T, cfg *config.Config) {
	t.Helper()
	d, err := Open(context.Background(), testOptions(cfg))
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDaemon_ListenErrorNamesItsSource: an address that cannot be bound is
// reported with where it was set.
func TestDaemon_ListenErrorNamesItsSource(t *testing.T) {
	first, err := Open(context.Background(), testOptions(testConfig(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	cfg, err := config.Load(config.Flags{Data: filepath.Join(t.TempDir(), "data")}, []string{"SNAPSTORE_LISTEN=" + first.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), testOptions(cfg))
	if err == nil || !strings.Contains(err.Error(), "listening on "+first.Addr()+" (from environment variable SNAPSTORE_LISTEN): ") {
		t.Fatalf("Open on a bound address: %v", err)
	}
}

// runDaemon opens and runs a daemon of cfg logging to logs, until the
// test ends.
func runDaemon(t *testing.T, cfg *config.Config, logs io.Writer) *Daemon {
	t.Helper()
	opts := testOptions(cfg)
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	d, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return d
}

// TestDaemon_PlaintextBehindProxyWarns: tls.plaintext_behind_proxy is
// said at every start, at warn level.
func TestDaemon_PlaintextBehindProxyWarns(t *testing.T) {
	cfg := testConfig(t)
	cfg.TLS.PlaintextBehindProxy = true
	var logs testenv.SyncBuffer
	runDaemon(t, cfg, &logs)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "level=WARN msg=\"serving plain HTTP: tls.plaintext_behind_proxy says a TLS-terminating proxy is in front\"") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning of plain HTTP behind a proxy:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDaemon_SIGHUPReloadsTheCertificate: a certificate written over
// tls.cert_file and tls.key_file is served to new connections after a
// SIGHUP, while the daemon keeps running. The new files keep the size
// and modification time of the old ones, so that the poll of the files
// cannot see them: only the signal can.
func TestDaemon_SIGHUPReloadsTheCertificate(t *testing.T) {
	dir := t.TempDir()
	caCert, caKey, err := transfer.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caCert)
	certFile, keyFile := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	issue := func(size int) {
		for range 100 {
			c, k, err := transfer.NewServerCert(caCert, caKey, []string{"127.0.0.1"}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if size != 0 && len(c) != size {
				continue // an ECDSA signature's DER length varies by a byte or two
			}
			if err := os.WriteFile(keyFile, k, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(certFile, c, 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("no certificate of %d bytes in 100 tries", size)
	}
	issue(0)
	cfg := testConfig(t)
	cfg.TLS = config.TLSConfig{CertFile: certFile, KeyFile: keyFile}
	var logs testenv.SyncBuffer
	d := runDaemon(t, cfg, &logs)
	serial := func() string {
		conn, err := tls.Dial("tcp", d.Addr(), &tls.Config{RootCAs: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	first := serial()
	certInfo, err := os.Stat(certFile)
	if err != nil {
		t.Fatal(err)
	}
	keyInfo, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	issue(int(certInfo.Size()))
	for _, f := range []os.FileInfo{certInfo, keyInfo} {
		if err := os.Chtimes(filepath.Join(dir, f.Name()), f.ModTime(), f.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	// Longer than the poll's period: the files unchanged to it, the
	// first certificate stays.
	time.Sleep(server.DefaultTLSPollInterval + time.Second)
	if serial() != first {
		t.Fatal("the certificate changed before SIGHUP; the test cannot tell the signal did it")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for serial() == first {
		if time.Now().After(deadline) {
			t.Fatalf("the first certificate is still served after SIGHUP:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "tls certificate reloaded") {
		t.Errorf("no log line of the reload:\n%s", logs.String())
	}
}

// TestDaemon_ServingCountsDefinitionsInForce: the start's log line counts
// the connections and adapters the server has, the config file's and
// those made through the API, but an API one the file hides.
func TestDaemon_ServingCountsDefinitionsInForce(t *testing.T) {
	cfg := testConfig(t)
	src := filepath.Join(t.TempDir(), "src.db")
	conn := func(name string) api.Connection {
		return api.Connection{Name: name, Type: "sqlite", Options: map[string]any{"path": src}}
	}
	cfg.Connections = []api.Connection{conn("filed")}
	d, err := Open(context.Background(), testOptions(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	for _, name := range []string{"made", "later"} {
		body := `{"name":"` + name + `","type":"sqlite","options":{"path":"` + src + `"}}`
		resp, err := http.Post("http://"+d.Addr()+"/v1/connections", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("creating connection %s: %d %s", name, resp.StatusCode, b)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// The file now defines "later" too: the API's is shadowed.
	cfg.Connections = append(cfg.Connections, conn("later"))
	var logs testenv.SyncBuffer
	runDaemon(t, cfg, &logs)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), `msg="snapstore serving"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no start line:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), " connections=3 adapters=0 ") {
		t.Errorf("the start line does not count 3 connections (2 of the file, 1 of the API):\n%s", logs.String())
	}
}

// TestDaemon_ParquetCacheEmptiedAtStart: by default the cache of built
// Parquet answers is <data>/parquet-cache, and a start removes the files
// a previous process left there (whole or being built), and only those.
func TestDaemon_ParquetCacheEmptiedAtStart(t *testing.T) {
	cfg := testConfig(t)
	dir := filepath.Join(cfg.Data, "parquet-cache")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"0a1b.parquet", "0a1b-123.tmp", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("left"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Open(context.Background(), testOptions(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if len(left) != 1 || left[0] != "notes.txt" {
		t.Errorf("the Parquet cache after a start holds %v, want only notes.txt", left)
	}
}
