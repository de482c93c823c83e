package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/snapshot"
)

// partitioned is a node's partitioned runs (docs/cluster.md): the
// partition table, and the coordinator and owner of runs, the transport's
// Handler.
type partitioned struct {
	table       *cluster.Partitions
	runs        *cluster.Partitioned
	incarnation string
}

// openPartitioned reads the partition table (a stored table of another
// count than cluster.partitions refuses the start, exit code 2, naming
// both) and makes the node's partitioned runs.
func openPartitioned(ctx context.Context, cfg *Config, db *snapshot.DB, log *slog.Logger, reg prometheus.Registerer) (*partitioned, error) {
	id, _, err := cluster.LoadNodeID(cfg.Data)
	if err != nil {
		return nil, err
	}
	table, err := cluster.OpenPartitions(ctx, db, cfg.Cluster.Partitions)
	if errors.Is(err, cluster.ErrPartitionCount) {
		return nil, &exitError{code: 2, err: fmt.Errorf("config key cluster.partitions: %w", err)}
	}
	if err != nil {
		return nil, err
	}
	var b [8]byte
	rand.Read(b[:])
	inc := hex.EncodeToString(b[:])
	runs, err := cluster.NewPartitioned(cluster.PartitionedConfig{Self: id, Incarnation: inc, DB: db, Table: table,
		OwnerWait: cfg.Cluster.Transfer.OwnerWait, Logger: log, Registerer: reg})
	if err != nil {
		return nil, err
	}
	return &partitioned{table: table, runs: runs, incarnation: inc}, nil
}
