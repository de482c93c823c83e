package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/hbase"
	"github.com/snapstore/snapstore/txn"
)

// mariaOptions are the options of a mysql connection to the test MariaDB
// with its password as a literal; the test is skipped without MariaDB.
func mariaOptions(t *testing.T) (map[string]any, string) {
	t.Helper()
	host, user, pw := os.Getenv("SNAPSTORE_TEST_MYSQL_HOST"), os.Getenv("SNAPSTORE_TEST_MYSQL_USER"), os.Getenv("SNAPSTORE_TEST_MYSQL_PASSWORD")
	if host == "" || user == "" || len(pw) < 8 {
		t.Skip("MariaDB not configured (eval \"$(scripts/mariadb.sh env)\")")
	}
	o := map[string]any{"host": host, "user": user, "password": pw}
	if p := os.Getenv("SNAPSTORE_TEST_MYSQL_PORT"); p != "" {
		o["port"] = p
	}
	return o, pw
}

// serveConfig runs serve in-process with cfg (listen and shutdown set
// here), logging into logs; it returns the base URL and a stop function.
func serveConfig(t *testing.T, cfg *config.Config, logs io.Writer) (string, func() error) {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	cfg.ShutdownTimeout = 20 * time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, cfg, nil, slog.New(slog.NewTextHandler(logs, nil)), ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-errc:
		cancel()
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
	return "http://" + addr, stop
}

// postJSON posts body as JSON and returns the status and the answer.
func postJSON(t *testing.T, url string, body any) (int, string) {
	t.Helper()
	var rd io.Reader = http.NoBody
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(http.MethodPost, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// createAndTest creates connection name through the API with opts and
// checks that its test connects.
func createAndTest(t *testing.T, base, name string, opts map[string]any, secret string) {
	t.Helper()
	code, body := postJSON(t, base+"/v1/connections", map[string]any{"name": name, "type": "mysql", "options": opts})
	if code != http.StatusCreated || strings.Contains(body, secret) {
		t.Fatalf("create %s: %d %s", name, code, strings.ReplaceAll(body, secret, "<secret>"))
	}
	code, body = postJSON(t, base+"/v1/connections/"+name+"/test", nil)
	if code != http.StatusOK || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("test %s: %d %s", name, code, strings.ReplaceAll(body, secret, "<secret>"))
	}
}

// TestSecretsAtRest_PebbleServe: a literal MariaDB password written
// through the API of a real server on Pebble is in no byte of the data
// directory once the server stopped; the key was generated there, 0600,
// and logged by path; the connection still connects after a restart; the
// log never holds the password.
func TestSecretsAtRest_PebbleServe(t *testing.T) {
	opts, pw := mariaOptions(t)
	cfg := config.Default()
	cfg.Data = filepath.Join(t.TempDir(), "data")
	var logs testenv.SyncBuffer
	base, stop := serveConfig(t, &cfg, &logs)
	createAndTest(t, base, "maria", opts, pw)
	if code, out, errs := cli(t, "secrets", "rotate", "--server", base); code != 0 || !strings.Contains(out, "nothing to encrypt again: no stored secret is in clear or under another key than") {
		t.Fatalf("secrets rotate: exit %d %s %s", code, out, errs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(cfg.Data, "secrets.key")
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("generated key: %v %v", fi, err)
	}
	if !strings.Contains(logs.String(), "generated the key that encrypts stored secrets") || !strings.Contains(logs.String(), keyPath) {
		t.Errorf("no log line for the generated key:\n%s", logs.String())
	}
	files := 0
	err := filepath.WalkDir(cfg.Data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(pw)) {
			t.Errorf("%s holds the password", p)
		}
		return nil
	})
	if err != nil || files < 3 {
		t.Fatalf("reading the data directory: %d files, %v", files, err)
	}
	base, _ = serveConfig(t, &cfg, &logs)
	if code, body := postJSON(t, base+"/v1/connections/maria/test", nil); code != http.StatusOK || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("test after a restart: %d", code)
	}
	if strings.Contains(logs.String(), pw) {
		t.Error("the server log holds the password")
	}
}

// TestSecretsAtRest_HBaseServe, on the real HBase: a server with no
// secrets.key_file refuses a literal password (409 secret_key_missing
// naming the key); with one, the password written through the API is in
// no cell of the metadata table, the connection connects, and rotation to
// a new key, then dropping the old key, keeps it readable.
func TestSecretsAtRest_HBaseServe(t *testing.T) {
	addr := os.Getenv("SNAPSTORE_TEST_HBASE_THRIFT")
	if addr == "" {
		t.Skip("SNAPSTORE_TEST_HBASE_THRIFT is unset (eval \"$(scripts/hbase-standalone.sh env)\")")
	}
	opts, pw := mariaOptions(t)
	table := fmt.Sprintf("secrets_%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = hbase.DropTable(context.Background(), hbase.Options{Addr: addr, Table: table}) })
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.Storage.Backend = "hbase"
	cfg.Storage.HBase.Thrift = addr
	cfg.Storage.HBase.Table = table
	var logs testenv.SyncBuffer

	base, stop := serveConfig(t, &cfg, &logs)
	code, body := postJSON(t, base+"/v1/connections", map[string]any{"name": "maria", "type": "mysql", "options": opts})
	if code != http.StatusConflict || !strings.Contains(body, `"code":"secret_key_missing"`) || !strings.Contains(body, "secrets.key_file") || strings.Contains(body, pw) {
		t.Fatalf("a literal with no key on HBase: %d %s", code, strings.ReplaceAll(body, pw, "<secret>"))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	oldKey := newKeyLine(t)
	cfg.Secrets.KeyFile = writeFile(t, "old.key", oldKey+"\n")
	base, stop = serveConfig(t, &cfg, &logs)
	createAndTest(t, base, "maria", opts, pw)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	assertNoCellHolds(t, addr, table, pw, "maria")

	// Rotation: the new key first, the old one after; then the old one
	// dropped.
	cfg.Secrets.KeyFile = writeFile(t, "both.key", newKeyLine(t)+"\n"+oldKey+"\n")
	base, stop = serveConfig(t, &cfg, &logs)
	if code, out, errs := cli(t, "secrets", "rotate", "--server", base); code != 0 || !strings.Contains(out, "1 secrets of 1 connections") {
		t.Fatalf("secrets rotate: exit %d %s %s", code, out, errs)
	}
	if code, out, _ := cli(t, "secrets", "rotate", "--server", base, "--output", "json"); code != 0 || !strings.Contains(out, `"secrets": 0`) && !strings.Contains(out, `"secrets":0`) {
		t.Fatalf("second rotate: exit %d %s", code, out)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(cfg.Secrets.KeyFile)
	newKey, _, _ := strings.Cut(string(b), "\n")
	cfg.Secrets.KeyFile = writeFile(t, "new.key", newKey+"\n")
	base, _ = serveConfig(t, &cfg, &logs)
	if code, body := postJSON(t, base+"/v1/connections/maria/test", nil); code != http.StatusOK || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("test with the old key dropped: %d %s", code, strings.ReplaceAll(body, pw, "<secret>"))
	}
	assertNoCellHolds(t, addr, table, pw, "maria")
	if strings.Contains(logs.String(), pw) {
		t.Error("the server log holds the password")
	}
}

// newKeyLine returns a fresh key as a key file's line.
func newKeyLine(t *testing.T) string {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

// assertNoCellHolds scans every version of every cell of the metadata
// table of HBase table through the store and fails when one holds
// secret; a cell must mention conn (the connection was stored).
func assertNoCellHolds(t *testing.T, addr, table, secret, conn string) {
	t.Helper()
	ctx := context.Background()
	st, err := hbase.Open(ctx, hbase.Options{Addr: addr, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	it, err := st.Scan(ctx, txn.DefaultTable, store.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cells, found := 0, false
	for it.Next() {
		c := it.Cell()
		cells++
		if bytes.Contains(c.Value, []byte(secret)) || bytes.Contains(c.Row, []byte(secret)) || bytes.Contains(c.Column, []byte(secret)) {
			t.Errorf("cell %q/%q holds the password", c.Row, c.Column)
		}
		if bytes.Contains(c.Value, []byte(`"name":"`+conn+`"`)) {
			found = true
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("no cell of %d holds connection %s", cells, conn)
	}
}
