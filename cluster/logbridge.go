package cluster

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"
)

// logBridge turns the lines serf and memberlist write to their *log.Logger
// ("[WARN] memberlist: Was able to connect to ...") into slog records at
// the matching level: [TRACE] and [DEBUG] -> debug, [INFO] -> info,
// [WARN] -> warn, [ERR] and [ERROR] -> error; a line without a level is
// info. The library ("serf", "memberlist") goes into the attribute lib.
//
// serf's warning that a leave was not acknowledged is info when alone is
// set: a node leaving with no other member alive has nobody to
// acknowledge it, and the timeout is the expected end of its leave.
type logBridge struct {
	log   *slog.Logger
	alone *atomic.Bool // nil: never
}

// newLogBridge returns the *log.Logger to give serf and memberlist; alone
// (may be nil) says the node leaves as the last member alive.
func newLogBridge(l *slog.Logger, alone *atomic.Bool) *log.Logger {
	return log.New(logBridge{log: l, alone: alone}, "", 0)
}

// leaveTimeout is the start of serf's warning that no member acknowledged
// a leave.
const leaveTimeout = "timeout waiting for leave broadcast"

var levels = map[string]slog.Level{
	"TRACE": slog.LevelDebug,
	"DEBUG": slog.LevelDebug,
	"INFO":  slog.LevelInfo,
	"WARN":  slog.LevelWarn,
	"ERR":   slog.LevelError,
	"ERROR": slog.LevelError,
}

// Write logs each line of p; log.Logger calls it once per line.
func (b logBridge) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		b.line(string(line))
	}
	return len(p), nil
}

func (b logBridge) line(s string) {
	lvl := slog.LevelInfo
	if rest, ok := strings.CutPrefix(s, "["); ok {
		if name, msg, ok := strings.Cut(rest, "] "); ok {
			if l, known := levels[name]; known {
				lvl, s = l, msg
			}
		}
	}
	var extra []any
	if lvl == slog.LevelWarn && b.alone != nil && b.alone.Load() && strings.Contains(s, leaveTimeout) {
		lvl, extra = slog.LevelInfo, []any{"why", "no other member alive to acknowledge the leave"}
	}
	if !b.log.Enabled(context.Background(), lvl) {
		return
	}
	lib := ""
	if name, msg, ok := strings.Cut(s, ": "); ok && (name == "serf" || name == "memberlist") {
		lib, s = name, msg
	}
	if lib != "" {
		extra = append(extra, "lib", lib)
	}
	b.log.Log(context.Background(), lvl, s, extra...)
}
