package server

import (
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoginThrottle: an address fails loginBurst times, then waits
// loginRefill for each further attempt; a success costs nothing; logins
// under way hold their attempt, so concurrent guesses cannot overdraw;
// an IPv6 /64 is one address; a full bucket is forgotten at the sweep.
func TestLoginThrottle(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	th := newLoginThrottle()
	try := func(addr string, now time.Time, failed bool) time.Duration {
		t.Helper()
		wait := th.begin(addr, now)
		if wait == 0 {
			th.end(addr, failed, now)
		}
		return wait
	}
	for i := range 3 {
		if w := try("192.0.2.1", t0, false); w != 0 {
			t.Fatalf("success %d waits %v", i, w)
		}
	}
	for i := range loginBurst {
		if w := try("192.0.2.1", t0, true); w != 0 {
			t.Fatalf("failure %d of the burst waits %v", i, w)
		}
	}
	if w := try("192.0.2.1", t0, false); w != loginRefill {
		t.Fatalf("after the burst: wait %v, want %v (a right token waits too)", w, loginRefill)
	}
	if w := try("192.0.2.1", t0.Add(loginRefill/2), true); (w - loginRefill/2).Abs() > time.Millisecond {
		t.Fatalf("half a refill later: wait %v, want %v", w, loginRefill/2)
	}
	if w := try("192.0.2.2", t0, true); w != 0 {
		t.Fatalf("another address waits %v", w)
	}
	t1 := t0.Add(loginRefill + time.Millisecond)
	if w := try("192.0.2.1", t1, true); w != 0 {
		t.Fatalf("a refill later: wait %v", w)
	}
	if w := try("192.0.2.1", t1, true); (w - loginRefill).Abs() > time.Millisecond {
		t.Fatalf("after the refilled attempt failed: wait %v", w)
	}
	if retryAfter(loginRefill) != 6 || retryAfter(time.Millisecond) != 1 || retryAfter(5500*time.Millisecond) != 6 {
		t.Errorf("retryAfter: %d %d %d", retryAfter(loginRefill), retryAfter(time.Millisecond), retryAfter(5500*time.Millisecond))
	}

	// Concurrent logins: each holds an attempt until it ends.
	var begun atomic.Int32
	var wg sync.WaitGroup
	for range 3 * loginBurst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if th.begin("198.51.100.9", t0) == 0 {
				begun.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := begun.Load(); n != loginBurst {
		t.Fatalf("%d concurrent logins begun, want %d", n, loginBurst)
	}
	for range loginBurst {
		th.end("198.51.100.9", true, t0)
	}
	if w := th.begin("198.51.100.9", t0); w != loginRefill {
		t.Fatalf("after %d concurrent failures: wait %v", loginBurst, w)
	}

	// IPv6: one /64 is one address; IPv4-mapped is IPv4.
	for i := range loginBurst {
		try("2001:db8:1:2::"+strconv.Itoa(i+1), t0, true)
	}
	if w := try("2001:db8:1:2:ffff::1", t0, false); w == 0 {
		t.Error("another address of the same /64 is not throttled")
	}
	if w := try("2001:db8:1:3::1", t0, false); w != 0 {
		t.Errorf("another /64 waits %v", w)
	}
	if w := try("::ffff:192.0.2.1", t1, false); w == 0 {
		t.Error("the IPv4-mapped form of a throttled address is not throttled")
	}
	if k := loginKey("not an address"); k != (netip.Addr{}) {
		t.Errorf("loginKey of a non-address: %v", k)
	}

	// The sweep forgets full buckets only.
	later := t0.Add(loginBurst*loginRefill + loginSweepEvery)
	th.begin("203.0.113.1", later) // sweeps; this one is under way
	th.mu.Lock()
	n := len(th.addrs)
	th.mu.Unlock()
	if n != 1 {
		t.Errorf("%d addresses followed after the sweep, want 1 (the login under way)", n)
	}
	th.end("203.0.113.1", false, later)
}
