package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/pebble"
)

// stack is the opened storage, dataset and adapter layers.
type stack struct {
	st  store.Store
	db  *snapshot.DB
	svc *adapters.Service
}

// openStore opens the configured backend.
func openStore(ctx context.Context, cfg *Config, log *slog.Logger, reg prometheus.Registerer) (store.Store, error) {
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
		if err != nil && dirLocked(err) {
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

// openStack opens store, datasets and adapters. schedule starts the cron
// scheduler (serve only).
func openStack(ctx context.Context, cfg *Config, log *slog.Logger, reg prometheus.Registerer, schedule bool) (*stack, error) {
	return openStackIn(ctx, cfg, log, reg, schedule, nil)
}

// openStackIn is openStack for a member of a cluster: join, when not nil,
// is called once the datasets are open (a node joins once its storage
// answers) and returns the cluster the adapters place runs over and, on a
// node with a transfer listener, its partitioned runs.
func openStackIn(ctx context.Context, cfg *Config, log *slog.Logger, reg prometheus.Registerer, schedule bool,
	join func(context.Context, *snapshot.DB) (adapters.Cluster, adapters.Partitioner, error)) (*stack, error) {
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
		Connections: cfg.connectionSpecs(),
		Adapters:    cfg.adapterSpecs(),
		SecretRefs:  cfg.secretRefLimits(),
		Observer:    cfg.runObserver,
		// A read-only reader of a shared HBase table never starts runs:
		// the writer process does (snapshot.Options ReadOnly).
		Schedule: schedule && !db.ReadOnly(),
	})
	if err != nil {
		err = errors.Join(fmt.Errorf("starting adapters: %w", configOptionError(err)), db.Close(), st.Close())
		if errors.Is(err, adapters.ErrBadOption) {
			// Config problems are found before opening storage
			// (Config.Validate); one found here is still a config error.
			return nil, &exitError{code: 2, err: err}
		}
		return nil, err
	}
	return &stack{st: st, db: db, svc: svc}, nil
}

// close stops the adapters (aborting running runs) within ctx, then closes
// datasets and store.
func (s *stack) close(ctx context.Context) error {
	return errors.Join(s.svc.Close(ctx), s.db.Close(), s.st.Close())
}
