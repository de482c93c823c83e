package main

import (
	"bytes"
	"crypto/tls"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/server"
)

// TestServe_HTTPSWithTheCLI: snapstore cert makes a CA and a server
// certificate, serve speaks HTTPS with them, and the CLI reaches it with
// --ca-file or SNAPSTORE_CA_FILE, a token given to the server by its hash
// (snapstore token new).
func TestServe_HTTPSWithTheCLI(t *testing.T) {
	dir := t.TempDir()
	if code, out, errs := cli(t, "cert", "ca", dir); code != 0 {
		t.Fatalf("cert ca: %d %s %s", code, out, errs)
	}
	code, out, errs := cli(t, "cert", "server", dir, "--host", "127.0.0.1,localhost")
	if code != 0 || !strings.Contains(out, "cert_file: "+filepath.Join(dir, "server.crt")) {
		t.Fatalf("cert server: %d %s %s", code, out, errs)
	}
	if code, _, errs := cli(t, "cert", "server", dir); code != 2 || !strings.Contains(errs, "--host") {
		t.Fatalf("cert server without --host: %d %s", code, errs)
	}
	// Made in a relative directory, the configuration lines still name
	// the files absolutely: serve reads them from wherever it runs.
	t.Chdir(dir)
	if code, out, errs := cli(t, "cert", "ca", "tls"); code != 0 {
		t.Fatalf("cert ca tls: %d %s %s", code, out, errs)
	}
	code, out, errs = cli(t, "cert", "server", "tls", "--host", "localhost", "--name", "rel")
	for _, want := range []string{"wrote tls/rel.crt and tls/rel.key", "  cert_file: " + filepath.Join(dir, "tls", "rel.crt") + "\n",
		"  key_file: " + filepath.Join(dir, "tls", "rel.key") + "\n", "clients: --ca-file " + filepath.Join(dir, "tls", "ca.crt") + " "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("cert server in a relative directory: %d, lacks %q:\n%s%s", code, want, out, errs)
		}
	}
	code, out, _ = cli(t, "token", "new")
	var tok, hash string
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "token: "); ok {
			tok = v
		}
		if v, ok := strings.CutPrefix(l, "token_hash: "); ok {
			hash = v
		}
	}
	if code != 0 || len(tok) != 43 || hash != server.HashToken(tok) {
		t.Fatalf("token new: %d %q", code, out)
	}
	var hashed bytes.Buffer
	if err := tokenHash(nil, strings.NewReader(tok+"\n"), &hashed); err != nil || strings.TrimSpace(hashed.String()) != hash {
		t.Fatalf("token hash: %v %q", err, hashed.String())
	}
	if err := tokenHash(nil, strings.NewReader("short\n"), &hashed); err == nil {
		t.Fatal("token hash of a short token accepted")
	}

	tokens := []server.Token{{Name: "ops", Hash: hash, Role: server.RoleAdmin}}
	url, _, _ := startServeWith(t, 0, tokens, func(c *config.Config) {
		c.TLS = config.TLSConfig{CertFile: filepath.Join(dir, "server.crt"), KeyFile: filepath.Join(dir, "server.key")}
	})
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("url %s", url)
	}
	ca := filepath.Join(dir, "ca.crt")
	code, out, errs = cli(t, "run", "products", "--server", url, "--token", tok, "--ca-file", ca)
	if code != 0 {
		t.Fatalf("run over HTTPS: %d %s %s", code, out, errs)
	}
	code, _, errs = cli(t, "get", "products", "2", "--server", url, "--token", tok)
	if code != 3 || !strings.Contains(errs, "the certificate of the server at "+url+" is not trusted") || !strings.Contains(errs, "--ca-file FILE") || strings.Contains(errs, "no answer") {
		t.Fatalf("without --ca-file: %d %s", code, errs)
	}
	// Neither --server nor a config with tls: the listen address alone
	// (SNAPSTORE_LISTEN) finds the server there over HTTPS, never the data
	// directory, and verifies its certificate as --server https://... does.
	addr := strings.TrimPrefix(url, "https://")
	code, _, errs = cli(t, "get", "products", "2", "--listen", addr, "--token", tok)
	if code != 3 || !strings.Contains(errs, "using the server at "+url+" (it serves HTTPS;") || !strings.Contains(errs, "is not trusted") || strings.Contains(errs, "data directory") {
		t.Fatalf("--listen %s of an HTTPS server, no CA: %d %s", addr, code, errs)
	}
	t.Setenv(envCAFile, ca)
	code, out, errs = cli(t, "get", "products", "2", "--listen", addr, "--token", tok)
	if code != 0 || !strings.Contains(out, "jug") || !strings.Contains(errs, "using the server at "+url+" (it serves HTTPS;") {
		t.Fatalf("--listen %s of an HTTPS server: %d %s %s", addr, code, out, errs)
	}
	// So do the commands that only ask a server (tokens, cluster).
	if code, out, errs := cli(t, "tokens", "list", "--listen", addr, "--token", tok); code != 0 || !strings.Contains(out, "ops") {
		t.Fatalf("tokens list, --listen %s of an HTTPS server: %d %s %s", addr, code, out, errs)
	}
	code, out, errs = cli(t, "get", "products", "2", "--server", url, "--token", tok)
	if code != 0 || !strings.Contains(out, "jug") {
		t.Fatalf("with %s: %d %s %s", envCAFile, code, out, errs)
	}
	code, _, errs = cli(t, "get", "products", "2", "--server", url, "--token", "not-the-token-at-all")
	if code != 1 || !strings.Contains(errs, "401") || !strings.Contains(errs, "refused the token given") || strings.Contains(errs, "--token") {
		t.Fatalf("a wrong token: %d %s", code, errs)
	}

	// API tokens through the CLI: created (shown once), listed without
	// it, used, revoked.
	srv := []string{"--server", url, "--token", tok}
	// A body field the server refuses is named by the flag that gave it.
	if code, _, errs := cli(t, append([]string{"tokens", "create", "ci", "--role", "boss"}, srv...)...); code != 1 || !strings.Contains(errs, "HTTP 400 bad_request: --role: value is not one of the allowed values") || strings.Contains(errs, "body.role") {
		t.Errorf("tokens create with a bad role: exit %d: %s", code, errs)
	}
	if code, _, errs := cli(t, append([]string{"tokens", "create", "ci", "--role", "reader", "--datasets", "ok,a/b"}, srv...)...); code != 1 || !strings.Contains(errs, "HTTP 400 bad_request: --datasets: pattern \"a/b\" has a '/'") {
		t.Errorf("tokens create with a bad grant: exit %d: %s", code, errs)
	}
	if code, _, errs := cli(t, append([]string{"tokens", "create", "ci", "--role", "reader", "--expires-in", "30x"}, srv...)...); code != 2 || !strings.Contains(errs, "want a duration such as") {
		t.Fatalf("tokens create --expires-in 30x: %d %s", code, errs)
	}
	code, out, errs = cli(t, append([]string{"tokens", "create", "ci", "--role", "reader", "--expires-in", "30d", "--datasets", "prod*,other"}, srv...)...)
	// The token alone on stdout (TOKEN=$(snapstore tokens create ...)).
	ciTok := strings.TrimSuffix(out, "\n")
	if code != 0 || len(ciTok) != 43 || strings.Contains(ciTok, "\n") || !strings.Contains(errs, "shown this once") || !strings.Contains(errs, "role reader, datasets prod*,other, expires") || strings.Contains(errs, "never expires") {
		t.Fatalf("tokens create: %d %q %s", code, out, errs)
	}
	if code, _, errs := cli(t, append([]string{"tokens", "create", "forever", "--role", "reader"}, srv...)...); code != 0 || !strings.Contains(errs, "token forever never expires") || !strings.Contains(errs, "role reader, every dataset,") {
		t.Fatalf("tokens create without --expires-in: %d %s", code, errs)
	}
	code, out, errs = cli(t, append([]string{"tokens", "list"}, srv...)...)
	if code != 0 || !strings.Contains(out, "ci") || !strings.Contains(out, "reader") || !strings.Contains(out, "prod*,other") || strings.Contains(out, ciTok) {
		t.Fatalf("tokens list: %d %q %s", code, out, errs)
	}
	if code, out, errs := cli(t, "get", "products", "2", "--server", url, "--token", ciTok); code != 0 || !strings.Contains(out, "jug") {
		t.Fatalf("get with the API token: %d %s %s", code, out, errs)
	}
	if code, out, errs := cli(t, append([]string{"tokens", "revoke", "ci"}, srv...)...); code != 0 || !strings.Contains(out, "token ci revoked") {
		t.Fatalf("tokens revoke: %d %s %s", code, out, errs)
	}
	if code, _, errs := cli(t, "get", "products", "2", "--server", url, "--token", ciTok); code != 1 || !strings.Contains(errs, "401") || !strings.Contains(errs, "unknown, revoked or expired") {
		t.Fatalf("get with a revoked token: %d %s", code, errs)
	}
}

// TestServe_RefusesShortTokensAndTokensInClear: serve refuses to start
// with a token too short to be a secret, and with tokens served in clear
// off loopback, each naming its key, the token never shown.
func TestServe_RefusesShortTokensAndTokensInClear(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := writeFile(t, "short.yaml", `listen: 0.0.0.0:8443
auth:
  tokens:
    - {name: a, token: tiny-secret, role: admin}
    - {name: b, token_hash: "sha256:`+strings.Repeat("ab", 32)+`", role: reader}
`)
	code, _, msg := cli(t, "serve", "--config", p, "--data", data)
	for _, want := range []string{
		"config key listen (line 1): listen address \"0.0.0.0:8443\" is not loopback and the server has tokens but no TLS",
		"config key auth.tokens[0].token (line 4): the token has 11 characters; a token must have at least 16",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if code != 2 || strings.Contains(msg, "tiny-secret") || strings.Contains(msg, "auth.tokens[1]") {
		t.Errorf("exit %d:\n%s", code, msg)
	}
}

// TestSnapstoreAnswers_ServerAskingForACertificate: a server that asks
// for a client certificate the probe lacks still counts as answering, so
// that no command takes the data directory (or drops an HBase table)
// beside it.
func TestSnapstoreAnswers_ServerAskingForACertificate(t *testing.T) {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"status":"ok"}`)
	}))
	ts.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	ts.StartTLS()
	defer ts.Close()
	u, _ := url.Parse(ts.URL)
	if !snapstoreAnswers(t.Context(), u, &tls.Config{}) {
		t.Fatal("a TLS server asking for a client certificate counts as absent")
	}
	ts.Close()
	if snapstoreAnswers(t.Context(), u, &tls.Config{}) {
		t.Fatal("a closed server answers")
	}
}

// TestCLI_RefusedClientCertificateAndPlainHTTP: against a server with
// tls.client_ca_file, the CLI says the server refused its client
// certificate (none given, or one of another CA) and how to give one,
// instead of "no answer"; with a certificate of that CA it is served. A
// plain http:// URL of the HTTPS port is told to use https://.
func TestCLI_RefusedClientCertificateAndPlainHTTP(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	for _, args := range [][]string{
		{"cert", "ca", dir},
		{"cert", "server", dir, "--host", "127.0.0.1"},
		{"cert", "server", dir, "--host", "127.0.0.1", "--name", "client"},
		{"cert", "ca", other},
		{"cert", "server", other, "--host", "127.0.0.1", "--name", "client"},
	} {
		if code, out, errs := cli(t, args...); code != 0 {
			t.Fatalf("%v: %d %s %s", args, code, out, errs)
		}
	}
	url, _, _ := startServeWith(t, 0, nil, func(c *config.Config) {
		c.TLS = config.TLSConfig{CertFile: filepath.Join(dir, "server.crt"), KeyFile: filepath.Join(dir, "server.key"), ClientCAFile: filepath.Join(dir, "ca.crt")}
	})
	list := []string{"datasets", "list", "--server", url, "--ca-file", filepath.Join(dir, "ca.crt")}
	for _, c := range []struct {
		name  string
		args  []string
		alert string
	}{
		{"no certificate", nil, "certificate required"},
		{"a certificate of another CA", []string{"--client-cert", filepath.Join(other, "client.crt"), "--client-key", filepath.Join(other, "client.key")}, "unknown certificate authority"},
	} {
		code, _, errs := cli(t, append(list, c.args...)...)
		if code != 3 || !strings.Contains(errs, "the server at "+url+" refused the client certificate") || !strings.Contains(errs, c.alert) ||
			!strings.Contains(errs, "--client-cert FILE and --client-key FILE") || strings.Contains(errs, "no answer") {
			t.Errorf("%s: exit %d %s", c.name, code, errs)
		}
	}
	if code, out, errs := cli(t, append(list, "--client-cert", filepath.Join(dir, "client.crt"), "--client-key", filepath.Join(dir, "client.key"))...); code != 0 || !strings.Contains(out, "DATASET") {
		t.Errorf("a certificate of the client CA: exit %d %s %s", code, out, errs)
	}
	plain := "http://" + strings.TrimPrefix(url, "https://")
	if code, _, errs := cli(t, "datasets", "list", "--server", plain); code != 1 || !strings.Contains(errs, "give --server https://"+strings.TrimPrefix(url, "https://")) || strings.Contains(errs, ".;") {
		t.Errorf("http:// to the HTTPS port: exit %d %s", code, errs)
	}
}

// TestClient_RedirectNotFollowed: a server (or a proxy in front of it)
// that answers an https:// request with a redirect to http:// of the same
// host does not get the token sent in clear: the client follows no
// redirect, and says where the server pointed.
func TestClient_RedirectNotFollowed(t *testing.T) {
	const token = "cli-token-not-for-plain-http-0123"
	var leaked atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"datasets":[]}`))
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer tlsSrv.Close()
	ca := writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})))
	code, _, errs := cli(t, "datasets", "list", "--server", tlsSrv.URL, "--token", token, "--ca-file", ca)
	if n := leaked.Load(); n != 0 {
		t.Fatalf("the token followed a redirect to %s (%d requests)", plain.URL, n)
	}
	if code == 0 || !strings.Contains(errs, "redirect") || !strings.Contains(errs, plain.URL) || strings.Contains(errs, token) {
		t.Errorf("exit %d, stderr:\n%s\nwant a failure naming the redirect to %s", code, errs, plain.URL)
	}
}
