package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

const serveHelp = `Run the HTTP API (docs/api.md), the scheduler of the adapters, garbage
collection every gc_interval, and the web console at /ui/ (docs/console.md),
until SIGTERM or SIGINT. A bad configuration is refused before anything is
opened, every bad key named with its line (exit code 2). Logs go to stderr
(docs/operations.md).`

// cmdServe runs the server until SIGTERM or SIGINT. Shutdown: /readyz turns
// 503, the scheduler stops and running runs are aborted (not committed),
// HTTP requests drain, the store closes; all within shutdown_timeout, after
// which the process exits anyway (exit code 1).
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
	cfg, tokens, err := loadServeConfig(cf, os.Environ())
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	cfg.auditOut = stderr
	for _, name := range cfg.unknownEnv {
		secret := cfg.Secrets.EnvPrefix != "" && strings.HasPrefix(name, cfg.Secrets.EnvPrefix)
		if !strings.HasPrefix(name, "SNAPSTORE_TEST_") && !slices.Contains(flagEnv, name) && !secret {
			log.Warn("environment variable names no configuration key; ignored", "variable", name)
		}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return serve(ctx, cfg, tokens, log, nil)
}

// serve runs the service until ctx is done. ready, if not nil, receives the
// bound listen address once the server accepts connections (tests).
func serve(ctx context.Context, cfg *Config, tokens []server.Token, log *slog.Logger, ready chan<- string) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	defer ln.Close()
	// A cluster member joins once its storage is open, before its
	// adapters start, which place runs over the cluster (cluster.go); its
	// transfer listener opens first, so that its xfer tag carries the
	// bound address (transfer.go).
	var mem *cluster.Membership
	var place *cluster.Placement
	var xfer *transfer.Transport
	var parts *partitioned
	var join func(context.Context, *snapshot.DB) (adapters.Cluster, adapters.Partitioner, error)
	if cfg.clustered() {
		join = func(ctx context.Context, db *snapshot.DB) (adapters.Cluster, adapters.Partitioner, error) {
			members := &transferMembers{}
			var err error
			switch {
			case cfg.Cluster.Transfer.Listen != "" && db.ReadOnly():
				// It could write no partition: it owns none (no xfer tag).
				log.Warn("a read-only node opens no transfer listener and owns no partition of partitioned runs", "listen", cfg.Cluster.Transfer.Listen)
			case cfg.Cluster.Transfer.Listen != "":
				if parts, err = openPartitioned(ctx, cfg, db, log, reg); err != nil {
					return nil, nil, err
				}
			}
			if xfer, err = openTransfer(cfg, members, parts, log, reg); err != nil {
				return nil, nil, err
			}
			xferAddr := ""
			if xfer != nil {
				xferAddr = xfer.Addr()
			}
			if mem, err = openCluster(ctx, cfg, ln.Addr().String(), xferAddr, log, reg); err != nil {
				return nil, nil, err
			}
			members.m.Store(mem)
			place = cluster.NewPlacement(mem, cluster.NewNodeList(db))
			if parts == nil {
				return place, nil, nil
			}
			parts.runs.SetTransport(xfer)
			place.KeepPartitions(parts.table)
			return place, parts.runs, nil
		}
	}
	// The notifier observes the runs from the start (RunOnStart ones
	// too) and sends once the store is open.
	notifier, err := cfg.newNotifier(log, reg)
	if err != nil {
		return err
	}
	if notifier != nil {
		cfg.runObserver = notifier
	}
	stk, err := openStackIn(ctx, cfg, log, reg, true, join)
	if xfer != nil {
		defer xfer.Close()
	}
	if mem != nil {
		defer mem.Close()
	}
	if err != nil {
		return err
	}
	var view server.Cluster
	var xferView server.Transfer
	var partsView server.PartitionTable
	if xfer != nil {
		xferView = transferView{xfer}
	}
	if parts != nil {
		partsView = partitionsView{parts.table}
	}
	if mem != nil {
		if err := place.Start(stk.svc); err != nil {
			return errors.Join(err, stk.close(context.Background()))
		}
		defer place.Close()
		view = clusterView{m: mem, p: place, svc: stk.svc}
	}
	if notifier != nil {
		node, owns := "", func(string) bool { return true }
		if place != nil {
			// The stale loop looks at the adapters whose ticks this node
			// fires, so that one node sends a stale event (notify.N2).
			node = place.Self()
			owns = func(name string) bool { o, ok := place.Owner(name); return ok && o == node }
		}
		notifier.Start(stk.db, stk.svc, node, owns)
	}
	srv, err := server.New(server.Options{
		DB:           stk.db,
		Adapters:     stk.svc,
		Tokens:       tokens,
		Logger:       log,
		Registerer:   reg,
		Gatherer:     reg,
		BuildVersion: buildVersion(),
		Cluster:      view,
		Transfer:     xferView,
		Partitions:   partsView,
		Audit:        cfg.Audit.options(cfg.auditOut, log),
		Notifier:     notifier,
	})
	if err != nil {
		return errors.Join(err, stk.close(context.Background()))
	}
	hs := &http.Server{
		Handler:           server.WithBodyDeadline(srv.Handler(), server.DefaultBodyReadTimeout),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	gcCtx, stopGC := context.WithCancel(ctx)
	gcDone := make(chan struct{})
	go func() { defer close(gcDone); srv.RunGCLoop(gcCtx, cfg.GCInterval) }()
	attrs := []any{"listen", ln.Addr().String(), "data", cfg.Data, "storage", cfg.Storage.Backend,
		"auth", len(tokens) > 0, "gc_interval", cfg.GCInterval, "connections", len(cfg.Connections), "adapters", len(cfg.Adapters), "version", buildVersion()}
	if mem != nil {
		// Serving: the other members may count on this node now, and it
		// on its share of the adapters.
		if err := mem.SetState(cluster.Active); err != nil {
			log.Error("declaring this node active", "err", err)
		}
		stk.svc.StartOnStart(ctx)
		attrs = append(attrs, "node", mem.ID(), "gossip", mem.Addr())
		if xfer != nil {
			attrs = append(attrs, "transfer", xfer.Addr())
		}
	}
	log.Info("snapstore serving", attrs...)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	var serveErr error
	select {
	case serveErr = <-errc:
		log.Error("http server stopped", "err", serveErr)
	case <-ctx.Done():
		log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	}
	srv.SetShuttingDown()
	stopGC()
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if mem != nil {
		// Leave first, so that the others see this node left at once
		// rather than failed after cluster.confirm_failure (cluster.K4).
		if err := mem.Leave(sctx); err != nil {
			log.Warn("leaving the cluster", "err", err)
		}
		place.Close()
	}
	// A watchdog: whatever hangs, the process ends shortly after the bound.
	watchdog := time.AfterFunc(cfg.ShutdownTimeout+5*time.Second, func() {
		log.Error("shutdown exceeded its bound; exiting", "timeout", cfg.ShutdownTimeout)
		os.Exit(1)
	})
	defer watchdog.Stop()
	// Stop the scheduler and abort running runs first, so requests waiting
	// on a run (?wait=true) end, then drain HTTP.
	svcErr := stk.svc.Close(sctx)
	if xfer != nil {
		// After the runs: nothing sends any more.
		if err := xfer.Close(); err != nil {
			log.Warn("stopping the transfer listener", "err", err)
		}
	}
	httpErr := hs.Shutdown(sctx)
	if errors.Is(httpErr, context.DeadlineExceeded) {
		httpErr = hs.Close()
	}
	if serveErr == nil {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr = err
		}
	}
	select {
	case <-gcDone:
	case <-sctx.Done():
	}
	if notifier != nil {
		// After the runs, whose events are queued by now; before the
		// store, which holds the delivery log.
		if err := notifier.Close(sctx); err != nil {
			log.Warn("stopping notifications", "err", err)
		}
	}
	closeErr := errors.Join(stk.db.Close(), stk.st.Close())
	err = errors.Join(serveErr, svcErr, httpErr, closeErr)
	if err != nil {
		log.Error("shutdown", "err", err)
		return err
	}
	log.Info("stopped cleanly")
	return nil
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
