package server

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// Transfer is the transfer layer of partitioned runs, which the backlog
// route answers from: package cluster/transfer's Transport, adapted by
// package daemon. Backlog must not block on I/O: it reads the queues'
// counters.
type Transfer interface {
	Backlog() TransferBacklog
}

// TransferBacklog is the wire form of GET /v1/cluster/backlog: what waits
// on the answering node to be sent to other nodes and applied there.
type TransferBacklog struct {
	// Enabled is false on a node with no transfer listener
	// (cluster.transfer.listen unset): it sends nothing.
	Enabled bool `json:"enabled"`
	// MemoryBytes is the bytes of batches the queues hold in memory.
	MemoryBytes int64 `json:"memory_bytes"`
	// Nodes lists the destination nodes, by id.
	Nodes []NodeBacklog `json:"nodes"`
}

// NodeBacklog is what waits for one destination node: rows and bytes (as
// sent, compressed) of batches queued, spilled to disk, or sent and not yet
// acknowledged.
type NodeBacklog struct {
	Node         string `json:"node"`
	Rows         int64  `json:"rows"`
	Bytes        int64  `json:"bytes"`
	Batches      int64  `json:"batches"`
	SpilledBytes int64  `json:"spilled_bytes"`
	// Connections is the count of open connections to the node.
	Connections int `json:"connections"`
	// DownSince is when the node stopped answering, while it does not;
	// LastError is why.
	DownSince *time.Time       `json:"down_since,omitempty"`
	LastError string           `json:"last_error,omitempty"`
	Datasets  []DatasetBacklog `json:"datasets"`
}

// DatasetBacklog is one dataset's share of a node's backlog.
type DatasetBacklog struct {
	Dataset string `json:"dataset"`
	Rows    int64  `json:"rows"`
	Bytes   int64  `json:"bytes"`
	Batches int64  `json:"batches"`
}

// backlog returns the answering node's backlog: empty and not enabled
// without a transfer listener.
func (s *Server) Backlog() TransferBacklog {
	if s.transfer == nil {
		return TransferBacklog{Nodes: []NodeBacklog{}}
	}
	b := s.transfer.Backlog()
	b.Enabled = true
	if b.Nodes == nil {
		b.Nodes = []NodeBacklog{}
	}
	for i := range b.Nodes {
		if b.Nodes[i].Datasets == nil {
			b.Nodes[i].Datasets = []DatasetBacklog{}
		}
	}
	return b
}

// clusterBacklog answers GET /v1/cluster/backlog.
func (s *Server) clusterBacklog(c echo.Context) error {
	if s.cluster == nil {
		return ErrNotClustered
	}
	return c.JSON(http.StatusOK, s.Backlog())
}
