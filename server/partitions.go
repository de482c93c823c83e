package server

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// PartitionTable is the partition table of partitioned runs as the node
// read it last (package cluster's Partitions, adapted by package daemon).
// Partitions must not block on I/O: it returns the node's cached copy.
type PartitionTable interface {
	Partitions() ClusterPartitions
}

// ClusterPartitions is the wire form of GET /v1/cluster/partitions: which
// node owns each partition of partitioned runs.
type ClusterPartitions struct {
	// Enabled is false on a node without a transfer listener: it keeps no
	// partition table.
	Enabled bool `json:"enabled"`
	// Epoch counts the table's changes; 0 before its first write.
	Epoch int64 `json:"epoch"`
	// Count is the count of partitions (cluster.partitions).
	Count int `json:"count"`
	// ChangedAt and ChangedBy say when and by which node (the keeper) the
	// table last changed.
	ChangedAt *time.Time `json:"changed_at,omitempty"`
	ChangedBy string     `json:"changed_by,omitempty"`
	// Partitions lists each partition's owner, by partition.
	Partitions []PartitionOwner `json:"partitions"`
	// Nodes counts the partitions of each owner, by node id.
	Nodes []NodePartitions `json:"nodes"`
}

// PartitionOwner is one partition's owner ("" for none yet) and the epoch
// at which it got it.
type PartitionOwner struct {
	Partition  int    `json:"partition"`
	Node       string `json:"node"`
	SinceEpoch int64  `json:"since_epoch"`
}

// NodePartitions is the count of partitions one node owns.
type NodePartitions struct {
	Node       string `json:"node"`
	Partitions int    `json:"partitions"`
}

// clusterPartitions answers GET /v1/cluster/partitions.
func (s *Server) clusterPartitions(c echo.Context) error {
	if s.cluster == nil {
		return ErrNotClustered
	}
	if s.partitions == nil {
		return c.JSON(http.StatusOK, ClusterPartitions{Partitions: []PartitionOwner{}, Nodes: []NodePartitions{}})
	}
	p := s.partitions.Partitions()
	p.Enabled = true
	if p.Partitions == nil {
		p.Partitions = []PartitionOwner{}
	}
	if p.Nodes == nil {
		p.Nodes = []NodePartitions{}
	}
	return c.JSON(http.StatusOK, p)
}
