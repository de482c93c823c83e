package server

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/internal/testenv"
)

// testPKI is a CA and the files of certificates it signed, made by the
// code of snapstore cert.
type testPKI struct {
	dir            string
	caCert, caKey  []byte
	caFile         string
	certFile       string
	keyFile        string
	clientCertFile string
	clientKeyFile  string
}

func newTestPKI(t *testing.T, dir, name string) *testPKI {
	t.Helper()
	caCert, caKey, err := transfer.NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{dir: dir, caCert: caCert, caKey: caKey, caFile: filepath.Join(dir, name+"-ca.crt")}
	writeFile(t, p.caFile, caCert)
	p.certFile, p.keyFile = p.issue(t, name+"-server", "127.0.0.1", "localhost")
	p.clientCertFile, p.clientKeyFile = p.issue(t, name+"-client", "client")
	return p
}

// issue writes a certificate for hosts and its key.
func (p *testPKI) issue(t *testing.T, base string, hosts ...string) (certFile, keyFile string) {
	t.Helper()
	c, k, err := transfer.NewServerCert(p.caCert, p.caKey, hosts, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(p.dir, base+".crt"), filepath.Join(p.dir, base+".key")
	writeFile(t, certFile, c)
	writeFile(t, keyFile, k)
	return certFile, keyFile
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// serveTLS serves the fixture's handler over HTTPS on a real loopback
// listener, as cmd/snapstore does, and returns its address.
func serveTLS(t *testing.T, f *fixture, r *CertReloader) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: f.srv.Handler(), TLSConfig: r.Config(), ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelWarn)}
	go hs.ServeTLS(ln, "", "")
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// clientTLS trusts the CA of p and presents cert/key if given.
func clientTLS(t *testing.T, p *testPKI, certFile, keyFile string) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caCert)
	c := &tls.Config{RootCAs: pool}
	if certFile != "" {
		kp, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c
}

func httpsGet(t *testing.T, tc *tls.Config, addr, path string) (*http.Response, error) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
	resp, err := hc.Get("https://" + addr + path)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func TestTLS_ServesAndRefusesOldVersions(t *testing.T) {
	p := newTestPKI(t, t.TempDir(), "a")
	f := newFixture(t, fixtureOpts{})
	r, err := OpenTLS(TLSOptions{CertFile: p.certFile, KeyFile: p.keyFile, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, f, r)
	resp, err := httpsGet(t, clientTLS(t, p, "", ""), addr, "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET /healthz over HTTPS: %d", resp.StatusCode)
	}
	tc := clientTLS(t, p, "", "")
	tc.MinVersion, tc.MaxVersion = tls.VersionTLS11, tls.VersionTLS11
	if _, err := httpsGet(t, tc, addr, "/healthz"); err == nil {
		t.Fatal("a TLS 1.1 client was served")
	}
	tc = clientTLS(t, p, "", "")
	tc.MaxVersion = tls.VersionTLS12
	if _, err := httpsGet(t, tc, addr, "/healthz"); err != nil {
		t.Fatalf("a TLS 1.2 client with min_version 1.2: %v", err)
	}

	// The default minimum is 1.3.
	r13, err := OpenTLS(TLSOptions{CertFile: p.certFile, KeyFile: p.keyFile})
	if err != nil {
		t.Fatal(err)
	}
	addr13 := serveTLS(t, f, r13)
	if _, err := httpsGet(t, tc, addr13, "/healthz"); err == nil {
		t.Fatal("a TLS 1.2 client was served with the default minimum 1.3")
	}
}

func TestTLS_PlaintextToHTTPSPort(t *testing.T) {
	p := newTestPKI(t, t.TempDir(), "a")
	f := newFixture(t, fixtureOpts{})
	r, err := OpenTLS(TLSOptions{CertFile: p.certFile, KeyFile: p.keyFile})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, f, r)
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "HTTP request to an HTTPS server") {
		t.Fatalf("plain HTTP to the HTTPS port: %d %q", resp.StatusCode, b)
	}
}

func TestTLS_ClientCA(t *testing.T) {
	dir := t.TempDir()
	p := newTestPKI(t, dir, "a")
	other := newTestPKI(t, dir, "b")
	f := newFixture(t, fixtureOpts{})
	r, err := OpenTLS(TLSOptions{CertFile: p.certFile, KeyFile: p.keyFile, ClientCAFile: p.caFile})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, f, r)
	if resp, err := httpsGet(t, clientTLS(t, p, p.clientCertFile, p.clientKeyFile), addr, "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a client certificate of the client CA: %v %v", resp, err)
	}
	if _, err := httpsGet(t, clientTLS(t, p, other.clientCertFile, other.clientKeyFile), addr, "/healthz"); err == nil {
		t.Fatal("a client certificate of another CA was served")
	}
	if _, err := httpsGet(t, clientTLS(t, p, "", ""), addr, "/healthz"); err == nil {
		t.Fatal("a client without a certificate was served")
	}
}

func TestTLS_BadFilesRefusedAtOpen(t *testing.T) {
	dir := t.TempDir()
	p := newTestPKI(t, dir, "a")
	other := newTestPKI(t, dir, "b")
	for name, o := range map[string]TLSOptions{
		"missing":      {CertFile: filepath.Join(dir, "none.crt"), KeyFile: p.keyFile},
		"wrong key":    {CertFile: p.certFile, KeyFile: other.keyFile},
		"no key":       {CertFile: p.certFile},
		"ca not a pem": {CertFile: p.certFile, KeyFile: p.keyFile, ClientCAFile: p.keyFile},
	} {
		if _, err := OpenTLS(o); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	if _, err := ParseTLSVersion("1.1"); err == nil {
		t.Error("TLS 1.1 accepted as a minimum")
	}
}

// TestTLS_RotationWithoutRestart: a new certificate written over the
// files is served to new connections while a keep-alive connection opened
// before keeps working; a bad file keeps the old certificate.
func TestTLS_RotationWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	p := newTestPKI(t, dir, "a")
	logs := &testenv.SyncBuffer{}
	f := newFixture(t, fixtureOpts{})
	reg := prometheus.NewRegistry()
	r, err := OpenTLS(TLSOptions{CertFile: p.certFile, KeyFile: p.keyFile, PollInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil)), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)
	addr := serveTLS(t, f, r)
	first := r.Leaf().SerialNumber

	// A keep-alive connection, by hand so that its reuse is certain.
	conn, err := tls.Dial("tcp", addr, clientTLS(t, p, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	get := func() {
		t.Helper()
		if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("keep-alive GET: %d", resp.StatusCode)
		}
	}
	get()
	if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(first) != 0 {
		t.Fatalf("served %v, want %v", got, first)
	}

	// A bad certificate file: the old one stays, an error is logged.
	writeFile(t, p.certFile, []byte("not a certificate"))
	waitFor(t, func() bool { return strings.Contains(logs.String(), "tls certificate not reloaded") })
	if r.Leaf().SerialNumber.Cmp(first) != 0 {
		t.Fatal("a bad file replaced the certificate")
	}

	// A good one: new connections get it, the old connection still works.
	c, k, err := transfer.NewServerCert(p.caCert, p.caKey, []string{"127.0.0.1"}, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p.keyFile, k)
	writeFile(t, p.certFile, c)
	waitFor(t, func() bool { return r.Leaf().SerialNumber.Cmp(first) != 0 })
	second := r.Leaf().SerialNumber
	nc, err := tls.Dial("tcp", addr, clientTLS(t, p, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := nc.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(second) != 0 {
		t.Fatalf("a new connection got %v, want the new certificate %v", got, second)
	}
	nc.Close()
	get()
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "snapstore_server_tls_certificate_expiry_timestamp_seconds" ||
		int64(mfs[0].GetMetric()[0].GetGauge().GetValue()) != r.Leaf().NotAfter.Unix() {
		t.Fatalf("expiry gauge after the rotation: %v %v, want %d", mfs, err, r.Leaf().NotAfter.Unix())
	}

	// Reload (SIGHUP) re-reads at once.
	c, k, err = transfer.NewServerCert(p.caCert, p.caKey, []string{"127.0.0.1"}, 3*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p.keyFile, k)
	writeFile(t, p.certFile, c)
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if r.Leaf().SerialNumber.Cmp(second) == 0 {
		t.Fatal("Reload kept the old certificate")
	}
	get()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTLS_ChainAfterLeaf: a tls.cert_file holding the leaf and then the
// intermediate CA that signed it is served whole, so a client that
// trusts only the root verifies the server; the leaf alone is not.
func TestTLS_ChainAfterLeaf(t *testing.T) {
	dir := t.TempDir()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caTemplate := func(cn string, serial int64) *x509.Certificate {
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		}
	}
	rootKey, interKey := newKey(), newKey()
	rootTmpl := caTemplate("test root", 1)
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTmpl, rootTmpl, rootKey.Public(), rootKey)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := x509.ParseCertificate(rootDER)
	interTmpl := caTemplate("test intermediate", 2)
	interTmpl.MaxPathLenZero = true
	interDER, err := x509.CreateCertificate(rand.Reader, interTmpl, root, interKey.Public(), rootKey)
	if err != nil {
		t.Fatal(err)
	}
	interPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: interDER})
	interKeyDER, err := x509.MarshalPKCS8PrivateKey(interKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, leafKey, err := transfer.NewServerCert(interPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: interKeyDER}), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyFile, chainFile, leafFile := filepath.Join(dir, "server.key"), filepath.Join(dir, "chain.crt"), filepath.Join(dir, "leaf.crt")
	writeFile(t, keyFile, leafKey)
	writeFile(t, chainFile, append(append([]byte{}, leaf...), interPEM...))
	writeFile(t, leafFile, leaf)

	pool := x509.NewCertPool()
	pool.AddCert(root)
	f := newFixture(t, fixtureOpts{})
	for _, c := range []struct {
		certFile string
		served   bool
	}{{chainFile, true}, {leafFile, false}} {
		r, err := OpenTLS(TLSOptions{CertFile: c.certFile, KeyFile: keyFile})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := httpsGet(t, &tls.Config{RootCAs: pool}, serveTLS(t, f, r), "/healthz")
		switch {
		case c.served && err != nil:
			t.Errorf("%s: %v", filepath.Base(c.certFile), err)
		case c.served && len(resp.TLS.PeerCertificates) != 2:
			t.Errorf("%s: the server sent %d certificates, want the leaf and the intermediate", filepath.Base(c.certFile), len(resp.TLS.PeerCertificates))
		case !c.served && err == nil:
			t.Errorf("%s: a leaf without its intermediate verified against the root alone", filepath.Base(c.certFile))
		}
	}
}
