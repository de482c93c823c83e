package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
	_ "modernc.org/sqlite"
)

// startServe runs serve in-process on a free loopback port with a SQLite
// source holding products (3 rows) and big (bigRows rows); it returns the base
// URL, the config and a stop function that cancels serve (as SIGTERM does)
// and returns its error.
func startServe(t *testing.T, bigRows int, tokens []server.Token) (string, *Config, func() error) {
	t.Helper()
	dir := t.TempDir()
	srcPath := filepath.Join(dir, "src.db")
	src, err := sql.Open("sqlite", "file:"+srcPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Exec(`CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
		INSERT INTO products VALUES (1,'cup'),(2,'jug'),(3,'grinder');
		CREATE TABLE big (id INTEGER PRIMARY KEY, a TEXT, b INTEGER, c REAL);`); err != nil {
		t.Fatal(err)
	}
	if bigRows > 0 {
		if _, err := src.Exec(fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < %d)
			INSERT INTO big SELECT i, printf('row-%%08d-padding-padding-padding', i), i*7, i/3.0 FROM n`, bigRows)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := defaultConfig()
	cfg.Data = filepath.Join(dir, "data")
	cfg.Listen = "127.0.0.1:0"
	cfg.ShutdownTimeout = 20 * time.Second
	cfg.Connections = []ConnectionConfig{{Name: "src", Type: "sqlite", Options: map[string]any{"path": srcPath}}}
	cfg.Adapters = []AdapterConfig{
		{Name: "products", Connection: "src", Resource: "products"},
		{Name: "big", Connection: "src", Resource: "big"},
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
	return "http://" + addr, &cfg, stop
}

// cli runs one command line in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestCLI_AgainstServerThenLocal runs run/get/scan/versions through a
// running server (--server, with a token), then, after a clean shutdown, on
// the data directory.
func TestCLI_AgainstServerThenLocal(t *testing.T) {
	tokens := []server.Token{{Name: "ops", Token: "op-token", Role: server.RoleOperator}}
	url, cfg, stop := startServe(t, 0, tokens)
	srv := []string{"--server", url, "--token", "op-token"}

	code, out, errs := cli(t, append([]string{"run", "products"}, srv...)...)
	var rec adapters.RunRecord
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec.Status != adapters.RunSucceeded {
		t.Fatalf("run: exit %d, %s %s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"get", "products", "2"}, srv...)...)
	if code != 0 || !strings.Contains(out, `"name":"jug"`) || !strings.Contains(out, fmt.Sprintf(`"version":%d`, rec.Version)) {
		t.Fatalf("get: exit %d, %s %s", code, out, errs)
	}
	code, out, _ = cli(t, append([]string{"get", "products", "9"}, srv...)...)
	if code != 1 {
		t.Fatalf("get of an absent row: exit %d, %s", code, out)
	}
	code, out, errs = cli(t, append([]string{"scan", "products", "--format", "csv"}, srv...)...)
	if code != 0 || out != "id,name\n1,cup\n2,jug\n3,grinder\n" {
		t.Fatalf("scan: exit %d, %q %s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"versions", "products"}, srv...)...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d ", rec.Version)) || !strings.Contains(out, "*") {
		t.Fatalf("versions: exit %d, %s %s", code, out, errs)
	}
	code, _, errs = cli(t, "get", "products", "2", "--server", url) // no token
	if code != 1 || !strings.Contains(errs, "401 unauthorized") {
		t.Fatalf("without token: exit %d, %s", code, errs)
	}
	code, _, errs = cli(t, append([]string{"run", "nope"}, srv...)...)
	if code != 1 || !strings.Contains(errs, "adapter_not_found") {
		t.Fatalf("run of an unknown adapter: exit %d, %s", code, errs)
	}

	if err := stop(); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
	// The server is gone: the same commands read the data directory.
	local := []string{"--data", cfg.Data, "--listen", "127.0.0.1:1"}
	code, out, errs = cli(t, append([]string{"get", "products", "3"}, local...)...)
	if code != 0 || !strings.Contains(out, `"name":"grinder"`) {
		t.Fatalf("local get: exit %d, %s %s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"scan", "products", "--limit", "2"}, local...)...)
	if code != 0 || strings.Count(out, "\n") != 2 {
		t.Fatalf("local scan: exit %d, %q %s", code, out, errs)
	}
	// A one-shot run on the data directory, with the adapters of a file.
	cfgFile := writeFile(t, "c.yaml", fmt.Sprintf("connections:\n  - {name: src, type: sqlite, options: {path: %q}}\nadapters:\n  - {name: products, connection: src, resource: products}\n  - {name: broken, connection: src, resource: no_such_table}\n",
		cfg.Connections[0].Options["path"]))
	code, out, errs = cli(t, append([]string{"run", "products", "--config", cfgFile}, local...)...)
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec.Status != adapters.RunSucceeded || rec.Trigger != "cli" {
		t.Fatalf("local run: exit %d, %s %s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"run", "broken", "--config", cfgFile}, local...)...)
	if code != 1 || !strings.Contains(errs, "failed") {
		t.Fatalf("failing local run: exit %d, %s %s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"versions", "products", "--json"}, local...)...)
	var vs struct {
		Versions []snapshot.VersionInfo `json:"versions"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &vs) != nil || len(vs.Versions) != 2 {
		t.Fatalf("local versions: exit %d, %s %s", code, out, errs)
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
	stk, err := openStack(context.Background(), cfg, slog.New(slog.DiscardHandler), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer stk.close(context.Background())
	got, err := stk.svc.GetRun(context.Background(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	ds, dsErr := stk.db.Dataset(context.Background(), "big")
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

// syncBuf is a goroutine-safe writer for captured logs.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeCommand_SIGTERM runs the serve command as the binary does and
// sends this process a SIGTERM once it serves: the command catches it,
// shuts down cleanly and returns nil.
func TestServeCommand_SIGTERM(t *testing.T) {
	cfgFile := writeFile(t, "c.yaml", fmt.Sprintf("data: %s\nlisten: 127.0.0.1:0\nshutdown_timeout: 10s\n", filepath.Join(t.TempDir(), "data")))
	logs := &syncBuf{}
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
}
