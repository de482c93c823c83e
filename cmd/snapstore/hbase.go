package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/hbase"
)

// openHBase opens the HBase backend through its Thrift2 gateway, creating
// the namespace and table when absent.
func openHBase(ctx context.Context, cfg *Config, log *slog.Logger, reg prometheus.Registerer) (store.Store, error) {
	h := cfg.Storage.HBase
	st, err := hbase.Open(ctx, hbase.Options{
		Addr:        h.Thrift,
		Namespace:   h.Namespace,
		Table:       h.Table,
		PoolSize:    h.PoolSize,
		DialTimeout: h.DialTimeout,
		CallTimeout: h.CallTimeout,
		Logger:      log,
		Registerer:  reg,
	})
	if err != nil {
		return nil, fmt.Errorf("opening HBase at %s (storage.hbase): %w", h.Thrift, err)
	}
	return st, nil
}
