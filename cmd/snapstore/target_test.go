package main

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/config"
)

// TestTarget_ExplicitDataNeverReplaced: with a server answering on the
// listen address, --data opens the named directory in this process, never
// asks the server; without --data the server answers, and stderr says
// which target each time.
func TestTarget_ExplicitDataNeverReplaced(t *testing.T) {
	url, _, _ := startServe(t, 0, nil)
	addr := strings.TrimPrefix(url, "http://")
	if code, out, errs := cli(t, "run", "products", "--listen", addr); code != 0 {
		t.Fatalf("run on the server: exit %d %s %s", code, out, errs)
	}
	code, out, errs := cli(t, "versions", "products", "--listen", addr)
	if code != 0 || !strings.Contains(errs, "using the server at "+url) || !strings.Contains(out, "*") {
		t.Fatalf("without --data: exit %d, %q %q", code, out, errs)
	}
	other := filepath.Join(t.TempDir(), "other")
	code, out, errs = cli(t, "versions", "products", "--listen", addr, "--data", other)
	if code != 1 || !strings.Contains(errs, "dataset_not_found") || strings.Contains(errs, "using the server") {
		t.Fatalf("--data %s with a server on the listen address: exit %d, %q %q", other, code, out, errs)
	}
	code, _, errs = cli(t, "datasets", "list", "--listen", "127.0.0.1:1", "--data", other)
	if code != 0 || strings.Contains(errs, "no server") {
		t.Fatalf("--data says nothing of servers: exit %d %q", code, errs)
	}
	code, _, errs = cli(t, "datasets", "list", "--listen", "127.0.0.1:1", "--config", writeFile(t, "c.yaml", "data: "+other+"\n"))
	if code != 0 || !strings.Contains(errs, "no server at http://127.0.0.1:1; using the data directory "+other) {
		t.Fatalf("neither flag, no server: exit %d %q", code, errs)
	}
	none := filepath.Join(t.TempDir(), "none")
	code, _, errs = cli(t, "datasets", "list", "--listen", "127.0.0.1:1", "--config", writeFile(t, "c.yaml", "data: "+none+"\n"))
	if code != 3 || !strings.Contains(errs, "no server at http://127.0.0.1:1 and no data directory at "+none) || !strings.Contains(errs, "--data DIR") {
		t.Fatalf("neither flag, no server, no data directory: exit %d %q", code, errs)
	}
	if _, err := os.Stat(none); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the data directory %s was created: %v", none, err)
	}
}

// TestTarget_Refusals: --server with --data is a usage error (2); a
// server that does not answer, or a data directory a server holds, is
// exit code 3, naming --server.
func TestTarget_Refusals(t *testing.T) {
	_, cfg, _ := startServe(t, 0, nil)
	if code, _, errs := cli(t, "datasets", "list", "--server", "http://127.0.0.1:1", "--data", t.TempDir()); code != 2 || !strings.Contains(errs, "not both") {
		t.Errorf("--server and --data: exit %d %q", code, errs)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String()
	closed.Close()
	if code, _, errs := cli(t, "datasets", "list", "--server", closedURL); code != 3 || !strings.Contains(errs, "no answer from the server at "+closedURL) {
		t.Errorf("no server: exit %d %q", code, errs)
	}
	code, _, errs := cli(t, "datasets", "list", "--data", cfg.Data)
	if code != 3 || !strings.Contains(errs, "in use by another process") || !strings.Contains(errs, "--server") {
		t.Errorf("a data directory the server holds: exit %d %q", code, errs)
	}
	if code, _, errs := cli(t, "datasets", "list", "--server", "localhost:8080"); code != 2 || !strings.Contains(errs, "--server: want a URL") {
		t.Errorf("a server that is no URL: exit %d %q", code, errs)
	}
}

// TestTarget_NamesTheStorage: a client command that opens the storage
// itself names what it opens: the data directory with Pebble, the HBase
// table (namespace defaulted) and its gateway with HBase.
func TestTarget_NamesTheStorage(t *testing.T) {
	for file, want := range map[string]string{
		"data: /tmp/nu/hb1\n": "the data directory /tmp/nu/hb1",
		"data: /tmp/nu/hb1\nstorage: {backend: hbase, hbase: {thrift: 127.0.0.1:29090, table: shop}}\n": "the HBase table snapstore:shop through the gateway 127.0.0.1:29090",
	} {
		cfg, err := loadConfig(&commonFlags{config: writeFile(t, "c.yaml", file)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := storageText(cfg); got != want {
			t.Errorf("%s: %q, want %q", file, got, want)
		}
	}
}

// TestLocalURL_EveryInterface: a configuration that listens on every
// interface is asked on loopback, where its server answers and whose
// name its certificate holds; any other address is asked as it is.
func TestLocalURL_EveryInterface(t *testing.T) {
	for listen, want := range map[string]string{
		"0.0.0.0:8443":      "https://127.0.0.1:8443",
		":8443":             "https://127.0.0.1:8443",
		"[::]:8443":         "https://[::1]:8443",
		"10.0.0.5:8443":     "https://10.0.0.5:8443",
		"snapstore.io:8443": "https://snapstore.io:8443",
		"[::1]:8443":        "https://[::1]:8443",
	} {
		cfg := &config.Config{Listen: listen}
		cfg.TLS.CertFile, cfg.TLS.KeyFile = "server.crt", "server.key"
		if got := localURL(cfg).String(); got != want {
			t.Errorf("listen %s: %s, want %s", listen, got, want)
		}
	}
	if got := localURL(&config.Config{Listen: "0.0.0.0:8080"}).String(); got != "http://127.0.0.1:8080" {
		t.Errorf("listen 0.0.0.0:8080 without TLS: %s", got)
	}
}

// TestTarget_ServerURLUserinfoAndPort: a --server URL with a user name or
// password is refused before any request (Go's client would send it as
// Basic authentication) and no message shows the password, a mistyped
// URL neither; a port out of 1..65535 is a usage error, not "no answer".
func TestTarget_ServerURLUserinfoAndPort(t *testing.T) {
	for _, c := range []struct{ server, want string }{
		{"http://alice:s3cretpw@127.0.0.1:1", "--server: http://xxxxx@127.0.0.1:1 names a user or password"},
		{"http://s3cretpw@127.0.0.1:1", "--server: http://xxxxx@127.0.0.1:1 names a user or password"},
		{"ftp://alice:s3cretpw@host", `--server: want a URL such as http://127.0.0.1:8080, got "ftp://xxxxx@host"`},
		{"http://alice:s3cretpw@[::1", `--server: want a URL such as http://127.0.0.1:8080, got "http://xxxxx@[::1"`},
		{"http://127.0.0.1:99999", `--server: port "99999" is not a port from 1 to 65535`},
		{"http://127.0.0.1:0", `--server: port "0" is not a port from 1 to 65535`},
	} {
		code, _, errs := cli(t, "datasets", "list", "--server", c.server)
		if code != exitUsage || !strings.Contains(errs, c.want) || strings.Contains(errs, "s3cretpw") {
			t.Errorf("%s: exit %d %q", c.server, code, errs)
		}
	}
}

// TestTarget_TokenWithLineEnd: a token with a line end or other control
// character, or a space at an end, is a usage error that does not show
// it, before any request (Go's client refused the header, which read as
// "no answer from the server", exit 3).
func TestTarget_TokenWithLineEnd(t *testing.T) {
	url, _, _ := startServe(t, 0, nil)
	for _, tok := range []string{"s3cret-token-value\n", "s3cret-token-value\r", "s3cret\x00token", " s3cret-token-value", "s3cret-token-value "} {
		code, _, errs := cli(t, "datasets", "list", "--server", url, "--token", tok)
		if code != exitUsage || !strings.Contains(errs, "--token (or SNAPSTORE_TOKEN): the token has a control character or a space at an end") || strings.Contains(errs, "s3cret") {
			t.Errorf("%q: exit %d %s", tok, code, errs)
		}
	}
}
