package daemon

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"

	"github.com/snapstore/snapstore/cluster/placement"

	"github.com/snapstore/snapstore/cluster/partitionrun"
)

// partitioned is a node's partitioned runs (docs/cluster.md): the
// partition table, and the coordinator and owner of runs, the transport's
// Handler.
type partitioned struct {
	table       *placement.Partitions
	runs        *partitionrun.Runs
	incarnation string
}

// openPartitioned reads the partition table (a stored table of another
// count than cluster.partitions refuses the start, exit code 2, naming
// both) and makes the node's partitioned runs.
func openPartitioned(ctx context.Context, cfg *config.Config, db *snapshot.DB, log *slog.Logger, reg prometheus.Registerer) (*partitioned, error) {
	id, _, err := cluster.LoadNodeID(cfg.Data)
	if err != nil {
		return nil, err
	}
	table, err := placement.OpenPartitions(ctx, db.Records(), cfg.Cluster.Partitions)
	if errors.Is(err, placement.ErrPartitionCount) {
		return nil, &config.KeyError{Key: "cluster.partitions", Err: err}
	}
	if err != nil {
		return nil, err
	}
	var b [8]byte
	rand.Read(b[:])
	inc := hex.EncodeToString(b[:])
	runs, err := partitionrun.New(partitionrun.Config{Self: id, Incarnation: inc, DB: db, Table: table,
		OwnerWait: cfg.Cluster.Transfer.OwnerWait, Logger: log, Registerer: reg})
	if err != nil {
		return nil, err
	}
	return &partitioned{table: table, runs: runs, incarnation: inc}, nil
}

// partitionsView is the partition table as the server sees it
// (server.PartitionTable): the node's cached copy.
type partitionsView struct{ t *placement.Partitions }

func (v partitionsView) Partitions() server.ClusterPartitions {
	tab := v.t.Table()
	out := server.ClusterPartitions{Epoch: tab.Epoch, Count: len(tab.Owners), ChangedBy: tab.ChangedBy}
	if !tab.ChangedAt.IsZero() {
		t := tab.ChangedAt.UTC()
		out.ChangedAt = &t
	}
	counts := map[string]int{}
	for p, o := range tab.Owners {
		out.Partitions = append(out.Partitions, server.PartitionOwner{Partition: p, Node: o, SinceEpoch: tab.Since[p]})
		counts[o]++
	}
	for _, id := range slices.Sorted(maps.Keys(counts)) {
		out.Nodes = append(out.Nodes, server.NodePartitions{Node: id, Partitions: counts[id]})
	}
	slices.SortStableFunc(out.Nodes, func(a, b server.NodePartitions) int {
		return cmp.Or(cmp.Compare(b.Partitions, a.Partitions), strings.Compare(a.Node, b.Node))
	})
	return out
}
