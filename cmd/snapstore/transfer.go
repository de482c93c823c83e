package main

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/server"

	"github.com/snapstore/snapstore/cluster/partitionrun"
)

// TransferConfig is the cluster.transfer section: where this node receives
// the rows of partitioned runs and how it sends them to the other nodes
// (cluster/transfer, docs/cluster.md). With Listen empty the node has no
// transfer listener; any other key set without it is refused.
type TransferConfig struct {
	// Listen is the transfer address host:port (TCP); setting it turns
	// the transfer on.
	Listen string `yaml:"listen"`
	// Advertise is the transfer address the other nodes dial; default:
	// Listen (with the gossip host when Listen binds every interface).
	Advertise string `yaml:"advertise"`
	// CAFile, CertFile and KeyFile are the cluster CA and this node's
	// certificate (naming its node id) and key, PEM; required.
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ConnectionsPerNode is the TCP connections to each node; default 4.
	ConnectionsPerNode int `yaml:"connections_per_node"`
	// MaxWorkers bounds the batches written at once, and the batches
	// applied at once; default 8.
	MaxWorkers int `yaml:"max_workers"`
	// QueueBatches is the most batches for one node held in memory;
	// default 100.
	QueueBatches int `yaml:"queue_batches"`
	// QueueMemory bounds the bytes of batches held in memory by every
	// queue together; default 64 MiB.
	QueueMemory int64 `yaml:"queue_memory"`
	// OwnerWait is how long a partitioned run waits for the owner of a
	// partition that cannot be reached before it fails; default 10m.
	OwnerWait time.Duration `yaml:"owner_wait"`
}

// defaultTransferConfig is the section's defaults.
func defaultTransferConfig() TransferConfig {
	d := transfer.DefaultConfig()
	return TransferConfig{
		ConnectionsPerNode: d.ConnectionsPerNode,
		MaxWorkers:         d.MaxWorkers,
		QueueBatches:       d.QueueBatches,
		QueueMemory:        d.QueueMemory,
		OwnerWait:          partitionrun.DefaultOwnerWait,
	}
}

// transferDir is where the queues spill, in the data directory.
const transferDir = "cluster/transfer"

// validateTransfer checks the cluster.transfer keys: none set without
// cluster.bind or without cluster.transfer.listen; with them, the
// transfer package's own checks, each error naming its key.
func (c *Config) validateTransfer() []error {
	tc, d := c.Cluster.Transfer, defaultTransferConfig()
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, c.keyError("cluster.transfer."+key, fmt.Sprintf(format, args...)))
	}
	set := map[string]bool{
		"advertise": tc.Advertise != "", "ca_file": tc.CAFile != "", "cert_file": tc.CertFile != "", "key_file": tc.KeyFile != "",
		"connections_per_node": tc.ConnectionsPerNode != d.ConnectionsPerNode, "max_workers": tc.MaxWorkers != d.MaxWorkers,
		"queue_batches": tc.QueueBatches != d.QueueBatches, "queue_memory": tc.QueueMemory != d.QueueMemory,
		"owner_wait": tc.OwnerWait != d.OwnerWait,
	}
	if !c.clustered() {
		set["listen"] = tc.Listen != ""
		for key, s := range set {
			if s {
				bad(key, "set cluster.bind to run a cluster, or remove this key")
			}
		}
		return errs
	}
	if tc.Listen == "" {
		for key, s := range set {
			if s {
				bad(key, "set cluster.transfer.listen for this node to send and receive the rows of partitioned runs, or remove this key")
			}
		}
		return errs
	}
	if _, err := transferAddress(c.Cluster, tc.Listen); err != nil {
		bad("advertise", "%v", err)
	}
	if tc.OwnerWait <= 0 {
		bad("owner_wait", "must be positive, got %s", tc.OwnerWait)
	}
	tcfg := c.transferConfig("", "", nil, nil, nil)
	for _, err := range joined(tcfg.Validate()) {
		var ce *transfer.ConfigError
		if !errors.As(err, &ce) {
			errs = append(errs, err)
			continue
		}
		switch ce.Key {
		case "node_id", "dir", "members", "preset":
			continue // set at serve time from the data dir and the membership
		}
		bad(ce.Key, "%s", ce.Msg)
	}
	return errs
}

// transferConfig converts the section into the transfer package's
// configuration.
func (c *Config) transferConfig(id, inc string, members transfer.Members, log *slog.Logger, reg prometheus.Registerer) transfer.Config {
	tc := c.Cluster.Transfer
	cfg := transfer.DefaultConfig()
	cfg.NodeID, cfg.Incarnation = id, inc
	cfg.Listen = tc.Listen
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = tc.CAFile, tc.CertFile, tc.KeyFile
	cfg.ConnectionsPerNode = tc.ConnectionsPerNode
	cfg.MaxWorkers = tc.MaxWorkers
	cfg.QueueBatches = tc.QueueBatches
	cfg.QueueMemory = tc.QueueMemory
	cfg.Dir = filepath.Join(c.Data, transferDir)
	cfg.Members = members
	cfg.Logger = log
	cfg.Registerer = reg
	return cfg
}

// transferAddress is the transfer address this node advertises (its xfer
// tag): cluster.transfer.advertise, else listen (the bound address at
// serve time) with the gossip host when listen binds every interface.
func transferAddress(cc ClusterConfig, listen string) (string, error) {
	return advertisedAddr(cc, cc.Transfer.Advertise, "cluster.transfer.listen", listen, "transfer listener")
}

// openTransfer starts this node's transport when cluster.transfer.listen
// is set (nil otherwise), parts applying the batches it receives. It
// opens before the membership, whose xfer tag
// must carry the bound address; members answers nothing until the
// membership is set in it.
func openTransfer(cfg *Config, members *transferMembers, parts *partitioned, log *slog.Logger, reg prometheus.Registerer) (*transfer.Transport, error) {
	if cfg.Cluster.Transfer.Listen == "" || parts == nil {
		return nil, nil
	}
	id, _, err := cluster.LoadNodeID(cfg.Data)
	if err != nil {
		return nil, err
	}
	tc := cfg.transferConfig(id, parts.incarnation, members, log, reg)
	tc.Handler = parts.runs
	t, err := transfer.Open(tc)
	if errors.Is(err, transfer.ErrCredentials) {
		return nil, &exitError{code: 2, err: fmt.Errorf("config keys cluster.transfer.ca_file, cert_file, key_file: %w", err)}
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
