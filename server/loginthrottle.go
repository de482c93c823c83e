package server

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failed console logins are slowed down per client address with a token
// bucket (golang.org/x/time/rate): an address may fail loginBurst times
// in a row, then once every loginRefill. A login from an address with no
// attempt left is answered 429 with Retry-After before its token is
// looked at, so that a right token is refused too while the address
// waits: a throttled guess tells nothing. A successful login costs
// nothing. The client address is the audit trail's (clientAddr: the peer,
// or X-Forwarded-For from audit.trusted_proxies only); an IPv6 address
// counts by its /64, which one host usually holds whole.

const (
	// loginBurst is how many logins an address may fail in a row.
	loginBurst = 10
	// loginRefill is how often an address gets one attempt back.
	loginRefill = 6 * time.Second
	// loginMaxAddrs bounds the addresses followed at once; beyond it a
	// login from an address not followed yet waits for a sweep to make
	// room (a second at most).
	loginMaxAddrs = 1 << 16
	// loginSweepEvery is how often addresses back to a full bucket are
	// forgotten.
	loginSweepEvery = time.Minute
)

// loginThrottle follows the failed logins of each client address.
type loginThrottle struct {
	mu     sync.Mutex
	addrs  map[netip.Addr]*loginBucket
	swept  time.Time
	burst  int
	refill time.Duration
}

// loginBucket is one address's attempts: the limiter counts failures,
// inflight the logins begun and not ended, which hold an attempt each so
// that concurrent guesses cannot overdraw the bucket.
type loginBucket struct {
	lim      *rate.Limiter
	inflight int
}

func newLoginThrottle() *loginThrottle {
	return &loginThrottle{addrs: map[netip.Addr]*loginBucket{}, burst: loginBurst, refill: loginRefill}
}

// loginKey is the bucket of a client address ("" or not an IP: one
// shared bucket).
func loginKey(addr string) netip.Addr {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return netip.Addr{}
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// begin starts a login from addr at now: 0 when it may be tried (end
// must then follow), else how long the address must wait.
func (t *loginThrottle) begin(addr string, now time.Time) time.Duration {
	k := loginKey(addr)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	b := t.addrs[k]
	if b == nil {
		if len(t.addrs) >= loginMaxAddrs {
			return time.Second
		}
		b = &loginBucket{lim: rate.NewLimiter(rate.Every(t.refill), t.burst)}
		t.addrs[k] = b
	}
	left := b.lim.TokensAt(now) - float64(b.inflight)
	if left < 1 {
		return time.Duration((1 - left) * float64(t.refill))
	}
	b.inflight++
	return 0
}

// end ends a login begun at addr; a failed one spends an attempt. It
// reports whether the address has no attempt left now.
func (t *loginThrottle) end(addr string, failed bool, now time.Time) bool {
	k := loginKey(addr)
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.addrs[k]
	if b == nil {
		return false
	}
	b.inflight--
	if !failed {
		return false
	}
	b.lim.AllowN(now, 1)
	return b.lim.TokensAt(now)-float64(b.inflight) < 1
}

// sweep forgets the addresses whose bucket is full again and that have
// no login under way, every loginSweepEvery, or sooner (at most once a
// second) when loginMaxAddrs are followed. t.mu is held.
func (t *loginThrottle) sweep(now time.Time) {
	since := now.Sub(t.swept)
	if since < loginSweepEvery && (len(t.addrs) < loginMaxAddrs || since < time.Second) {
		return
	}
	t.swept = now
	for k, b := range t.addrs {
		if b.inflight == 0 && b.lim.TokensAt(now) >= float64(t.burst) {
			delete(t.addrs, k)
		}
	}
}

// retryAfter is the Retry-After value of a wait: whole seconds, at
// least 1.
func retryAfter(wait time.Duration) int {
	s := int((wait + time.Second - 1) / time.Second)
	return max(s, 1)
}
