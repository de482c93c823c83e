package adapters

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/testenv"
)

// TestConfigCheck: a service that schedules logs, soon after it starts,
// each config adapter whose table is missing, once, naming the adapter,
// and keeps the adapter; an adapter whose table exists is not logged.
func TestConfigCheck(t *testing.T) {
	path := newSQLiteFixture(t)
	logs := &testenv.SyncBuffer{}
	ts := newStack(t, Options{
		Logger:      slog.New(slog.NewJSONHandler(io.MultiWriter(lockedWriter{}, logs), nil)),
		Schedule:    true,
		Connections: []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}},
		Adapters: []api.Adapter{
			{Name: "items", Connection: "src", Resource: "items"},
			{Name: "typo", Connection: "src", Resource: "itemz"},
		},
	})
	const msg = `"msg":"config adapter's resource cannot be read; its runs fail until it can"`
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), msg) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line %s within 30s:\n%s", msg, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.svc.stopConfigCheck()
	var lines []string
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, msg) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"adapter":"typo"`) || !strings.Contains(lines[0], `"resource":"itemz"`) || !strings.Contains(lines[0], `"level":"ERROR"`) {
		t.Errorf("log lines about missing resources: %q", lines)
	}
	if _, err := ts.svc.GetAdapter(context.Background(), "typo"); err != nil {
		t.Errorf("the adapter is gone after the check: %v", err)
	}
}
