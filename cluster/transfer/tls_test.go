package transfer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestTransport_UntrustedCertificateRefused: a node whose certificate
// another CA signed (its id is a member's) is refused during the
// handshake, the refusal logged with its reason and counted, and nothing
// it sends is applied.
func TestTransport_UntrustedCertificateRefused(t *testing.T) {
	ours, theirs := newPKI(t), newPKI(t)
	b := ours.newNode(t, "node-b")
	a := theirs.newNode(t, "node-a")
	a.caFile = ours.caFile // it trusts us, we do not trust it
	ms := newMembers()
	ms.set(a.id, a.addr)
	ms.set(b.id, b.addr)
	rec := newRecorder()
	reg := prometheus.NewRegistry()
	tb := b.open(t, ms, rec, func(c *Config) { c.Registerer = reg })
	ta := a.open(t, ms, nil, func(c *Config) {
		c.CAFile = filepath.Join(t.TempDir(), "both.crt")
		both := append(append([]byte{}, ours.caCert...), theirs.caCert...)
		if err := os.WriteFile(c.CAFile, both, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	r, _ := ta.StartRun(RunKey{Dataset: "orders", Txn: 1}, CompressNone, nil)
	r.Send(b.id, testBatch(0, 0, 1))
	eventually(t, 10*time.Second, "the refusal is logged", func() bool {
		return b.log.has("connection refused", "reason=\"untrusted certificate\"", "node-a")
	})
	if n := testutil.ToFloat64(tb.metrics.refused.WithLabelValues(reasonUntrusted)); n < 1 {
		t.Errorf("refusals counted: %v", n)
	}
	if n, err := testutil.GatherAndCount(reg, "snapstore_cluster_transfer_refused_total"); err != nil || n == 0 {
		t.Errorf("the refusal counter is not registered: %d %v", n, err)
	}
	// The node certificate's expiry, so that it can be alerted on before
	// the others refuse it.
	if got, want := testutil.ToFloat64(tb.metrics.certExpiry), float64(tb.creds.notAfter.Unix()); got != want || got < float64(time.Now().Unix()) {
		t.Errorf("certificate expiry gauge %v, want %v (after now)", got, want)
	}
	eventually(t, 5*time.Second, "the sender sees the node unreachable", func() bool { return len(r.Waiting()) == 1 })
	if len(rec.batches()) != 0 {
		t.Fatal("a batch from an untrusted node was applied")
	}
	if bl := backlogOf(ta, b.id); bl.Batches != 1 || bl.DownSince.IsZero() {
		t.Errorf("sender's backlog %+v: the batch waits, the node is down", bl)
	}
	r.End(false)
}

// TestTransport_NonMemberRefused: a certificate the cluster CA signed
// whose SAN names no member is refused and logged; once the node is a
// member, the same certificate is accepted.
func TestTransport_NonMemberRefused(t *testing.T) {
	p := newPKI(t)
	a, b := p.newNode(t, "intruder"), p.newNode(t, "node-b")
	ms := newMembers()
	ms.set(b.id, b.addr)
	rec := newRecorder()
	b.open(t, ms, rec, nil)
	senderView := newMembers() // the intruder knows where node-b listens
	senderView.set(b.id, b.addr)
	ta := a.open(t, senderView, nil, nil)
	ev := newEvents()
	r, _ := ta.StartRun(RunKey{Dataset: "orders", Txn: 2}, CompressNone, ev)
	r.Send(b.id, testBatch(0, 0, 1))
	r.Send(b.id, &Batch{Stream: Stream{Partition: 0}, End: true, Total: 1})
	eventually(t, 10*time.Second, "the refusal is logged", func() bool {
		return b.log.has("connection refused", "reason=\"not a member\"", "intruder")
	})
	if len(rec.batches()) != 0 {
		t.Fatal("a batch from a non-member was applied")
	}
	ms.set(a.id, a.addr)
	eventually(t, 10*time.Second, "accepted once a member", func() bool { return ev.reportCount() == 1 })
	r.End(true)
}

// TestTransport_SenderChecksTheReceiversName: the address a sender has for
// node-b is node-c's; the TLS handshake fails on the sender's side since
// node-c's certificate does not name node-b, and nothing is sent.
func TestTransport_SenderChecksTheReceiversName(t *testing.T) {
	p := newPKI(t)
	a, b, c := p.newNode(t, "node-a"), p.newNode(t, "node-b"), p.newNode(t, "node-c")
	ms := newMembers()
	ms.set(a.id, a.addr)
	ms.set(c.id, c.addr)
	ms.set(b.id, c.addr) // wrong
	rec := newRecorder()
	c.open(t, ms, rec, nil)
	ta := a.open(t, ms, nil, nil)
	r, _ := ta.StartRun(RunKey{Dataset: "orders", Txn: 3}, CompressNone, nil)
	r.Send(b.id, testBatch(0, 0, 1))
	eventually(t, 10*time.Second, "the sender refuses the receiver", func() bool {
		w := r.Waiting()
		return len(w) == 1 && w[0].Node == b.id && strings.Contains(w[0].Err, "node-b")
	})
	if w := r.Waiting(); !strings.Contains(w[0].Err, "certificate is valid for node-c") {
		t.Errorf("dial error %q", w[0].Err)
	}
	if len(rec.batches()) != 0 {
		t.Fatal("node-c applied a batch meant for node-b")
	}
	r.End(false)
}

// TestOpen_CertificateMustNameTheNode: a node whose certificate names
// another id does not start, and says so.
func TestOpen_CertificateMustNameTheNode(t *testing.T) {
	p := newPKI(t)
	n := p.newNode(t, "node-a")
	cfg := DefaultConfig()
	cfg.NodeID = "node-b"
	cfg.Listen = "127.0.0.1:0"
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = n.caFile, n.certFile, n.keyFile
	cfg.Dir = t.TempDir()
	cfg.Members = newMembers()
	_, err := Open(cfg)
	if err == nil || !strings.Contains(err.Error(), `names DNS names node-a, not this node's id "node-b"`) {
		t.Fatalf("Open: %v", err)
	}
	other := newPKI(t)
	cfg.NodeID = "node-a"
	cfg.CAFile = other.caFile
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "does not verify against the CA") {
		t.Fatalf("Open with another CA: %v", err)
	}
}

// TestNewNodeCert_RefusesANonDNSName: an id that cannot stand in a SAN.
func TestNewNodeCert_RefusesANonDNSName(t *testing.T) {
	p := newPKI(t)
	for _, id := range []string{"", "Node", "node_a", "-a", strings.Repeat("a", 64)} {
		if _, _, err := NewNodeCert(p.caCert, p.caKey, id, time.Hour); err == nil {
			t.Errorf("NewNodeCert(%q) succeeded", id)
		}
	}
	nc, _, _ := NewNodeCert(p.caCert, p.caKey, "node-a", time.Hour)
	if _, _, err := NewNodeCert(nc, p.caKey, "node-b", time.Hour); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Errorf("signing with a node certificate: %v", err)
	}
}

// TestTransport_MemberWithoutAddress: a member this node knows with no
// transfer address (no xfer tag heard: a member known from the node list
// only, which gossip has not reached, or one without a listener) is
// unreachable, and the backlog's error says both, not only the config.
func TestTransport_MemberWithoutAddress(t *testing.T) {
	p := newPKI(t)
	a := p.newNode(t, "node-a")
	ms := newMembers()
	ms.set(a.id, a.addr)
	ms.set("node-b", "")
	ta := a.open(t, ms, nil, nil)
	r, _ := ta.StartRun(RunKey{Dataset: "orders", Txn: 3}, CompressNone, nil)
	defer r.End(false)
	r.Send("node-b", testBatch(0, 0, 1))
	eventually(t, 10*time.Second, "node-b unreachable", func() bool { return !backlogOf(ta, "node-b").DownSince.IsZero() })
	if e := backlogOf(ta, "node-b").LastError; !strings.Contains(e, "not heard from") || !strings.Contains(e, "cluster.transfer.listen") {
		t.Errorf("the error of a member without a transfer address: %q", e)
	}
}

// TestNewServerCert_HostNames: a host that is neither an IP address nor
// a DNS name a client could reach is refused saying why, a mistyped
// address among them ("999.1.1.1" was written as a DNS name that no
// client reaching an address accepts); host names, wildcards and
// addresses are taken.
func TestNewServerCert_HostNames(t *testing.T) {
	caCert, caKey, err := NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"localhost", "snap-1.example.com", "*.example.com", "my_host.internal", "10.0.0.5", "::1", strings.Repeat("a", 63) + ".example"} {
		if _, _, err := NewServerCert(caCert, caKey, []string{h}, time.Hour); err != nil {
			t.Errorf("%q: %v", h, err)
		}
	}
	for _, h := range []string{"", "a..b", "999.1.1.1", "10.0.0", "-a.com", "a-.com", "*", "a.*.com", "http://x", "a b", strings.Repeat("a", 64) + ".example", strings.Repeat("abc.", 64) + "com"} {
		_, _, err := NewServerCert(caCert, caKey, []string{"localhost", h}, time.Hour)
		if err == nil || !strings.Contains(err.Error(), "is neither a DNS name nor an IP address: ") {
			t.Errorf("%q: %v", h, err)
		}
	}
}
