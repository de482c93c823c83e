package cluster

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestCredential checks K8 between two real members: a request signed by
// a verifies on b with a's id; a changed body, path or method, a replay, a
// time off by more than the skew, a key b does not hold and a node b does
// not know are refused; after a rotation (the new key installed and made
// primary on every member) a's new signatures verify, and a keyless
// cluster has no credential.
func TestCredential(t *testing.T) {
	key, _ := ParseKey(GenerateKey())
	var skew atomic.Int64 // a's clock ahead of the real one, in ns
	a := openNode(t, "a", t.TempDir(), func(c *Config) {
		c.GossipKey = key
		c.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	b := openNode(t, "b", t.TempDir(), func(c *Config) { c.GossipKey = key; c.Join = []string{a.Addr()} })
	eventually(t, 20*time.Second, "a and b see each other", func() bool { return len(view(a)) == 2 && len(view(b)) == 2 })

	sign := func(m *Membership, method, path, body string) *http.Request {
		t.Helper()
		r, _ := http.NewRequest(method, "http://x"+path, strings.NewReader(body))
		if err := m.SignRequest(r, []byte(body)); err != nil {
			t.Fatal(err)
		}
		return r
	}
	body := `{"adapter":"x"}`
	r := sign(a, "POST", "/v1/cluster/runs", body)
	if id, err := b.VerifyRequest(r, []byte(body)); err != nil || id != a.ID() {
		t.Fatalf("a's request on b: %q %v", id, err)
	}
	if _, err := b.VerifyRequest(r, []byte(body)); !errors.Is(err, ErrBadCredential) || !strings.Contains(err.Error(), "used twice") {
		t.Errorf("a replay: %v", err)
	}
	for name, tc := range map[string]struct {
		r    *http.Request
		body string
	}{
		"another body": {sign(a, "POST", "/v1/cluster/runs", body), `{"adapter":"y"}`},
		"another path": {func() *http.Request {
			r := sign(a, "POST", "/v1/cluster/runs", body)
			r.URL.Path = "/v1/cluster/nodes/b"
			return r
		}(), body},
		"another method": {func() *http.Request { r := sign(a, "POST", "/v1/cluster/runs", body); r.Method = "DELETE"; return r }(), body},
	} {
		if _, err := b.VerifyRequest(tc.r, []byte(tc.body)); !errors.Is(err, ErrBadCredential) {
			t.Errorf("%s: %v", name, err)
		}
	}
	r, _ = http.NewRequest("POST", "http://x/v1/cluster/runs", nil)
	if _, err := b.VerifyRequest(r, nil); !errors.Is(err, ErrNoCredential) {
		t.Errorf("no credential: %v", err)
	}
	// a's clock three minutes ahead.
	skew.Store(int64(3 * time.Minute))
	if _, err := b.VerifyRequest(sign(a, "POST", "/p", ""), nil); !errors.Is(err, ErrBadCredential) || !strings.Contains(err.Error(), "clock") {
		t.Errorf("skewed clock: %v", err)
	}
	skew.Store(0)
	// A node of another cluster, with another key: refused.
	other, _ := ParseKey(GenerateKey())
	x := openNode(t, "x", t.TempDir(), func(c *Config) { c.GossipKey = other })
	if _, err := b.VerifyRequest(sign(x, "POST", "/p", ""), nil); !errors.Is(err, ErrBadCredential) {
		t.Errorf("another cluster's node: %v", err)
	}
	// A node that holds the key but is not a member b knows.
	y := openNode(t, "y", t.TempDir(), func(c *Config) { c.GossipKey = key })
	if _, err := b.VerifyRequest(sign(y, "POST", "/p", ""), nil); !errors.Is(err, ErrBadCredential) || !strings.Contains(err.Error(), "not a member") {
		t.Errorf("a stranger with the key: %v", err)
	}

	// Rotation: install on all, then use on all; a signs with the new key.
	k2 := GenerateKey()
	if _, err := a.InstallKey(k2); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UseKey(k2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.VerifyRequest(sign(a, "POST", "/p", "z"), []byte("z")); err != nil {
		t.Errorf("after the rotation: %v", err)
	}

	keyless := openNode(t, "k", t.TempDir(), nil)
	if err := keyless.SignRequest(r, nil); !errors.Is(err, ErrNoGossipKey) {
		t.Errorf("keyless sign: %v", err)
	}
	if _, err := keyless.VerifyRequest(r, nil); !errors.Is(err, ErrNoGossipKey) {
		t.Errorf("keyless verify: %v", err)
	}
	// No keyring to list or change: said so, not a failure of each node.
	if _, err := keyless.ListKeys(); !errors.Is(err, ErrNotEncrypted) {
		t.Errorf("keyless list: %v", err)
	}
	if _, err := keyless.InstallKey(k2); !errors.Is(err, ErrNotEncrypted) {
		t.Errorf("keyless install: %v", err)
	}
	// Removing the primary key fails on every node: each one's answer.
	rep, err := a.RemoveKey(k2)
	if !errors.Is(err, ErrKeyringFailed) || rep.Errors != 2 || len(rep.Messages) != 2 || !strings.Contains(err.Error(), "primary") {
		t.Errorf("removing the primary key: %+v, %v", rep, err)
	}
}
