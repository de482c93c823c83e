package placement

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/cluster"
)

// These tests run real serf instances on 127.0.0.1 with free ports, in one
// process (tests/e2e runs them as separate processes of the binary).

// testLogger sends a node's logs (its serf's and memberlist's included) to
// the test log at debug.
func testLogger(t *testing.T, name string) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test_node", name)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// openNode opens a member on dir with the loopback preset; edit adjusts
// its configuration. It is closed when the test ends (if still open).
func openNode(t *testing.T, name, dir string, edit func(*cluster.Config)) *cluster.Membership {
	t.Helper()
	cfg := cluster.LoopbackConfig()
	cfg.DataDir = dir
	cfg.API = "127.0.0.1:1"
	cfg.Version = "test"
	cfg.Logger = testLogger(t, name)
	if edit != nil {
		edit(&cfg)
	}
	m, err := cluster.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("opening %s: %v", name, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// eventually polls f until it holds; within bounds the wait only.
func eventually(t *testing.T, within time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// view returns id -> state of m's members.
func view(m *cluster.Membership) map[string]cluster.State {
	out := map[string]cluster.State{}
	for _, n := range m.Nodes() {
		out[n.ID] = n.State
	}
	return out
}

// allSee reports whether every one of ms sees exactly ids, each in state.
func allSee(ms []*cluster.Membership, ids []string, state cluster.State) bool {
	for _, m := range ms {
		v := view(m)
		if len(v) != len(ids) {
			return false
		}
		for _, id := range ids {
			if v[id] != state {
				return false
			}
		}
	}
	return true
}

// node returns member id as m's Nodes report it.
func node(m *cluster.Membership, id string) (cluster.Node, bool) {
	for _, n := range m.Nodes() {
		if n.ID == id {
			return n, true
		}
	}
	return cluster.Node{}, false
}
