package config

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/cluster/partitionrun"
	"github.com/snapstore/snapstore/cluster/transfer"
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

// defaultTransfer is the section's defaults.
func defaultTransfer() TransferConfig {
	d := transfer.DefaultConfig()
	return TransferConfig{
		ConnectionsPerNode: d.ConnectionsPerNode,
		MaxWorkers:         d.MaxWorkers,
		QueueBatches:       d.QueueBatches,
		QueueMemory:        d.QueueMemory,
		OwnerWait:          partitionrun.DefaultOwnerWait,
	}
}

// TransferDir is where the queues spill, in the data directory.
const TransferDir = "cluster/transfer"

// validateTransfer checks the cluster.transfer keys: none set without
// cluster.bind or without cluster.transfer.listen; with them, the
// transfer package's own checks, each error naming its key.
func (c *Config) validateTransfer() []error {
	tc, d := c.Cluster.Transfer, defaultTransfer()
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
	if !c.Clustered() {
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
	if _, err := TransferAddress(c.Cluster, tc.Listen); err != nil {
		bad("advertise", "%v", err)
	}
	if tc.OwnerWait <= 0 {
		bad("owner_wait", "must be positive, got %s", tc.OwnerWait)
	}
	tcfg := c.TransportConfig("", "", nil, nil, nil)
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

// TransportConfig converts the section into the transfer package's
// configuration.
func (c *Config) TransportConfig(id, inc string, members transfer.Members, log *slog.Logger, reg prometheus.Registerer) transfer.Config {
	tc := c.Cluster.Transfer
	cfg := transfer.DefaultConfig()
	cfg.NodeID, cfg.Incarnation = id, inc
	cfg.Listen = tc.Listen
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = tc.CAFile, tc.CertFile, tc.KeyFile
	cfg.ConnectionsPerNode = tc.ConnectionsPerNode
	cfg.MaxWorkers = tc.MaxWorkers
	cfg.QueueBatches = tc.QueueBatches
	cfg.QueueMemory = tc.QueueMemory
	cfg.Dir = filepath.Join(c.Data, TransferDir)
	cfg.Members = members
	cfg.Logger = log
	cfg.Registerer = reg
	return cfg
}

// TransferAddress is the transfer address this node advertises (its xfer
// tag): cluster.transfer.advertise, else listen (the bound address at
// serve time) with the gossip host when listen binds every interface.
func TransferAddress(cc ClusterConfig, listen string) (string, error) {
	return advertisedAddr(cc, cc.Transfer.Advertise, "cluster.transfer.listen", listen, "transfer listener")
}
