package main

import (
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/store"
)

// openHBase opens the HBase backend. It is not built into this binary yet:
// store/hbase lands separately; until it does, backend hbase refuses to
// start naming the key.
func openHBase(cfg *Config, log *slog.Logger, reg prometheus.Registerer) (store.Store, error) {
	return nil, errors.New("config key storage.backend: hbase is not built into this binary yet (store/hbase); use pebble")
}
