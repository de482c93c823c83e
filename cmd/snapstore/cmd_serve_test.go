package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/daemon"
	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

// startServe runs serve in-process on a free loopback port with a SQLite
// source holding products (3 rows) and big (bigRows rows); it returns the base
// URL, the config and a stop function that cancels serve (as SIGTERM does)
// and returns its error.
func startServe(t *testing.T, bigRows int, tokens []server.Token) (string, *config.Config, func() error) {
	t.Helper()
	return startServeWith(t, bigRows, tokens, nil)
}

// startServeWith is startServe with edit applied to the config first (if
// not nil); the URL is https when edit sets tls.
func startServeWith(t *testing.T, bigRows int, tokens []server.Token, edit func(*config.Config)) (string, *config.Config, func() error) {
	t.Helper()
	dir := t.TempDir()
	srcPath := filepath.Join(dir, "src.db")
	src := sqliteSource(t, srcPath, `CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
		INSERT INTO products VALUES (1,'cup'),(2,'jug'),(3,'grinder');
		CREATE TABLE big (id INTEGER PRIMARY KEY, a TEXT, b INTEGER, c REAL);`)
	if bigRows > 0 {
		if _, err := src.Exec(fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < %d)
			INSERT INTO big SELECT i, printf('row-%%08d-padding-padding-padding', i), i*7, i/3.0 FROM n`, bigRows)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	cfg.Data = filepath.Join(dir, "data")
	cfg.Listen = "127.0.0.1:0"
	cfg.ShutdownTimeout = 20 * time.Second
	cfg.Connections = []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": srcPath}}}
	cfg.Adapters = []api.Adapter{
		{Name: "products", Connection: "src", Resource: "products"},
		{Name: "big", Connection: "src", Resource: "big"},
	}
	if edit != nil {
		edit(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() { errc <- serve(ctx, &cfg, tokens, log, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-errc:
		t.Fatalf("serve: %v", err)
	}
	stopped := false
	var serveErr error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			serveErr = <-errc
		}
		return serveErr
	}
	t.Cleanup(func() { _ = stop() })
	return localURL(&config.Config{Listen: addr, TLS: cfg.TLS}).String(), &cfg, stop
}

// TestServe_RefusesOpenListenWithoutTokens runs the command as a user would.
func TestServe_RefusesOpenListenWithoutTokens(t *testing.T) {
	var out, errb bytes.Buffer
	code := runMain(context.Background(), []string{"serve", "--data", t.TempDir(), "--listen", "0.0.0.0:0"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "not loopback") || !strings.Contains(errb.String(), "listen") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestServe_ShutdownAbortsRunningRun stops the server (as SIGTERM does)
// while a run is reading a large table: serve returns cleanly, the run is
// recorded aborted (or, on a machine fast enough to finish first,
// succeeded), and the dataset's version agrees with the run's status.
func TestServe_ShutdownAbortsRunningRun(t *testing.T) {
	url, cfg, stop := startServe(t, 200000, nil)
	resp, err := http.Post(url+"/v1/adapters/big/runs", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var rec adapters.RunRecord
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil || resp.StatusCode != 202 {
		t.Fatalf("start: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	// Wait until the run reads rows (live progress), then shut down.
	for i := 0; ; i++ {
		var live adapters.RunRecord
		r, err := http.Get(url + "/v1/runs/" + rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(r.Body).Decode(&live)
		r.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if live.RowsRead > 0 || live.Status != adapters.RunRunning || i == 5000 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
	// Reopen the data directory: the run's record and the dataset agree.
	stk, err := daemon.OpenStack(context.Background(), cfg, slog.New(slog.DiscardHandler), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer stk.Close(context.Background())
	got, err := stk.Adapters.GetRun(context.Background(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	ds, dsErr := stk.DB.Dataset(context.Background(), "big")
	switch got.Status {
	case adapters.RunAborted, adapters.RunFailed:
		if dsErr == nil && ds.Current != 0 {
			t.Fatalf("run %s but dataset has version %d", got.Status, ds.Current)
		}
		if dsErr != nil && !errors.Is(dsErr, snapshot.ErrDatasetNotFound) {
			t.Fatal(dsErr)
		}
		t.Logf("run %s after %d rows: %s", got.Status, got.RowsRead, got.Error)
	case adapters.RunSucceeded:
		if dsErr != nil || ds.Current != got.Version {
			t.Fatalf("succeeded run version %d, dataset %+v %v", got.Version, ds, dsErr)
		}
		t.Logf("the run finished before the shutdown")
	default:
		t.Fatalf("run left %s after shutdown", got.Status)
	}
}

// TestServeCommand_SIGTERM runs the serve command as the binary does and
// sends this process a SIGTERM once it serves: the command catches it,
// shuts down cleanly and returns nil.
func TestServeCommand_SIGTERM(t *testing.T) {
	cfgFile := writeFile(t, "c.yaml", fmt.Sprintf("data: %s\nlisten: 127.0.0.1:0\nshutdown_timeout: 10s\n", filepath.Join(t.TempDir(), "data")))
	logs := &testenv.SyncBuffer{}
	errc := make(chan error, 1)
	go func() { errc <- cmdServe(context.Background(), []string{"--config", cfgFile}, io.Discard, logs) }()
	for i := 0; !strings.Contains(logs.String(), "snapstore serving"); i++ {
		select {
		case err := <-errc:
			t.Fatalf("serve ended early: %v\n%s", err, logs)
		case <-time.After(5 * time.Millisecond):
		}
		if i > 4000 {
			t.Fatalf("serve did not start:\n%s", logs)
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, logs)
	}
	if !strings.Contains(logs.String(), "stopped cleanly") {
		t.Fatalf("no clean stop in the log:\n%s", logs)
	}
	// At the default level the log holds snapstore's lines, not Pebble's
	// housekeeping ("Found 0 WALs").
	if strings.Contains(logs.String(), "component=pebble") {
		t.Fatalf("Pebble's own lines at the default level:\n%s", logs)
	}
}

// TestServe_DataDirInUse: a second serve on a data directory a server
// holds says the directory is in use by another process, not Pebble's
// raw lock error alone.
func TestServe_DataDirInUse(t *testing.T) {
	_, cfg, _ := startServe(t, 0, nil)
	code, _, errs := cli(t, "serve", "--data", cfg.Data, "--listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(errs, "the data directory "+cfg.Data+" is in use by another process, a snapstore server most likely") {
		t.Fatalf("a second serve: exit %d %q", code, errs)
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

// TestServe_BadConfigFilesWithTheRest: the files that serve reads at
// start (the TLS certificate, key and CAs, the keys of secrets at rest)
// are checked in the same pass as every other key, each named by its own
// key and line, before the data directory is created.
func TestServe_BadConfigFilesWithTheRest(t *testing.T) {
	dir := t.TempDir()
	if code, _, msg := cli(t, "cert", "ca", dir); code != 0 {
		t.Fatal(msg)
	}
	if code, _, msg := cli(t, "cert", "server", dir, "--host", "127.0.0.1"); code != 0 {
		t.Fatal(msg)
	}
	notPEM := writeFile(t, "ca.txt", "not a certificate\n")
	badKey := writeFile(t, "secrets.key", "c2hvcnQ=\n")
	data := filepath.Join(t.TempDir(), "data")
	p := writeFile(t, "files.yaml", `log:
  level: loud
tls:
  cert_file: `+filepath.Join(dir, "server.crt")+`
  key_file: `+filepath.Join(dir, "server.key")+`
  client_ca_file: /nonexistent/clients-ca.crt
  ca_file: `+notPEM+`
secrets:
  key_file: /nonexistent/secrets.key
  key_files: [`+badKey+`]
`)
	code, _, msg := cli(t, "serve", "--config", p, "--data", data)
	for _, want := range []string{
		"config key log.level (line 2)",
		"config key tls.client_ca_file (line 6): ",
		"config key tls.ca_file (line 7): ",
		"config key secrets.key_file (line 9): ",
		"config key secrets.key_files[0] (line 10): ",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "tls.cert_file") {
		t.Errorf("the certificate, which loads, is blamed:\n%s", msg)
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data directory was created by a refused start: %v", err)
	}
	// A certificate that does not load is named beside the rest too.
	p = writeFile(t, "cert.yaml", `log:
  level: loud
tls:
  cert_file: /nonexistent/server.crt
  key_file: `+filepath.Join(dir, "server.key")+`
`)
	code, _, msg = cli(t, "serve", "--config", p, "--data", data)
	for _, want := range []string{"config key log.level (line 2)", "config key tls.cert_file (line 4): "} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	// The files of a cluster's transfer, beside the rest.
	p = writeFile(t, "cluster.yaml", `log:
  level: loud
cluster:
  bind: 127.0.0.1:0
  transfer:
    listen: 127.0.0.1:0
    ca_file: /nonexistent/ca.crt
    cert_file: `+filepath.Join(dir, "server.crt")+`
    key_file: /nonexistent/node.key
`)
	code, _, msg = cli(t, "serve", "--config", p, "--data", data)
	for _, want := range []string{"config key log.level (line 2)", "config key cluster.transfer.ca_file (line 7): ", "config key cluster.transfer.key_file (line 9): "} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}
