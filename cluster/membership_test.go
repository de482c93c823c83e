package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// These tests run real serf instances on 127.0.0.1 with free ports, in one
// process (tests/e2e runs them as separate processes of the binary).

// testLogger sends a node's logs (its serf's and memberlist's included) to
// the test log at debug.
func testLogger(t *testing.T, name string) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test_node", name)
}

type testWriter struct {
	t *testing.T
	// count, when set, counts the lines that hold match.
	count *atomic.Int64
	match string
}

func (w testWriter) Write(p []byte) (int, error) {
	if w.count != nil && strings.Contains(string(p), w.match) {
		w.count.Add(1)
	}
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// openNode opens a member on dir with the loopback preset; edit adjusts
// its configuration. It is closed when the test ends (if still open).
func openNode(t *testing.T, name, dir string, edit func(*Config)) *Membership {
	t.Helper()
	cfg := LoopbackConfig()
	cfg.DataDir = dir
	cfg.API = "127.0.0.1:1"
	cfg.Version = "test"
	cfg.Logger = testLogger(t, name)
	if edit != nil {
		edit(&cfg)
	}
	m, err := Open(context.Background(), cfg)
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
func view(m *Membership) map[string]State {
	out := map[string]State{}
	for _, n := range m.Nodes() {
		out[n.ID] = n.State
	}
	return out
}

func node(m *Membership, id string) (Node, bool) {
	for _, n := range m.Nodes() {
		if n.ID == id {
			return n, true
		}
	}
	return Node{}, false
}

// allSee reports whether every one of ms sees exactly ids, each in state.
func allSee(ms []*Membership, ids []string, state State) bool {
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

func keyringKeys(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, keyringFile))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestMembership_JoinRotateRestart starts three encrypted members: they
// join and agree on the member list, each declared active (K1, K3). The
// gossip key is rotated through serf's keyring (K2): every keyring file
// ends with the new key alone. A member stopped without a leave is seen
// failing, still active, and failed only after the confirmation delay
// (K3); restarted on its data dir with no join address and the old key,
// it rejoins from its snapshot with the rotated keyring and a new
// incarnation. A member that leaves is left at once (K4).
func TestMembership_JoinRotateRestart(t *testing.T) {
	key1, _ := ParseKey(GenerateKey())
	key2 := GenerateKey()
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	reg := prometheus.NewRegistry()
	a := openNode(t, "a", dirs[0], func(c *Config) { c.GossipKey = key1; c.Registerer = reg })
	b := openNode(t, "b", dirs[1], func(c *Config) { c.GossipKey = key1; c.Join = []string{a.Addr()}; c.ConfirmFailure = 3 * time.Second })
	c := openNode(t, "c", dirs[2], func(c *Config) { c.GossipKey = key1; c.Join = []string{b.Addr()} })
	ms := []*Membership{a, b, c}
	ids := []string{a.ID(), b.ID(), c.ID()}
	slices.Sort(ids)
	eventually(t, 20*time.Second, "three members, joining", func() bool { return allSee(ms, ids, Joining) })
	for _, m := range ms {
		if err := m.SetState(Active); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "three members, active", func() bool { return allSee(ms, ids, Active) })
	if n := testutil.CollectAndCount(reg, "snapstore_cluster_members"); n != len(States) {
		t.Errorf("%d members series, want %d", n, len(States))
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP snapstore_cluster_members Cluster members this node sees, by state (itself included).
# TYPE snapstore_cluster_members gauge
snapstore_cluster_members{state="active"} 3
snapstore_cluster_members{state="draining"} 0
snapstore_cluster_members{state="failed"} 0
snapstore_cluster_members{state="joining"} 0
snapstore_cluster_members{state="left"} 0
`), "snapstore_cluster_members"); err != nil {
		t.Error(err)
	}
	self, _ := node(a, a.ID())
	if !self.Self || self.Tags.API != "127.0.0.1:1" || self.Tags.Weight != DefaultWeight || self.Tags.Version != "test" || self.Tags.Incarnation != a.Incarnation() {
		t.Errorf("a sees itself as %+v", self)
	}

	// Rotation: install, use, remove, from any member.
	old := base64.StdEncoding.EncodeToString(key1)
	if _, err := b.InstallKey(key2); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UseKey(key2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RemoveKey(old); err != nil {
		t.Fatal(err)
	}
	rep, err := a.ListKeys()
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := ParseKey(key2)
	fp := Fingerprint(k2)
	if rep.Responses != 3 || len(rep.Keys) != 1 || rep.Keys[fp] != 3 || rep.Primary[fp] != 3 {
		t.Errorf("after the rotation: %+v (want key %s on 3 nodes)", rep, fp)
	}
	for i, dir := range dirs {
		if got := keyringKeys(t, dir); len(got) != 1 || got[0] != key2 {
			t.Errorf("node %d keyring file: %d keys, want the new key alone", i, len(got))
		}
	}
	if _, err := a.InstallKey("bm90IGEga2V5"); err == nil || strings.Contains(err.Error(), "bm90IGEga2V5") {
		t.Errorf("a short key: %v", err)
	}

	// c stops without a leave, as a crash does.
	cid, cinc, caddr := c.ID(), c.Incarnation(), c.Addr()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var failing Node
	eventually(t, 30*time.Second, "b sees c failing", func() bool {
		failing, _ = node(b, cid)
		return !failing.FailingSince.IsZero()
	})
	if failing.State != Active {
		t.Errorf("c is %s as soon as serf reports it failed, want active until the delay passes", failing.State)
	}
	var dead Node
	eventually(t, 30*time.Second, "b sees c failed", func() bool {
		dead, _ = node(b, cid)
		return dead.State == Failed
	})
	if d := dead.Since.Sub(dead.FailingSince); d < 3*time.Second {
		t.Errorf("c failed %s after serf reported it, before the 3s confirmation delay", d)
	}
	t.Logf("c: serf reported it failed at %s, failed at %s (+%s)", dead.FailingSince.Format(time.StampMilli), dead.Since.Format(time.StampMilli), dead.Since.Sub(dead.FailingSince))

	// c again, on its data dir and address, no join address, the old
	// key: its snapshot and keyring file bring it back.
	c = openNode(t, "c2", dirs[2], func(c *Config) { c.GossipKey = key1; c.Bind = caddr })
	if c.ID() != cid || c.Incarnation() == cinc {
		t.Errorf("restarted c: id %s incarnation %s (was %s %s)", c.ID(), c.Incarnation(), cid, cinc)
	}
	c.SetState(Active)
	ms[2] = c
	eventually(t, 30*time.Second, "c back from its snapshot", func() bool { return allSee(ms, ids, Active) })
	if n, _ := node(a, cid); n.Tags.Incarnation == cinc {
		t.Errorf("a still sees c's old incarnation")
	}

	// a leaves gracefully: left, with no confirmation delay.
	if err := a.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "b sees a left", func() bool { n, _ := node(b, a.ID()); return n.State == Left })
	if n, _ := node(b, a.ID()); !n.FailingSince.IsZero() {
		t.Errorf("a left but was failing: %+v", n)
	}
}

// TestMembership_NoKeyCannotJoin checks that a member without the gossip
// key cannot join an encrypted cluster (K2), and that an open keyring
// file wins over the key it was seeded with.
func TestMembership_NoKeyCannotJoin(t *testing.T) {
	key, _ := ParseKey(GenerateKey())
	a := openNode(t, "a", t.TempDir(), func(c *Config) { c.GossipKey = key })
	x := openNode(t, "x", t.TempDir(), func(c *Config) { c.Join = []string{a.Addr()}; c.JoinRetry = time.Hour })
	if _, err := x.serf.Join([]string{a.Addr()}, true); err == nil {
		t.Error("a member without the key joined")
	}
	other, _ := ParseKey(GenerateKey())
	y := openNode(t, "y", t.TempDir(), func(c *Config) { c.GossipKey = other })
	if _, err := y.serf.Join([]string{a.Addr()}, true); err == nil {
		t.Error("a member with another key joined")
	}
	// The join's warning says why, naming y's primary key by fingerprint.
	y.joinAddrs = []string{a.Addr()}
	err := y.join()
	if hint := joinHint(err, y.keyring); err == nil || !strings.Contains(hint.Value.String(), Fingerprint(other)) || strings.Contains(hint.Value.String(), Fingerprint(key)) {
		t.Errorf("the hint of a join refused for the key: %q (err %v)", hint.Value.String(), err)
	}
	if hint := joinHint(errors.New("dial tcp: connection refused"), y.keyring); hint.Key != "" {
		t.Errorf("a join that failed otherwise got a hint: %v", hint)
	}
	if v := view(a); len(v) != 1 {
		t.Errorf("a sees %v", v)
	}
	if v := view(x); len(v) != 1 {
		t.Errorf("x sees %v", v)
	}
}

func TestConfig_Validate(t *testing.T) {
	base := func() Config { c := LoopbackConfig(); c.DataDir = "d"; return c }
	if c := base(); c.Validate() != nil {
		t.Fatalf("loopback preset: %v", c.Validate())
	}
	for _, tc := range []struct {
		edit func(*Config)
		key  string
	}{
		{func(c *Config) { c.Bind = "0.0.0.0:7946" }, "gossip_key"},
		{func(c *Config) { c.Advertise = "10.0.0.1:7946" }, "gossip_key"},
		{func(c *Config) { c.Bind = ":7946" }, "gossip_key"},
		{func(c *Config) { c.GossipKey = []byte("short") }, "gossip_key"},
		{func(c *Config) { c.Bind = "nohost" }, "bind"},
		{func(c *Config) { c.Join = []string{"a:b"} }, "join[0]"},
		{func(c *Config) { c.Weight = 0 }, "weight"},
		{func(c *Config) { c.Zone = strings.Repeat("z", 65) }, "zone"},
		{func(c *Config) { c.ConfirmFailure = 0 }, "confirm_failure"},
		{func(c *Config) { c.ReconnectTimeout = time.Second }, "reconnect_timeout"},
		{func(c *Config) { c.DataDir = "" }, "data"},
	} {
		c := base()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "cluster: "+tc.key+": ") {
			t.Errorf("want an error on %s, got %v", tc.key, err)
		}
	}
	c := base()
	c.Bind = "0.0.0.0:7946"
	c.GossipKey = make([]byte, 32)
	if err := c.Validate(); err != nil {
		t.Errorf("off loopback with a key: %v", err)
	}
	if n := tagBytesBound(worstTags()); n > MaxTagBytes {
		t.Errorf("worst tags %d bytes > %d", n, MaxTagBytes)
	} else {
		t.Logf("largest tags: at most %d of serf's %d bytes", n, MaxTagBytes)
	}
}

func TestLoadNodeID(t *testing.T) {
	dir := t.TempDir()
	id, created, err := LoadNodeID(dir)
	if err != nil || !created || !validID.MatchString(id) || len(id) != 26 {
		t.Fatalf("%q %v %v", id, created, err)
	}
	again, created, err := LoadNodeID(dir)
	if err != nil || created || again != id {
		t.Fatalf("second load %q %v %v", again, created, err)
	}
	os.WriteFile(filepath.Join(dir, NodeIDFile), []byte("Not An Id\n"), 0o644)
	if _, _, err := LoadNodeID(dir); err == nil {
		t.Fatal("a bad id file was accepted")
	}
	os.WriteFile(filepath.Join(dir, NodeIDFile), []byte("node-a\n"), 0o644)
	if id, _, err := LoadNodeID(dir); err != nil || id != "node-a" {
		t.Fatalf("an operator's id: %q %v", id, err)
	}
}

// TestMembership_ForgetRejoin: a member that left and was forgotten
// (serf's force-leave with prune) and starts again on its data dir within
// serf's memory of the forget is a member that joins: every member sees
// it in the state it declares, and keeps seeing it so (K4, K15). serf
// takes it back as leaving (the forget's leave intent) and turns it alive
// on its join intent without an event; the event loop follows serf's
// member list.
func TestMembership_ForgetRejoin(t *testing.T) {
	for _, variant := range []string{"left", "failed"} {
		t.Run(variant, func(t *testing.T) { testForgetRejoin(t, variant == "left") })
	}
}

func testForgetRejoin(t *testing.T, leave bool) {
	var reconciled atomic.Int64
	a := openNode(t, "a", t.TempDir(), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(testWriter{t: t, count: &reconciled, match: "serf's member list differs from its events"},
			&slog.HandlerOptions{Level: slog.LevelDebug})).With("test_node", "a")
	})
	b := openNode(t, "b", t.TempDir(), func(c *Config) { c.Join = []string{a.Addr()} })
	cdir := t.TempDir()
	c := openNode(t, "c", cdir, func(cf *Config) { cf.Join = []string{a.Addr()} })
	ms := []*Membership{a, b, c}
	ids := []string{a.ID(), b.ID(), c.ID()}
	for _, m := range ms {
		if err := m.SetState(Active); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "three active", func() bool { return allSee(ms, ids, Active) })
	gone := Failed
	if leave {
		gone = Left
		if err := c.Leave(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	eventually(t, 30*time.Second, "c "+gone.String()+" on a", func() bool { return view(a)[c.ID()] == gone })
	if err := a.Forget(t.Context(), c.ID()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "c gone from a and b", func() bool { return allSee(ms[:2], ids[:2], Active) })
	// serf lists the forgotten c as left for its tombstone timeout; the
	// event loop, which reconciles with that list every Tick (100 ms),
	// says so once at most, not every Tick.
	reconciled.Store(0)
	time.Sleep(2 * time.Second)
	if n := reconciled.Load(); n > 1 {
		t.Errorf("a logged %d times in 2 s that serf's list differs from its events while c stays forgotten", n)
	}
	c = openNode(t, "c again", cdir, func(cf *Config) { cf.Join = []string{a.Addr()} })
	if err := c.SetState(Active); err != nil {
		t.Fatal(err)
	}
	ms[2] = c
	eventually(t, 20*time.Second, "c back, active, on every member", func() bool { return allSee(ms, ids, Active) })
	// Longer than serf's prune delay (BroadcastTimeout and
	// LeavePropagateDelay, 6 s).
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if !allSee(ms, ids, Active) {
			t.Fatalf("the views parted: a %v, b %v, c %v", view(a), view(b), view(c))
		}
	}
}
