package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLogBridge checks that each of serf's and memberlist's level prefixes
// lands at its slog level, with the library as an attribute.
func TestLogBridge(t *testing.T) {
	var buf bytes.Buffer
	var alone atomic.Bool
	l := newLogBridge(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &alone)
	l.Printf("[ERR] memberlist: Failed to decrypt packet")
	l.Printf("[ERROR] memberlist: something else")
	l.Printf("[WARN] serf: Failed to re-join any previously known node")
	l.Printf("[INFO] serf: EventMemberJoin: n1 127.0.0.1")
	l.Printf("[DEBUG] memberlist: Stream connection from=127.0.0.1:1")
	l.Printf("[TRACE] serf: something fine-grained")
	l.Printf("no level at all")
	l.Printf("[WARN] serf: timeout waiting for leave broadcast: x") // others alive: a warning
	alone.Store(true)
	l.Printf("[WARN] serf: timeout waiting for leave broadcast: y") // the last member: expected
	want := []string{
		`level=ERROR msg="Failed to decrypt packet" lib=memberlist`,
		`level=ERROR msg="something else" lib=memberlist`,
		`level=WARN msg="Failed to re-join any previously known node" lib=serf`,
		`level=INFO msg="EventMemberJoin: n1 127.0.0.1" lib=serf`,
		`level=DEBUG msg="Stream connection from=127.0.0.1:1" lib=memberlist`,
		`level=DEBUG msg="something fine-grained" lib=serf`,
		`level=INFO msg="no level at all"`,
		`level=WARN msg="timeout waiting for leave broadcast: x" lib=serf`,
		`level=INFO msg="timeout waiting for leave broadcast: y" why="no other member alive to acknowledge the leave" lib=serf`,
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %s\nwant it to hold %s", i, lines[i], w)
		}
	}

	// A level the handler drops is not formatted.
	buf.Reset()
	l = newLogBridge(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})), nil)
	l.Printf("[DEBUG] memberlist: chatter")
	l.Printf("[WARN] memberlist: kept")
	if got := buf.String(); strings.Contains(got, "chatter") || !strings.Contains(got, "kept") {
		t.Errorf("at warn: %q", got)
	}
}
