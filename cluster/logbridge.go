package cluster

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"strings"
)

// logBridge turns the lines serf and memberlist write to their *log.Logger
// ("[WARN] memberlist: Was able to connect to ...") into slog records at
// the matching level: [TRACE] and [DEBUG] -> debug, [INFO] -> info,
// [WARN] -> warn, [ERR] and [ERROR] -> error; a line without a level is
// info. The library ("serf", "memberlist") goes into the attribute lib.
type logBridge struct {
	log *slog.Logger
}

// newLogBridge returns the *log.Logger to give serf and memberlist.
func newLogBridge(l *slog.Logger) *log.Logger {
	return log.New(logBridge{log: l}, "", 0)
}

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
	if !b.log.Enabled(context.Background(), lvl) {
		return
	}
	lib := ""
	if name, msg, ok := strings.Cut(s, ": "); ok && (name == "serf" || name == "memberlist") {
		lib, s = name, msg
	}
	if lib != "" {
		b.log.Log(context.Background(), lvl, s, "lib", lib)
		return
	}
	b.log.Log(context.Background(), lvl, s)
}
