package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/pebble"
)

// Stack is the opened storage, dataset and adapter layers: what serve
// runs, and what a client command opens on a data directory.
type Stack struct {
	Store    store.Store
	DB       *snapshot.DB
	Adapters *adapters.Service
}

// openStore opens the configured backend.
func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger, reg prometheus.Registerer) (store.Store, error) {
	switch cfg.Storage.Backend {
	case "pebble":
		if err := os.MkdirAll(cfg.Data, 0o700); err != nil {
			return nil, fmt.Errorf("creating data dir: %w", err)
		}
		st, err := pebble.Open(cfg.Data, pebble.Options{
			MemTableSize: cfg.Storage.Pebble.MemTableSize,
			CacheSize:    cfg.Storage.Pebble.CacheSize,
			Logger:       log,
			Registerer:   reg,
		})
		if err != nil && DirLocked(err) {
			// Pebble's lock file: another process has the directory open.
			return nil, fmt.Errorf("the data directory %s is in use by another process, a snapstore server most likely (%w)", cfg.Data, err)
		}
		if err != nil {
			return nil, fmt.Errorf("opening data dir %s: %w", cfg.Data, err)
		}
		return st, nil
	case "hbase":
		return openHBase(ctx, cfg, log, reg)
	}
	return nil, fmt.Errorf("storage.backend %q is not known", cfg.Storage.Backend)
}

// OpenStack opens store, datasets and adapters. schedule starts the cron
// scheduler (serve only). A definition of the file that adapters refuses
// is an error that matches adapters.ErrBadOption.
func OpenStack(ctx context.Context, cfg *config.Config, log *slog.Logger, reg prometheus.Registerer, schedule bool) (*Stack, error) {
	return openStackIn(ctx, cfg, log, reg, schedule, nil, nil)
}

// openStackIn is openStack for a member of a cluster: join, when not nil,
// is called once the datasets are open (a node joins once its storage
// answers) and returns the cluster the adapters place runs over and, on a
// node with a transfer listener, its partitioned runs. observer, when not
// nil, is told of every run that ends (adapters.Options.Observer).
func openStackIn(ctx context.Context, cfg *config.Config, log *slog.Logger, reg prometheus.Registerer, schedule bool,
	join func(context.Context, *snapshot.DB) (adapters.Cluster, adapters.Partitioner, error), observer adapters.RunObserver) (*Stack, error) {
	st, err := openStore(ctx, cfg, log, reg)
	if err != nil {
		return nil, err
	}
	db, err := snapshot.Open(ctx, st, snapshot.Options{Logger: log, Registerer: reg, Partitions: cfg.Snapshot.Partitions})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("opening datasets: %w", err), st.Close())
	}
	var cl adapters.Cluster
	var parts adapters.Partitioner
	if join != nil {
		if cl, parts, err = join(ctx, db); err != nil {
			return nil, errors.Join(err, db.Close(), st.Close())
		}
	}
	svc, err := adapters.New(ctx, db, adapters.Options{
		Cluster:     cl,
		Partitioner: parts,
		Logger:      log,
		Registerer:  reg,
		Connections: cfg.Connections,
		Adapters:    cfg.Adapters,
		SecretRefs:  cfg.SecretRefLimits(),
		FileOptions: cfg.FileOptionLimits(),
		SecretKeys:  cfg.SecretKeys(),
		Observer:    observer,
		// A read-only reader of a shared HBase table never starts runs:
		// the writer process does (snapshot.Options ReadOnly).
		Schedule: schedule && !db.ReadOnly(),
	})
	if err != nil {
		// Config problems are found before opening storage
		// (config.Config.Validate); one found here is still a config error.
		return nil, errors.Join(fmt.Errorf("starting adapters: %w", configOptionError(err)), db.Close(), st.Close())
	}
	return &Stack{Store: st, DB: db, Adapters: svc}, nil
}

// Close stops the adapters (aborting running runs) within ctx, then closes
// datasets and store.
func (s *Stack) Close(ctx context.Context) error {
	return errors.Join(s.Adapters.Close(ctx), s.DB.Close(), s.Store.Close())
}

// configOptionError marks an *adapters.OptionError that adapters.New
// reported for a file definition (its Key is already prefixed, e.g.
// "connections[0].options.port") as a configuration error.
func configOptionError(err error) error {
	var oe *adapters.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	return fmt.Errorf("config: %w", err)
}

// DirLocked reports whether err is Pebble's refusal of a data directory
// another process holds open (its lock file).
func DirLocked(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) || strings.Contains(err.Error(), "lock held")
}

// cacheOf is st's block cache in the process, if it has one
// (store.CacheReserver: store/pebble), else nil.
func cacheOf(st store.Store) store.CacheReserver {
	c, _ := st.(store.CacheReserver)
	return c
}
