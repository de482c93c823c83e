package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/cluster/transfer"
)

// TestCertCommand makes a CA and node certificates with snapstore cert:
// the files and their modes, the node id taken from the data directory
// (created there as serve would), no file overwritten without --force,
// and certificates the transport accepts.
func TestCertCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	if code, out, errOut := cli(t, "cert", "ca", dir); code != 0 || !strings.Contains(out, "ca.crt") {
		t.Fatalf("cert ca: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := cli(t, "cert", "ca", dir); code != 1 || !strings.Contains(errOut, "exists; --force overwrites it") {
		t.Errorf("cert ca again: %d %s", code, errOut)
	}
	data := t.TempDir()
	code, out, errOut := cli(t, "cert", "node", dir, "--data", data)
	if code != 0 {
		t.Fatalf("cert node: %d %s", code, errOut)
	}
	id, err := os.ReadFile(filepath.Join(data, "node-id"))
	if err != nil {
		t.Fatal(err)
	}
	nodeID := strings.TrimSpace(string(id))
	if !strings.Contains(out, "new node id "+nodeID) || !strings.Contains(out, "cert_file: "+filepath.Join(dir, nodeID+".crt")) {
		t.Errorf("cert node printed:\n%s", out)
	}
	// The cluster section printed is one serve takes once its lines
	// marked EDIT are edited: bind, gossip key file, transfer listen.
	section := out[strings.Index(out, "cluster:\n"):]
	for _, want := range []string{"bind: 192.0.2.1:7946   # EDIT", "gossip_key_file: gossip.key   # EDIT", "listen: 192.0.2.1:7950   # EDIT", "ca_file: "} {
		if !strings.Contains(section, want) {
			t.Errorf("cert node's cluster section lacks %q:\n%s", want, section)
		}
	}
	keyFile := filepath.Join(t.TempDir(), "gossip.key")
	if code, key, _ := cli(t, "cluster", "keygen"); code != 0 || os.WriteFile(keyFile, []byte(key), 0o600) != nil {
		t.Fatal("cluster keygen")
	}
	edited := strings.NewReplacer("192.0.2.1", "127.0.0.1", "gossip.key", keyFile).Replace(section)
	cfgFile := writeFile(t, "node.yaml", "storage: {backend: hbase, hbase: {thrift: 127.0.0.1:1}}\n"+edited)
	if _, err := loadConfig(&commonFlags{config: cfgFile, data: data}, nil); err != nil {
		t.Errorf("the edited cluster section is refused: %v\n%s", err, edited)
	}
	for f, mode := range map[string]os.FileMode{"ca.key": 0o600, "ca.crt": 0o644, nodeID + ".key": 0o600, nodeID + ".crt": 0o644} {
		if info, err := os.Stat(filepath.Join(dir, f)); err != nil || info.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", f, info, err, mode)
		}
	}
	if code, _, _ := cli(t, "cert", "node", dir, "--id", "node-b", "--valid", "48h"); code != 0 {
		t.Fatal("cert node --id")
	}
	if code, _, errOut := cli(t, "cert", "node", dir, "--id", "Bad_Name"); code != 1 || !strings.Contains(errOut, "cannot be a DNS name") {
		t.Errorf("cert node with a bad id: %d %s", code, errOut)
	}
	if code, _, errOut := cli(t, "cert", "node", t.TempDir(), "--id", "node-c"); code != 1 || !strings.Contains(errOut, "snapstore cert ca") {
		t.Errorf("cert node without a CA: %d %s", code, errOut)
	}
	for _, args := range [][]string{{"cert"}, {"cert", "frob", dir}, {"cert", "ca"}, {"cert", "ca", dir, "--valid", "-1h"}} {
		if code, _, _ := cli(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	// The transport takes them: each node's certificate names its id.
	for _, id := range []string{nodeID, "node-b"} {
		cfg := transfer.DefaultConfig()
		cfg.NodeID, cfg.Listen, cfg.Dir = id, "127.0.0.1:0", t.TempDir()
		cfg.CAFile, cfg.CertFile, cfg.KeyFile = filepath.Join(dir, "ca.crt"), filepath.Join(dir, id+".crt"), filepath.Join(dir, id+".key")
		cfg.Members = staticMembers{}
		tr, err := transfer.Open(cfg)
		if err != nil {
			t.Fatalf("the transport refuses the certificate of %s: %v", id, err)
		}
		tr.Close()
	}
	if code, _, errOut := cli(t, "cert", "node", dir, "--id", "node-b", "--force"); code != 0 {
		t.Errorf("cert node --force: %d %s", code, errOut)
	}
}

// staticMembers knows no member.
type staticMembers struct{}

func (staticMembers) Lookup(string) (string, bool) { return "", false }

// TestClusterBacklogCommand prints a server's backlog: a line per node
// with its state, a line per dataset under it; --json passes the answer
// through, indented; a node without a transfer listener says so.
func TestClusterBacklogCommand(t *testing.T) {
	answer := `{"enabled":true,"memory_bytes":6553600,"nodes":[
	 {"node":"rlyan3w36auz3u2pep7mkkgjn2","rows":1250000,"bytes":98304000,"batches":1250,"spilled_bytes":91750400,"connections":0,
	  "down_since":"2026-12-02T10:04:12Z","last_error":"dialling node rlyan3w36auz3u2pep7mkkgjn2 at 10.0.0.3:7950: connection refused",
	  "datasets":[{"dataset":"orders","rows":1250000,"bytes":98304000,"batches":1250}]},
	 {"node":"twcr6psunqtojzf426irbs3u56","rows":0,"bytes":0,"batches":0,"spilled_bytes":0,"connections":4,"datasets":[]}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/cluster/backlog" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	code, out, errOut := cli(t, "cluster", "backlog", "--server", srv.URL)
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	t.Logf("snapstore cluster backlog:\n%s", out)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "NODE") ||
		!strings.Contains(lines[1], "1,250,000") || !strings.Contains(lines[1], "88 MiB") || !strings.Contains(lines[1], "unreachable since") ||
		!strings.Contains(lines[2], "orders") || !strings.HasSuffix(lines[3], "reachable") {
		t.Errorf("table:\n%s", out)
	}
	if code, out, _ := cli(t, "cluster", "backlog", "--json", "--server", srv.URL); code != 0 || !strings.Contains(out, `"spilled_bytes": 91750400`) {
		t.Errorf("--json: %d %s", code, out)
	}
	answer = `{"enabled":false,"memory_bytes":0,"nodes":[]}`
	if code, out, _ := cli(t, "cluster", "backlog", "--server", srv.URL); code != 0 || !strings.Contains(out, "no transfer listener") {
		t.Errorf("without a listener: %d %s", code, out)
	}
}
