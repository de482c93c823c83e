package daemon

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/config"
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
