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

// TestTransferConfig_ErrorsWithTheOthers checks that the cluster.transfer
// keys' problems come in the one report of every bad key: transfer keys
// without cluster.bind, keys without cluster.transfer.listen, certificate
// files missing, bad counts, next to a bad log level.
func TestTransferConfig_ErrorsWithTheOthers(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"no bind", "log: {level: loud}\ncluster:\n  transfer: {listen: 127.0.0.1:7950, max_workers: 3}\n", []string{
			"config key log.level (line 1)",
			"config key cluster.transfer.listen (line 3): set cluster.bind to run a cluster",
			"config key cluster.transfer.max_workers (line 3): set cluster.bind",
		}},
		{"no listen", clusterFile + "  transfer:\n    ca_file: ca.crt\n    queue_batches: 5\n", []string{
			"config key cluster.transfer.ca_file (line 6): set cluster.transfer.listen",
			"config key cluster.transfer.queue_batches (line 7): set cluster.transfer.listen",
		}},
		{"bad values", "log: {level: loud}\n" + clusterFile + "  transfer:\n    listen: nohost\n    connections_per_node: 0\n    max_workers: 2000\n    queue_memory: 1000\n    owner_wait: 0s\n", []string{
			"config key log.level (line 1)",
			"config key cluster.transfer.listen (line 7): want host:port",
			"config key cluster.transfer.ca_file (line 6): required: nodes exchange rows only over mutual TLS",
			"config key cluster.transfer.cert_file (line 6): required",
			"config key cluster.transfer.key_file (line 6): required",
			"config key cluster.transfer.connections_per_node (line 8): want 1 to 64, got 0",
			"config key cluster.transfer.max_workers (line 9): want 1 to 1024, got 2000",
			"config key cluster.transfer.queue_memory (line 10): want at least 1 MiB",
			"config key cluster.transfer.owner_wait (line 11): must be positive",
		}},
		{"partitions", clusterFile + "  partitions: 4\n  partition_moves: 9\n  partition_move_interval: 1ms\n", []string{
			"config key cluster.partitions (line 5): want 8 to 1024, got 4",
			"config key cluster.partition_moves (line 6): want 0 (partitions/8) to partitions (4), got 9",
			"config key cluster.partition_move_interval (line 7): at least 100ms",
		}},
		{"partitions alone", "cluster:\n  partitions: 64\n", []string{
			"config key cluster.partitions (line 2): set cluster.bind to run a cluster",
		}},
		{"every interface", clusterFile + "  transfer: {listen: \"0.0.0.0:7950\", ca_file: a, cert_file: b, key_file: c}\n", nil},
		{"advertise", "storage: {backend: hbase, hbase: {thrift: \"127.0.0.1:9090\"}}\ncluster:\n  bind: 0.0.0.0:7946\n  gossip_key_file: /nonexistent\n  transfer: {listen: \"0.0.0.0:7950\", ca_file: a, cert_file: b, key_file: c}\n", []string{
			"config key cluster.transfer.advertise (line 5): required when cluster.transfer.listen (0.0.0.0:7950) and the gossip addresses bind every interface",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(&commonFlags{config: writeFile(t, "c.yaml", tc.file)}, nil)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if a, err := transferAddress(cfg.Cluster, cfg.Cluster.Transfer.Listen); err != nil || a != "127.0.0.1:7950" {
					t.Errorf("advertised transfer address %q %v, want the gossip host", a, err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("no %q in:\n%v", w, err)
				}
			}
		})
	}
	cfg, err := loadConfig(&commonFlags{config: writeFile(t, "c.yaml", clusterFile)}, []string{
		"SNAPSTORE_CLUSTER_TRANSFER_LISTEN=127.0.0.1:7950", "SNAPSTORE_CLUSTER_TRANSFER_CA_FILE=ca.crt",
		"SNAPSTORE_CLUSTER_TRANSFER_CERT_FILE=n.crt", "SNAPSTORE_CLUSTER_TRANSFER_KEY_FILE=n.key",
		"SNAPSTORE_CLUSTER_TRANSFER_CONNECTIONS_PER_NODE=2", "SNAPSTORE_CLUSTER_TRANSFER_QUEUE_MEMORY=2097152",
	})
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.transferConfig("node-a", "inc", nil, nil, nil)
	if tc.Listen != "127.0.0.1:7950" || tc.ConnectionsPerNode != 2 || tc.QueueMemory != 2<<20 || tc.MaxWorkers != 8 || tc.QueueBatches != 100 ||
		tc.Dir != filepath.Join(cfg.Data, "cluster/transfer") || tc.KeyFile != "n.key" {
		t.Errorf("transfer config from the environment: %+v", tc)
	}
}

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
