package transfer

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// These tests run real transports over TCP on 127.0.0.1 with real
// certificates made by cert.go. One thing is not real: the member list is
// a table the test edits (members) where serving nodes adapt package
// cluster's serf membership, which cluster's own tests exercise.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// members is the member list of a test: node id -> transfer address.
type members struct {
	mu sync.Mutex
	m  map[string]string
}

func newMembers() *members { return &members{m: map[string]string{}} }

func (ms *members) Lookup(id string) (string, bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	a, ok := ms.m[id]
	return a, ok
}

func (ms *members) set(id, addr string) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.m[id] = addr
}

// pki is a test CA in a directory, and the certificates it made.
type pki struct {
	dir           string
	caCert, caKey []byte
	caFile        string
}

func newPKI(t testing.TB) *pki {
	t.Helper()
	dir := t.TempDir()
	c, k, err := NewCA("test cluster CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{dir: dir, caCert: c, caKey: k, caFile: filepath.Join(dir, "ca.crt")}
	if err := os.WriteFile(p.caFile, c, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// node writes a certificate naming id and returns its files.
func (p *pki) node(t testing.TB, id string) (certFile, keyFile string) {
	t.Helper()
	c, k, err := NewNodeCert(p.caCert, p.caKey, id, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(p.dir, id+".crt"), filepath.Join(p.dir, id+".key")
	if err := os.WriteFile(certFile, c, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, k, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// logSink keeps a node's log lines and copies them to the test log.
type logSink struct {
	t     testing.TB
	mu    sync.Mutex
	lines []string
}

func (s *logSink) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	s.mu.Lock()
	s.lines = append(s.lines, line)
	s.mu.Unlock()
	s.t.Log(line)
	return len(p), nil
}

// has reports whether a line holds every one of parts.
func (s *logSink) has(parts ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lines {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// testNode is a node's identity in a test: its id, certificate and
// transfer address.
type testNode struct {
	id                string
	certFile, keyFile string
	caFile            string
	addr              string
	dir               string
	log               *logSink
}

func (p *pki) newNode(t testing.TB, id string) *testNode {
	c, k := p.node(t, id)
	return &testNode{id: id, certFile: c, keyFile: k, caFile: p.caFile, addr: freeAddr(t), dir: t.TempDir(), log: &logSink{t: t}}
}

// newNodes returns nodes of one CA named ids, and a member list that has
// them all.
func newNodes(t testing.TB, ids ...string) ([]*testNode, *members) {
	t.Helper()
	p := newPKI(t)
	ms := newMembers()
	var ns []*testNode
	for _, id := range ids {
		n := p.newNode(t, id)
		ms.set(n.id, n.addr)
		ns = append(ns, n)
	}
	return ns, ms
}

// givenAddrs are the addresses freeAddr returned in this process.
var givenAddrs = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// freeAddr returns a loopback address with a port free now, never one it
// returned before: the kernel hands a port just closed out again, so two
// nodes of one test, each given an address before either listens, could
// otherwise be given the same.
func freeAddr(t testing.TB) string {
	t.Helper()
	givenAddrs.Lock()
	defer givenAddrs.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !givenAddrs.m[addr] {
			givenAddrs.m[addr] = true
			return addr
		}
	}
	t.Fatal("no loopback port not given out before")
	return ""
}

// open starts n's transport with handler h; edit adjusts the
// configuration. It is closed when the test ends.
func (n *testNode) open(t testing.TB, ms Members, h Handler, edit func(*Config)) *Transport {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NodeID = n.id
	cfg.Incarnation = fmt.Sprintf("%s-%d", n.id, time.Now().UnixNano())
	cfg.Listen = n.addr
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = n.caFile, n.certFile, n.keyFile
	cfg.Dir = filepath.Join(n.dir, "transfer")
	cfg.Members = ms
	cfg.Handler = h
	cfg.RetryMin, cfg.RetryMax = 20*time.Millisecond, 200*time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(n.log, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test_node", n.id)
	if edit != nil {
		edit(&cfg)
	}
	tr, err := Open(cfg)
	if err != nil {
		t.Fatalf("opening the transport of %s: %v", n.id, err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// applied is one batch a recorder applied.
type applied struct {
	from, origin string
	stream       Stream
	seq          uint64
	end          bool
	keys         []string
	values       [][]string
}

// recorder is a Handler that records what it applies and answers an END
// with the report "rows=<count>"; refuse, when set, decides otherwise.
type recorder struct {
	mu      sync.Mutex
	got     []applied
	done    []RunKey
	decide  func(b *Batch) (Outcome, bool)
	applied chan struct{}
}

func newRecorder() *recorder { return &recorder{applied: make(chan struct{}, 1)} }

func (r *recorder) Apply(_ context.Context, from string, b *Batch) Outcome {
	if r.decide != nil {
		if o, ok := r.decide(b); ok {
			return o
		}
	}
	a := applied{from: from, origin: b.Origin, stream: b.Stream, seq: b.Seq, end: b.End}
	for _, row := range b.Rows {
		a.keys = append(a.keys, string(row.Key))
		var vs []string
		for _, v := range row.Values {
			vs = append(vs, string(v))
		}
		a.values = append(a.values, vs)
	}
	r.mu.Lock()
	r.got = append(r.got, a)
	r.mu.Unlock()
	select {
	case r.applied <- struct{}{}:
	default:
	}
	if b.End {
		return Applied(fmt.Appendf(nil, "rows=%d", b.Total))
	}
	return Applied(nil)
}

func (r *recorder) Done(origin string, run RunKey, committed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = append(r.done, run)
}

func (r *recorder) batches() []applied {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// byStream returns the seqs applied per stream, in order.
func (r *recorder) byStream() map[Stream][]uint64 {
	out := map[Stream][]uint64{}
	for _, a := range r.batches() {
		out[a.stream] = append(out[a.stream], a.seq)
	}
	return out
}

// events records a run's events.
type events struct {
	mu      sync.Mutex
	acked   map[Stream][]uint64
	reports map[Stream]string
	refused []string
}

func newEvents() *events { return &events{acked: map[Stream][]uint64{}, reports: map[Stream]string{}} }

func (e *events) Acked(to string, s Stream, seq uint64, report []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.acked[s] = append(e.acked[s], seq)
	if report != nil {
		e.reports[s] = string(report)
	}
}

func (e *events) Refused(to string, s Stream, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refused = append(e.refused, fmt.Sprintf("%s %v: %s", to, s, reason))
}

func (e *events) reportCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.reports)
}

// testBatch returns batch i of a stream: rows rows of three columns, keys
// and values derived from i so that a receiver can check them.
func testBatch(part, i, rows int) *Batch {
	b := &Batch{Stream: Stream{Partition: part}, Columns: []string{"id", "name", "city"}, Epoch: 7}
	for r := range rows {
		k := fmt.Sprintf("k%04d-%06d-%03d", part, i, r)
		b.Rows = append(b.Rows, Row{Key: []byte(k), Values: [][]byte{
			[]byte(k), []byte("customer name " + k), bytes.Repeat([]byte("Lisbon "), 3),
		}})
	}
	return b
}

// eventually polls f until it holds or within passes.
func eventually(t *testing.T, within time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// backlogOf returns the backlog of tr for node id.
func backlogOf(tr *Transport, id string) NodeBacklog {
	for _, n := range tr.Backlog().Nodes {
		if n.Node == id {
			return n
		}
	}
	return NodeBacklog{Node: id}
}
