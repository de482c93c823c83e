package server

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSession_Checks pins the session format's checks: expiry, the idle
// deadline, the signing token, and a token gone from the configuration.
func TestSession_Checks(t *testing.T) {
	ts, err := newTokenSet([]Token{{Name: "a", Token: "token-a-123", Role: RoleAdmin}, {Name: "b", Token: "token-b-456", Role: RoleReader}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	s := ts.newSession(0, now.Add(time.Hour), now.Add(30*time.Minute))
	if tok, key, ok := ts.checkSession(s, now); !ok || tok.Name != "a" || tok.Role != RoleAdmin || key == nil {
		t.Fatalf("fresh session: %+v %v", tok, ok)
	}
	if _, _, ok := ts.checkSession(s, now.Add(30*time.Minute)); ok {
		t.Error("an idle session is accepted")
	}
	ss, _ := parseSession(s)
	slid := withIdle(ts.sessionKeys[0], ss.login, now.Add(time.Hour))
	if _, _, ok := ts.checkSession(slid, now.Add(59*time.Minute)); !ok {
		t.Error("a slid session is refused before its expiry")
	}
	if _, _, ok := ts.checkSession(slid, now.Add(time.Hour)); ok {
		t.Error("an expired session is accepted")
	}
	parts := strings.Split(s, ".")
	parts[2] = itoa(now.Add(48 * time.Hour).Unix())
	if _, _, ok := ts.checkSession(strings.Join(parts, "."), now); ok {
		t.Error("a session with a moved expiry is accepted")
	}
	parts = strings.Split(s, ".")
	parts[4] = itoa(now.Add(48 * time.Hour).Unix())
	if _, _, ok := ts.checkSession(strings.Join(parts, "."), now.Add(time.Minute)); ok {
		t.Error("a session with a moved idle deadline is accepted")
	}
	if _, _, ok := ts.checkSession(withIdle(ts.sessionKeys[1], ss.login, now.Add(time.Hour)), now); ok {
		t.Error("a session whose idle deadline another token signed is accepted")
	}
	rotated, _ := newTokenSet([]Token{{Name: "a", Token: "token-a-NEW", Role: RoleAdmin}})
	if _, _, ok := rotated.checkSession(s, now); ok {
		t.Error("a session of a rotated token is accepted")
	}
	for _, bad := range []string{"", "v1", "v1.a.b.c", ss.login, "v2." + strings.Join(strings.Split(s, ".")[1:], ".")} {
		if _, _, ok := ts.checkSession(bad, now); ok {
			t.Errorf("session %q accepted", bad)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
