package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/daemon"
	"github.com/snapstore/snapstore/server"
)

const serveHelp = `Run the HTTP API (docs/api.md), the scheduler of the adapters, garbage
collection every gc_interval, and the web console at /ui/ (docs/console.md),
until SIGTERM or SIGINT. A bad configuration is refused before anything is
opened, every bad key named with its line (exit code 2). Logs go to stderr
(docs/operations.md).`

// cmdServe runs the daemon until SIGTERM or SIGINT, then shuts it down
// within shutdown_timeout (daemon.Daemon.Run), after which the process
// exits anyway (exit code 1).
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("serve", "[--config FILE] [--data DIR] [--listen ADDR] [--cpuprofile FILE]", serveHelp, flagsConfig, stdout)
	cpuprofile := c.fs.String("cpuprofile", "", "write a CPU profile of the whole process to `file` (go tool pprof) until it exits")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if *cpuprofile != "" {
		stopProfile, err := startCPUProfile(*cpuprofile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	cf := c.cf
	if len(pos) > 0 {
		return usageError("serve takes no arguments, got %q", pos)
	}
	cfg, tokens, err := config.LoadServe(cf.configFlags(), os.Environ())
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	log := cfg.NewLogger(stderr)
	cfg.AuditOut = stderr
	for _, name := range cfg.UnknownEnv() {
		secret := cfg.Secrets.EnvPrefix != "" && strings.HasPrefix(name, cfg.Secrets.EnvPrefix)
		if !strings.HasPrefix(name, "SNAPSTORE_TEST_") && !slices.Contains(flagEnv, name) && !secret {
			log.Warn("environment variable names no configuration key; ignored", "variable", name)
		}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return serve(ctx, cfg, tokens, log, nil)
}

// serve opens the daemon and runs it until ctx is done. ready, if not
// nil, receives the bound listen address once the daemon is open (tests).
func serve(ctx context.Context, cfg *config.Config, tokens []server.Token, log *slog.Logger, ready chan<- string) error {
	d, err := daemon.Open(ctx, daemon.Options{Config: cfg, Tokens: tokens, Logger: log, BuildVersion: buildVersion()})
	if err != nil {
		return configExit(err)
	}
	if ready != nil {
		ready <- d.Addr()
	}
	return d.Run(ctx)
}

// startCPUProfile profiles the process's CPU into file (runtime/pprof)
// until the returned function is called; what make bench's notes on what
// limits a figure are read from (docs/benchmarks.md).
func startCPUProfile(file string) (func(), error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
