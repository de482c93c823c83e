package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI_TrustsWhatTheConfigSaysTheServerPresents runs snapstore
// servers over HTTPS with certificates of snapstore cert, and the CLI
// given only the server's config file (--config), no CA flag:
//
//   - the config names no CA: the CLI trusts its tls.cert_file itself (a
//     certificate of a private CA whose file the config does not name);
//   - a copy naming the right CA in tls.ca_file works, one naming another
//     CA fails with the certificate error, naming that tls.ca_file;
//   - --ca-file and SNAPSTORE_CA_FILE win over the config either way;
//   - a server with tls.client_ca_file: the CLI does not take the
//     server's own key for a client certificate, and says what is missing.
func TestCLI_TrustsWhatTheConfigSaysTheServerPresents(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	pki, other := t.TempDir(), t.TempDir()
	cli(t, "cert", "ca", pki)
	cli(t, "cert", "server", pki, "--host", "127.0.0.1")
	cli(t, "cert", "server", pki, "--host", "127.0.0.1", "--name", "client")
	cli(t, "cert", "ca", other)
	ca, otherCA := filepath.Join(pki, "ca.crt"), filepath.Join(other, "ca.crt")
	crt, key := filepath.Join(pki, "server.crt"), filepath.Join(pki, "server.key")
	// The config names the listen address, so that a client given the
	// file finds the server there.
	listen := gossipAddr(t, "127.0.0.1")
	url := "https://" + listen
	tlsLine := fmt.Sprintf("tls: {cert_file: %s, key_file: %s}\n", crt, key)
	p := startServerWith(t, "e2e-tls-unused-secret", "listen: "+listen+"\n"+tlsLine, "SNAPSTORE_CA_FILE="+ca)
	if p.base != url {
		t.Fatalf("server at %s, want %s", p.base, url)
	}

	// snap runs the CLI with env alone (besides PATH and HOME), so that no
	// SNAPSTORE_* variable of the test run decides what it trusts.
	snap := func(env []string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(binPath, args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	// withTLS is a copy of the server's config with another tls line.
	server, err := os.ReadFile(p.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	withTLS := func(name, line string) string {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(strings.Replace(string(server), tlsLine, line, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	rightCA := withTLS("right-ca.yaml", fmt.Sprintf("tls: {cert_file: %s, key_file: %s, ca_file: %s}\n", crt, key, ca))
	wrongCA := withTLS("wrong-ca.yaml", fmt.Sprintf("tls: {cert_file: %s, key_file: %s, ca_file: %s}\n", crt, key, otherCA))

	ok := func(what string, env []string, args ...string) {
		t.Helper()
		code, out := snap(env, append([]string{"datasets", "list"}, args...)...)
		if code != 0 || !strings.Contains(out, "using the server at "+url) || !strings.Contains(out, "DATASET") {
			t.Errorf("%s: exit %d:\n%s", what, code, out)
		}
	}
	untrusted := func(what string, env []string, by string, args ...string) {
		t.Helper()
		code, out := snap(env, append([]string{"datasets", "list"}, args...)...)
		for _, want := range []string{"the certificate of the server at " + url + " is not trusted", "x509: certificate signed by unknown authority", by, "give its CA with --ca-file FILE"} {
			if code != 3 || !strings.Contains(out, want) {
				t.Errorf("%s: exit %d, want 3 and %q:\n%s", what, code, want, out)
			}
		}
	}
	ok("the server's config", nil, "--config", p.cfgPath)
	ok("the server's config in SNAPSTORE_CONFIG", []string{"SNAPSTORE_CONFIG=" + p.cfgPath})
	ok("a config naming the CA", nil, "--config", rightCA)
	untrusted("a config naming another CA", nil, "the CAs of the config's tls.ca_file "+otherCA, "--config", wrongCA)
	ok("another CA in the config, the CA in --ca-file", nil, "--config", wrongCA, "--ca-file", ca)
	untrusted("the server's config, another CA in SNAPSTORE_CA_FILE", []string{"SNAPSTORE_CA_FILE=" + otherCA}, "--ca-file "+otherCA, "--config", p.cfgPath)
	// The commands that ask a server only trust it the same way: this one
	// gets the server's answer (it runs alone).
	if code, out := snap(nil, "cluster", "nodes", "--config", p.cfgPath); code != 1 || !strings.Contains(out, "HTTP 404 not_clustered") {
		t.Errorf("cluster nodes with the server's config: exit %d:\n%s", code, out)
	}

	// Mutual TLS: the server's config asks for client certificates.
	mtlsListen := gossipAddr(t, "127.0.0.1")
	mtls := startServerWith(t, "e2e-tls-unused-secret", "listen: "+mtlsListen+"\n"+fmt.Sprintf("tls: {cert_file: %s, key_file: %s, client_ca_file: %s}\n", crt, key, ca),
		"SNAPSTORE_CA_FILE="+ca, "SNAPSTORE_CLIENT_CERT="+filepath.Join(pki, "client.crt"), "SNAPSTORE_CLIENT_KEY="+filepath.Join(pki, "client.key"))
	code, out := snap(nil, "datasets", "list", "--config", mtls.cfgPath)
	for _, want := range []string{"the server at https://" + mtlsListen + " refused the connection", "certificate required",
		"asks every client for a certificate signed by tls.client_ca_file " + ca + ", and none was given", "--client-cert FILE and --client-key FILE"} {
		if code != 3 || !strings.Contains(out, want) {
			t.Errorf("mutual TLS without a client certificate: exit %d, want 3 and %q:\n%s", code, want, out)
		}
	}
	if code, out := snap(nil, "datasets", "list", "--config", mtls.cfgPath, "--client-cert", filepath.Join(pki, "client.crt"), "--client-key", filepath.Join(pki, "client.key")); code != 0 || !strings.Contains(out, "DATASET") {
		t.Errorf("mutual TLS with a client certificate and the server's config alone: exit %d:\n%s", code, out)
	}
}
