package daemon

import (
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/server"
	"log/slog"
	"sync/atomic"
	"time"
)

// openTransfer starts this node's transport when cluster.transfer.listen
// is set (nil otherwise), parts applying the batches it receives. It
// opens before the membership, whose xfer tag
// must carry the bound address; members answers nothing until the
// membership is set in it.
func openTransfer(cfg *config.Config, members *transferMembers, parts *partitioned, log *slog.Logger, reg prometheus.Registerer) (*transfer.Transport, error) {
	if cfg.Cluster.Transfer.Listen == "" || parts == nil {
		return nil, nil
	}
	id, _, err := cluster.LoadNodeID(cfg.Data)
	if err != nil {
		return nil, err
	}
	tc := cfg.TransportConfig(id, parts.incarnation, members, log, reg)
	tc.Handler = parts.runs
	t, err := transfer.Open(tc)
	if errors.Is(err, transfer.ErrCredentials) {
		return nil, &config.KeyError{Key: "cluster.transfer.ca_file, cert_file, key_file", Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("starting the transfer listener (cluster.transfer.listen %s): %w", cfg.Cluster.Transfer.Listen, err)
	}
	return t, nil
}

// transferMembers is the membership as the transport sees it (X1 of
// cluster/transfer): a member that has not left, and its xfer tag.
type transferMembers struct {
	m atomic.Pointer[cluster.Membership]
}

func (tm *transferMembers) Lookup(id string) (string, bool) {
	m := tm.m.Load()
	if m == nil {
		return "", false
	}
	for _, n := range m.Nodes() {
		if n.ID == id {
			return n.Tags.Transfer, n.State != cluster.Left
		}
	}
	return "", false
}

// transferView is the transport as the server sees it (server.Transfer).
type transferView struct{ t *transfer.Transport }

func (v transferView) Backlog() server.TransferBacklog {
	b := v.t.Backlog()
	out := server.TransferBacklog{MemoryBytes: b.MemoryBytes, Nodes: make([]server.NodeBacklog, 0, len(b.Nodes))}
	for _, n := range b.Nodes {
		nb := server.NodeBacklog{
			Node: n.Node, Rows: n.Rows, Bytes: n.Bytes, Batches: n.Batches, SpilledBytes: n.SpilledBytes,
			Connections: n.Connections, LastError: n.LastError, Datasets: make([]server.DatasetBacklog, 0, len(n.Datasets)),
		}
		if !n.DownSince.IsZero() {
			t := n.DownSince.UTC().Truncate(time.Millisecond)
			nb.DownSince = &t
		}
		for _, d := range n.Datasets {
			nb.Datasets = append(nb.Datasets, server.DatasetBacklog{Dataset: d.Dataset, Rows: d.Rows, Bytes: d.Bytes, Batches: d.Batches})
		}
		out.Nodes = append(out.Nodes, nb)
	}
	return out
}
