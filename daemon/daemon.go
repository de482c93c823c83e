// Package daemon is a snapstore server process put together from its
// configuration: storage, datasets and adapters (Stack), the cluster
// membership, placement, transfer and partitioned runs of a member, the
// run notifications, the HTTP API and the periodic GC. A Daemon is
// opened, run until its context ends, and closed, as serf's command/agent
// is created, started and shut down; the serve command only parses flags
// and calls it.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/cluster/placement"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/notify"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/server/console"
	"github.com/snapstore/snapstore/snapshot"
)

// Options are what a Daemon is opened with.
type Options struct {
	// Config is the validated configuration (config.LoadServe).
	Config *config.Config
	// Tokens are the resolved bearer tokens of the HTTP API.
	Tokens []server.Token
	// Logger receives the process's logs.
	Logger *slog.Logger
	// BuildVersion is reported in the start log line, the server's build
	// info and this node's cluster tags.
	BuildVersion string
}

// Daemon is one server process: what Open opened, served by Run.
type Daemon struct {
	opts Options
	cfg  *config.Config
	log  *slog.Logger
	reg  *prometheus.Registry
	ln   net.Listener
	stk  *Stack
	srv  *server.Server
	// notifier sends the run notifications; nil when the configuration
	// has no webhook.
	notifier *notify.Notifier

	// certs are the served certificates (nil: plain HTTP), watched until
	// stopTLS; apiTLS is the client side of TLS for calls to the other
	// nodes' APIs (hand-offs).
	certs   *server.CertReloader
	apiTLS  *tls.Config
	stopTLS context.CancelFunc

	// A cluster member's parts (nil on a node that runs alone): set by
	// join once the storage is open.
	mem   *cluster.Membership
	place *placement.Placement
	xfer  *transfer.Transport
	parts *partitioned
	// placing is set once the placement started.
	placing bool

	// ran is set by Run, which then closes everything itself.
	ran bool
}

// Open binds the listen address, opens storage, datasets and adapters,
// joins the cluster when the configuration makes this node a member, and
// builds the HTTP API; nothing is served until Run. A problem of the
// configuration found only here (the stored partition count, the API's and
// the transfer's certificates, an advertised address) is a
// *config.KeyError; a definition adapters refuses matches
// adapters.ErrBadOption.
func Open(ctx context.Context, opts Options) (_ *Daemon, err error) {
	d := &Daemon{opts: opts, cfg: opts.Config, log: opts.Logger, reg: prometheus.NewRegistry(), stopTLS: func() {}}
	d.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if d.ln, err = net.Listen("tcp", d.cfg.Listen); err != nil {
		return nil, fmt.Errorf("listening on %s (from %s): %w", d.cfg.Listen, d.cfg.KeySource("listen"), err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Close())
		}
	}()
	if err := d.openTLS(); err != nil {
		return nil, err
	}
	var join func(context.Context, *snapshot.DB) (adapters.Cluster, adapters.Partitioner, error)
	if d.cfg.Clustered() {
		join = d.join
	}
	// The notifier observes the runs from the start (run_on_start ones
	// too) and sends once Start gives it the store.
	if d.notifier, err = newNotifier(d.cfg, opts.BuildVersion, d.log, d.reg); err != nil {
		return nil, err
	}
	var observer adapters.RunObserver
	if d.notifier != nil {
		observer = d.notifier
	}
	setMemoryLimit(d.cfg, d.log)
	logMallocArenas(d.log)
	if d.stk, err = openStackIn(ctx, d.cfg, d.log, d.reg, true, join, observer); err != nil {
		return nil, err
	}
	var view server.Cluster
	var xferView server.Transfer
	var partsView server.PartitionTable
	if d.xfer != nil {
		xferView = transferView{d.xfer}
	}
	if d.parts != nil {
		partsView = partitionsView{d.parts.table}
	}
	if d.mem != nil {
		if err := d.place.Start(d.stk.Adapters); err != nil {
			return nil, err
		}
		d.placing = true
		view = clusterView{m: d.mem, p: d.place, svc: d.stk.Adapters}
	}
	if d.notifier != nil {
		d.startNotifier()
	}
	d.srv, err = server.New(server.Options{
		DB:           d.stk.DB,
		Adapters:     d.stk.Adapters,
		Tokens:       opts.Tokens,
		Logger:       d.log,
		Registerer:   d.reg,
		Gatherer:     d.reg,
		BuildVersion: opts.BuildVersion,
		Cluster:      view,
		Transfer:     xferView,
		Partitions:   partsView,
		Audit:        d.cfg.Audit.Options(d.cfg.AuditOut, d.log),
		Notifier:     d.notifier,
		SessionIdle:  d.cfg.Auth.SessionIdleTimeout,
		Console:      console.New,
		Cache:        cacheOf(d.stk.Store),
		ParquetCache: d.cfg.ParquetCache.Options(d.cfg.Data),
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// newNotifier returns the notifier of cfg, or nil when it has no webhook.
func newNotifier(cfg *config.Config, version string, log *slog.Logger, reg prometheus.Registerer) (*notify.Notifier, error) {
	o := cfg.NotifyOptions(log, reg)
	if len(o.Webhooks) == 0 {
		return nil, nil
	}
	o.Version = version
	return notify.New(o)
}

// startNotifier starts the notifier over the open store and adapters. On
// a cluster member its stale loop looks at the adapters whose ticks this
// node fires, so that one node sends a stale event (notify.N2).
func (d *Daemon) startNotifier() {
	node, owns := "", func(string) bool { return true }
	if d.place != nil {
		node = d.place.Self()
		owns = func(name string) bool { o, ok := d.place.Owner(name); return ok && o == node }
	}
	d.notifier.Start(d.stk.DB, d.stk.Adapters, node, owns)
}

// join makes this node a member once its datasets are open (a node joins
// once its storage answers), before its adapters start, which place runs
// over the cluster. The transfer listener opens before the membership, so
// that the xfer tag carries the bound address. It returns the cluster the
// adapters place runs over and, on a node with a transfer listener, its
// partitioned runs.
func (d *Daemon) join(ctx context.Context, db *snapshot.DB) (adapters.Cluster, adapters.Partitioner, error) {
	members := &transferMembers{}
	var err error
	switch {
	case d.cfg.Cluster.Transfer.Listen != "" && db.ReadOnly():
		// It could write no partition: it owns none (no xfer tag).
		d.log.Warn("a read-only node opens no transfer listener and owns no partition of partitioned runs", "listen", d.cfg.Cluster.Transfer.Listen)
	case d.cfg.Cluster.Transfer.Listen != "":
		if d.parts, err = openPartitioned(ctx, d.cfg, db, d.log, d.reg); err != nil {
			return nil, nil, err
		}
	}
	if d.xfer, err = openTransfer(d.cfg, members, d.parts, d.log, d.reg); err != nil {
		return nil, nil, err
	}
	xferAddr := ""
	if d.xfer != nil {
		xferAddr = d.xfer.Addr()
	}
	if d.mem, err = openCluster(ctx, d.cfg, d.opts.BuildVersion, d.ln.Addr().String(), xferAddr, d.apiTLS, d.log, d.reg); err != nil {
		return nil, nil, err
	}
	members.m.Store(d.mem)
	d.place = placement.New(d.mem, placement.NewNodeList(db.Records()))
	if d.parts == nil {
		return d.place, nil, nil
	}
	d.parts.runs.SetTransport(d.xfer)
	d.parts.runs.SetDeparted(d.place.Departed)
	d.place.KeepPartitions(d.parts.table)
	return d.place, d.parts.runs, nil
}

// Addr is the bound listen address.
func (d *Daemon) Addr() string { return d.ln.Addr().String() }

// Run serves the HTTP API (HTTPS with tls.cert_file), runs the GC every
// gc_interval and, on a cluster member, declares the node active and
// starts its share of the adapters; until ctx ends or the HTTP server
// fails. Then it shuts down within shutdown_timeout: /readyz turns 503,
// the node leaves the cluster, the scheduler stops and running runs are
// aborted (not committed), HTTP requests drain, the store closes. A
// watchdog ends the process (exit code 1) when the shutdown hangs past its
// bound.
func (d *Daemon) Run(ctx context.Context) error {
	d.ran = true
	hs := &http.Server{
		Handler:           server.WithBodyDeadline(d.srv.Handler(), server.DefaultBodyReadTimeout),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	if d.certs != nil {
		hs.TLSConfig = d.certs.Config()
		go func() { errc <- hs.ServeTLS(d.ln, "", "") }()
	} else {
		go func() { errc <- hs.Serve(d.ln) }()
	}
	gcCtx, stopGC := context.WithCancel(ctx)
	gcDone := make(chan struct{})
	go func() { defer close(gcDone); runGC(gcCtx, d.srv, d.stk.DB.ReadOnly(), d.cfg.GCInterval, d.log) }()
	d.start(ctx)
	var serveErr error
	select {
	case serveErr = <-errc:
		d.log.Error("http server stopped", "err", serveErr)
	case <-ctx.Done():
		d.log.Info("shutting down", "timeout", d.cfg.ShutdownTimeout)
	}
	d.srv.SetShuttingDown()
	stopGC()
	sctx, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownTimeout)
	defer cancel()
	if d.mem != nil {
		// Leave first, so that the others see this node left at once
		// rather than failed after cluster.confirm_failure (cluster.K4).
		if err := d.mem.Leave(sctx); err != nil {
			d.log.Warn("leaving the cluster", "err", err)
		}
		d.place.Close()
	}
	// A watchdog: whatever hangs, the process ends shortly after the bound.
	watchdog := time.AfterFunc(d.cfg.ShutdownTimeout+5*time.Second, func() {
		d.log.Error("shutdown exceeded its bound; exiting", "timeout", d.cfg.ShutdownTimeout)
		os.Exit(1)
	})
	defer watchdog.Stop()
	// Stop the scheduler and abort running runs first, so requests waiting
	// on a run (?wait=true) end, then drain HTTP.
	svcErr := d.stk.Adapters.Close(sctx)
	if d.xfer != nil {
		// After the runs: nothing sends any more.
		if err := d.xfer.Close(); err != nil {
			d.log.Warn("stopping the transfer listener", "err", err)
		}
	}
	if d.parts != nil {
		d.parts.runs.Close()
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
	if d.notifier != nil {
		// After the runs, whose events are queued by now; before the
		// store, which holds the delivery log.
		if err := d.notifier.Close(sctx); err != nil {
			d.log.Warn("stopping notifications", "err", err)
		}
	}
	closeErr := errors.Join(d.stk.DB.Close(), d.stk.Store.Close())
	if d.mem != nil {
		d.mem.Close() // it left above; what remains is serf's shutdown
	}
	d.stopTLS()
	err := errors.Join(serveErr, svcErr, httpErr, closeErr)
	if err != nil {
		d.log.Error("shutdown", "err", err)
		return err
	}
	d.log.Info("stopped cleanly")
	return nil
}

// connectionsInForce counts the data connections the server has: those
// of the config file and those made through the API, but an API
// definition that one of the config file hides (status shadowed).
func (d *Daemon) connectionsInForce() int {
	n := 0
	for _, c := range d.stk.Adapters.ListConnections() {
		if c.Status != "shadowed" {
			n++
		}
	}
	return n
}

// adaptersInForce counts the adapters as connectionsInForce counts the
// connections.
func (d *Daemon) adaptersInForce() int {
	n := 0
	for _, a := range d.stk.Adapters.ListAdapters() {
		if a.Status != "shadowed" {
			n++
		}
	}
	return n
}

// start declares a cluster member active and starts its adapters that run
// on start, then logs that the process serves.
func (d *Daemon) start(ctx context.Context) {
	cfg := d.cfg
	attrs := []any{"listen", d.Addr(), "data", cfg.Data, "storage", cfg.Storage.Backend,
		"auth", len(d.opts.Tokens) > 0, "tls", d.certs != nil, "gc_interval", cfg.GCInterval, "connections", d.connectionsInForce(), "adapters", d.adaptersInForce(), "version", d.opts.BuildVersion}
	if d.mem != nil {
		// Serving: the other members may count on this node now, and it
		// on its share of the adapters.
		if err := d.mem.SetState(cluster.Active); err != nil {
			d.log.Error("declaring this node active", "err", err)
		}
		d.stk.Adapters.StartOnStart(ctx)
		attrs = append(attrs, "node", d.mem.ID(), "gossip", d.mem.Addr())
		if d.xfer != nil {
			attrs = append(attrs, "transfer", d.xfer.Addr())
		}
	}
	d.log.Info("snapstore serving", attrs...)
	if cfg.TLS.PlaintextBehindProxy {
		d.log.Warn("serving plain HTTP: tls.plaintext_behind_proxy says a TLS-terminating proxy is in front", "listen", d.Addr())
	}
}

// openTLS loads the certificates of tls.* (none: plain HTTP), polls
// their files and reloads them on SIGHUP until stopTLS, and keeps the
// client side of TLS for calls to the other nodes' APIs, which trust
// tls.ca_file, cluster.transfer.ca_file and tls.client_ca_file.
func (d *Daemon) openTLS() error {
	if !d.cfg.TLS.Enabled() {
		return nil
	}
	certs, err := server.OpenTLS(d.cfg.TLS.Options(d.log, d.reg))
	if err != nil {
		return &config.KeyError{Key: "tls.cert_file, key_file", Err: err}
	}
	apiTLS, err := certs.ClientConfig(d.cfg.TLS.CAFile, d.cfg.Cluster.Transfer.CAFile, d.cfg.TLS.ClientCAFile)
	if err != nil {
		return &config.KeyError{Key: "tls.ca_file, cluster.transfer.ca_file, tls.client_ca_file", Err: err}
	}
	d.certs, d.apiTLS = certs, apiTLS
	ctx, stop := context.WithCancel(context.Background())
	d.stopTLS = stop
	go certs.Run(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_ = certs.Reload() // logs what it did
			}
		}
	}()
	return nil
}

// Close releases what Open opened when Run was not called (Run closes
// everything itself): the placement, the stack and the notifier, the
// transfer listener, the membership, the certificate watch and the
// listener.
func (d *Daemon) Close() error {
	if d.ran {
		return nil
	}
	d.ran = true
	d.stopTLS()
	var errs []error
	if d.placing {
		d.place.Close()
	}
	if d.stk != nil {
		// The notifier closes after the runs and before the store, which
		// holds the delivery log.
		errs = append(errs, d.stk.Adapters.Close(context.Background()))
		if d.notifier != nil {
			errs = append(errs, d.notifier.Close(context.Background()))
		}
		errs = append(errs, d.stk.DB.Close(), d.stk.Store.Close())
	}
	if d.xfer != nil {
		errs = append(errs, d.xfer.Close())
	}
	if d.parts != nil {
		d.parts.runs.Close()
	}
	if d.mem != nil {
		errs = append(errs, d.mem.Close())
	}
	if err := d.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
