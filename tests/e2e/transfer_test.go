package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapstore/snapstore/cluster/transfer"
)

// staticPeers is the member list of the test process's own transport,
// which plays a sending node against the servers: who it dials, where.
type staticPeers map[string]string

func (s staticPeers) Lookup(id string) (string, bool) { a, ok := s[id]; return a, ok }

// refusals records what a run of the test process's transport hears.
type refusals struct {
	mu  sync.Mutex
	got []string
}

func (r *refusals) Acked(string, transfer.Stream, uint64, []byte) {}
func (r *refusals) Refused(to string, s transfer.Stream, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, reason)
}

// TestClusterTransfer starts two cluster nodes on one HBase table with
// transfer listeners and certificates made by `snapstore cert`
// (cluster/transfer, docs/cluster.md):
//
//   - each node advertises its transfer address in its xfer tag, and
//     GET /v1/cluster/backlog and `snapstore cluster backlog` answer;
//   - a sender whose certificate another CA signed, though it names a
//     member, is refused by node 2 and the refusal is logged with its
//     reason and counted; so is a sender with a certificate of the
//     cluster CA that names no member;
//   - a sender with a member's certificate is accepted: its batch reaches
//     node 2, which refuses it as a batch of no run it knows (no run
//     record);
//   - a node whose certificate names another node does not start, and
//     says why.
func TestClusterTransfer(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	env := hbaseEnv(t)
	certs := t.TempDir()
	snap := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(binPath, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("snapstore %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Log(snap("cert", "ca", certs))
	var dataDirs, ids []string
	for range 2 {
		d := t.TempDir()
		t.Log(snap("cert", "node", certs, "--data", d))
		b, err := os.ReadFile(filepath.Join(d, "node-id"))
		if err != nil {
			t.Fatal(err)
		}
		dataDirs, ids = append(dataDirs, d), append(ids, strings.TrimSpace(string(b)))
	}
	if info, err := os.Stat(filepath.Join(certs, ids[0]+".key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("node key: %v %v", info.Mode(), err)
	}
	gossip := []string{gossipAddr(t, "127.0.0.1"), gossipAddr(t, "127.0.0.2")}
	xferAddr := []string{gossipAddr(t, "127.0.0.1"), gossipAddr(t, "127.0.0.2")}
	nodeEnv := func(i int) []string {
		e := append(slices.Clone(env),
			"SNAPSTORE_DATA="+dataDirs[i],
			fmt.Sprintf("SNAPSTORE_LISTEN=127.0.0.%d:0", i+1),
			"SNAPSTORE_CLUSTER_BIND="+gossip[i],
			"SNAPSTORE_CLUSTER_PRESET=loopback",
			"SNAPSTORE_CLUSTER_TRANSFER_LISTEN="+xferAddr[i],
			"SNAPSTORE_CLUSTER_TRANSFER_CA_FILE="+filepath.Join(certs, "ca.crt"),
			"SNAPSTORE_CLUSTER_TRANSFER_CERT_FILE="+filepath.Join(certs, ids[i]+".crt"),
			"SNAPSTORE_CLUSTER_TRANSFER_KEY_FILE="+filepath.Join(certs, ids[i]+".key"))
		if i > 0 {
			e = append(e, "SNAPSTORE_CLUSTER_JOIN="+gossip[0])
		}
		return e
	}
	n1 := startServer(t, "no-secret-here", nodeEnv(0)...)
	n2 := startServer(t, "no-secret-here", nodeEnv(1)...)
	sorted := slices.Sorted(slices.Values(ids))
	poll(t, 30*time.Second, "two members, active, on both nodes", func() bool { return n1.seesAll(t, sorted) && n2.seesAll(t, sorted) })
	for i, p := range []*proc{n1, n2} {
		for j, id := range ids {
			if n, _ := member(p.members(t), id); n.Tags["xfer"] != xferAddr[j] {
				t.Errorf("node %d sees node %d's xfer tag %q, want %q", i+1, j+1, n.Tags["xfer"], xferAddr[j])
			}
		}
	}
	var bl struct {
		Enabled bool              `json:"enabled"`
		Nodes   []json.RawMessage `json:"nodes"`
	}
	n1.jsonCall(t, http.StatusOK, "GET", "/v1/cluster/backlog", nil, &bl)
	if !bl.Enabled || len(bl.Nodes) != 0 {
		t.Errorf("node 1's backlog: %+v", bl)
	}
	if out := snap("cluster", "backlog", "--server", n1.base); !strings.Contains(out, "nothing waits") {
		t.Errorf("snapstore cluster backlog: %s", out)
	}

	// The test process sends to node 2 as three would-be nodes.
	theirs := t.TempDir()
	snap("cert", "ca", theirs)
	snap("cert", "node", theirs, "--id", ids[0]) // a member's id, another CA
	snap("cert", "node", certs, "--id", "intruder")
	send := func(id, ca, dir string) *refusals {
		t.Helper()
		cfg := transfer.DefaultConfig()
		cfg.NodeID, cfg.Incarnation = id, "e2e"
		cfg.Listen = "127.0.0.1:0"
		cfg.CAFile = ca
		cfg.CertFile, cfg.KeyFile = filepath.Join(dir, id+".crt"), filepath.Join(dir, id+".key")
		cfg.Dir = t.TempDir()
		cfg.Members = staticPeers{ids[1]: xferAddr[1]}
		cfg.RetryMin, cfg.RetryMax = 50*time.Millisecond, 500*time.Millisecond
		cfg.Logger = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("test_sender", id)
		tr, err := transfer.Open(cfg)
		if err != nil {
			t.Fatalf("the test's transport as %s: %v", id, err)
		}
		t.Cleanup(func() { tr.Close() })
		ev := &refusals{}
		r, err := tr.StartRun(transfer.RunKey{Dataset: "e2e", Txn: 1}, transfer.CompressAll, ev)
		if err != nil {
			t.Fatal(err)
		}
		b := &transfer.Batch{Columns: []string{"id"}, Rows: []transfer.Row{{Key: []byte("k"), Values: [][]byte{[]byte("v")}}}}
		if err := r.Send(ids[1], b); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	logHas := func(p *proc, parts ...string) bool {
		b, _ := os.ReadFile(p.logPath)
		for _, l := range strings.Split(string(b), "\n") {
			ok := true
			for _, s := range parts {
				ok = ok && strings.Contains(l, s)
			}
			if ok {
				return true
			}
		}
		return false
	}
	// The impostor trusts both CAs; node 2 trusts only the cluster's.
	both := filepath.Join(theirs, "both.crt")
	ours, _ := os.ReadFile(filepath.Join(certs, "ca.crt"))
	other, _ := os.ReadFile(filepath.Join(theirs, "ca.crt"))
	if err := os.WriteFile(both, append(ours, other...), 0o644); err != nil {
		t.Fatal(err)
	}
	send(ids[0], both, theirs)
	poll(t, 20*time.Second, "node 2 logs the untrusted certificate", func() bool {
		return logHas(n2, "transfer: connection refused", `reason="untrusted certificate"`, ids[0])
	})
	send("intruder", filepath.Join(certs, "ca.crt"), certs)
	poll(t, 20*time.Second, "node 2 logs the certificate of no member", func() bool {
		return logHas(n2, "transfer: connection refused", `reason="not a member"`, "intruder")
	})
	metrics := string(n2.mustCall(t, http.StatusOK, "GET", "/metrics", nil).body)
	for _, want := range []string{`snapstore_cluster_transfer_refused_total{reason="untrusted certificate"}`, `snapstore_cluster_transfer_refused_total{reason="not a member"}`} {
		if !strings.Contains(metrics, want) || strings.Contains(metrics, want+" 0\n") {
			t.Errorf("node 2's metrics do not count %s", want)
		}
	}
	ev := send(ids[0], filepath.Join(certs, "ca.crt"), certs) // node 1's own certificate
	poll(t, 20*time.Second, "node 2 accepts a member and answers its batch", func() bool {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		return len(ev.got) == 1
	})
	// Its batch belongs to no run node 2 knows: refused, naming why.
	if !strings.Contains(ev.got[0], "reading the run record of e2e") || !strings.Contains(ev.got[0], "record not found") {
		t.Errorf("node 2's answer: %q", ev.got[0])
	}

	// A node whose certificate names another node does not start.
	bad := nodeEnv(1)
	for _, v := range []string{"SNAPSTORE_DATA", "SNAPSTORE_CLUSTER_BIND", "SNAPSTORE_CLUSTER_TRANSFER_LISTEN"} {
		bad = without(bad, v)
	}
	bad = append(bad, "SNAPSTORE_DATA="+t.TempDir(),
		"SNAPSTORE_CLUSTER_BIND="+gossipAddr(t, "127.0.0.3"), "SNAPSTORE_CLUSTER_TRANSFER_LISTEN="+gossipAddr(t, "127.0.0.3"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "serve")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, bad...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not this node's id") {
		t.Errorf("serve with another node's certificate: %v\n%s", err, out)
	}
	t.Logf("serve refused: %s", strings.TrimSpace(lastLine(string(out))))
}

// testLog writes log lines to the test log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
