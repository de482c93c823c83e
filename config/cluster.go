package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/internal/boundedread"
)

// ClusterConfig is the cluster section of the configuration: what makes
// this node a member of a cluster of nodes on one HBase table
// (docs/cluster.md). With Bind empty the node runs alone and starts no
// serf; any other key set without it is refused.
type ClusterConfig struct {
	// Bind is the gossip address host:port (TCP and UDP); setting it turns
	// the cluster on. serf's usual port is 7946.
	Bind string `yaml:"bind"`
	// Advertise is the gossip address the other nodes use; default: Bind.
	Advertise string `yaml:"advertise"`
	// AdvertiseAPI is the HTTP API address the other nodes use; default:
	// the bound listen address (with Advertise's or Bind's host when
	// listen binds every interface).
	AdvertiseAPI string `yaml:"advertise_api"`
	// Join lists gossip addresses of members to join at start; default
	// none (the first node, or a node that rejoins from its snapshot).
	Join []string `yaml:"join"`
	// GossipKeyFile is a file whose first line is the base64 gossip key
	// (`snapstore cluster keygen`); required off loopback (cluster.K2).
	GossipKeyFile string `yaml:"gossip_key_file"`
	// Weight is the node's placement weight, 1 to 10000; default 100.
	Weight int `yaml:"weight"`
	// Zone is the node's failure zone; default none.
	Zone string `yaml:"zone"`
	// ConfirmFailure is how long a member serf reports failed keeps its
	// state before it counts as failed (cluster.K3); default 30s.
	ConfirmFailure time.Duration `yaml:"confirm_failure"`
	// ReconnectTimeout is how long serf tries to reconnect to a failed
	// member before forgetting it; default 24h.
	ReconnectTimeout time.Duration `yaml:"reconnect_timeout"`
	// TombstoneTimeout is how long serf remembers a member that left;
	// default 24h.
	TombstoneTimeout time.Duration `yaml:"tombstone_timeout"`
	// Preset is memberlist's timing: default (a LAN) or loopback (nodes on
	// one machine, for tests).
	Preset string `yaml:"preset"`
	// SingleNodeWait is how long a single-node run waits for its node
	// before it fails; default 5m.
	SingleNodeWait time.Duration `yaml:"single_node_wait"`
	// HandOffTimeout bounds handing a run to another node; default 10s.
	HandOffTimeout time.Duration `yaml:"handoff_timeout"`
	// Heartbeat is how often a node rewrites its entry of the node list
	// and rereads the others'; default 10s.
	Heartbeat time.Duration `yaml:"heartbeat"`
	// DefinitionsRefresh is how often every node rereads the definitions
	// whatever the hints say; default 15s.
	DefinitionsRefresh time.Duration `yaml:"definitions_refresh"`
	// Partitions is the count of partitions of partitioned runs, the same
	// on every node; default 32, 8 to 1024.
	Partitions int `yaml:"partitions"`
	// PartitionMoves is the most partitions one change of the partition
	// table moves; default partitions/8. PartitionMoveInterval is the
	// least time between two changes; default 10s.
	PartitionMoves        int           `yaml:"partition_moves"`
	PartitionMoveInterval time.Duration `yaml:"partition_move_interval"`
	// Transfer is where this node receives the rows of partitioned runs
	// (TransferConfig).
	Transfer TransferConfig `yaml:"transfer"`
}

// defaultCluster is the cluster section's defaults.
func defaultCluster() ClusterConfig {
	d := cluster.DefaultConfig()
	return ClusterConfig{
		Weight:                d.Weight,
		ConfirmFailure:        d.ConfirmFailure,
		ReconnectTimeout:      d.ReconnectTimeout,
		TombstoneTimeout:      d.TombstoneTimeout,
		Preset:                "default",
		SingleNodeWait:        d.SingleNodeWait,
		HandOffTimeout:        d.HandOffTimeout,
		DefinitionsRefresh:    d.DefinitionsRefresh,
		Heartbeat:             d.Heartbeat,
		Partitions:            d.Partitions,
		PartitionMoveInterval: d.PartitionMoveInterval,
		Transfer:              defaultTransfer(),
	}
}

// Clustered reports whether this node is a member of a cluster.
func (c *Config) Clustered() bool { return c.Cluster.Bind != "" }

// validateCluster checks the cluster keys: none but their defaults without
// cluster.bind; with it, the HBase backend and the cluster package's own
// checks (including the gossip key file, read here), each error naming
// its key.
func (c *Config) validateCluster() []error {
	cc, d := c.Cluster, defaultCluster()
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, c.keyError(key, fmt.Sprintf(format, args...)))
	}
	if cc.Bind == "" {
		for key, set := range map[string]bool{
			"advertise": cc.Advertise != "", "advertise_api": cc.AdvertiseAPI != "", "join": len(cc.Join) > 0,
			"gossip_key_file": cc.GossipKeyFile != "", "weight": cc.Weight != d.Weight, "zone": cc.Zone != "",
			"confirm_failure": cc.ConfirmFailure != d.ConfirmFailure, "reconnect_timeout": cc.ReconnectTimeout != d.ReconnectTimeout,
			"tombstone_timeout": cc.TombstoneTimeout != d.TombstoneTimeout, "preset": cc.Preset != d.Preset,
			"single_node_wait": cc.SingleNodeWait != d.SingleNodeWait, "handoff_timeout": cc.HandOffTimeout != d.HandOffTimeout,
			"definitions_refresh": cc.DefinitionsRefresh != d.DefinitionsRefresh, "heartbeat": cc.Heartbeat != d.Heartbeat,
			"partitions": cc.Partitions != d.Partitions, "partition_moves": cc.PartitionMoves != d.PartitionMoves,
			"partition_move_interval": cc.PartitionMoveInterval != d.PartitionMoveInterval,
		} {
			if set {
				bad("cluster."+key, "set cluster.bind to run a cluster, or remove this key")
			}
		}
		return append(errs, c.validateTransfer()...)
	}
	if c.Storage.Backend != "hbase" {
		bad("cluster.bind", "a cluster needs storage.backend hbase: its nodes share one HBase table, and Pebble is one machine's disk (docs/cluster.md)")
	}
	if cc.Preset != "default" && cc.Preset != "loopback" {
		bad("cluster.preset", "want default or loopback, got %q", cc.Preset)
	}
	if _, err := APIAddress(cc, c.Listen); err != nil {
		bad("cluster.advertise_api", "%v", err)
	}
	errs = append(errs, c.validateTransfer()...)
	mc, keyErr := c.MembershipConfig("", "", nil, nil)
	if keyErr != nil {
		bad("cluster.gossip_key_file", "%v", keyErr)
	}
	for _, err := range joined(mc.Validate()) {
		var ce *cluster.ConfigError
		if !errors.As(err, &ce) {
			errs = append(errs, err)
			continue
		}
		key := "cluster." + ce.Key
		switch ce.Key {
		case "gossip_key":
			if keyErr != nil {
				continue // already reported
			}
			key = "cluster.gossip_key_file"
		case "data", "preset":
			continue // checked above (Config.Validate: data)
		case "transfer":
			key = "cluster.transfer.advertise"
		}
		bad(key, "%s", ce.Msg)
	}
	return errs
}

// MembershipConfig converts the cluster section into the cluster
// package's configuration, with api and xfer as the advertised API and
// transfer addresses; the caller sets its Version. The gossip key file is read here; its error never
// holds the key.
func (c *Config) MembershipConfig(api, xfer string, log *slog.Logger, reg prometheus.Registerer) (cluster.Config, error) {
	cc := c.Cluster
	mc := cluster.DefaultConfig()
	if cc.Preset == "loopback" {
		mc = cluster.LoopbackConfig()
	} else if cc.Preset != "default" {
		mc.Memberlist = nil // Validate names the preset
	}
	mc.DataDir = c.Data
	mc.Bind = cc.Bind
	mc.Advertise = cc.Advertise
	mc.Join = cc.Join
	mc.API = api
	mc.Transfer = xfer
	mc.Weight = cc.Weight
	mc.Zone = cc.Zone
	mc.ConfirmFailure = cc.ConfirmFailure
	mc.ReconnectTimeout = cc.ReconnectTimeout
	mc.TombstoneTimeout = cc.TombstoneTimeout
	mc.SingleNodeWait = cc.SingleNodeWait
	mc.HandOffTimeout = cc.HandOffTimeout
	mc.DefinitionsRefresh = cc.DefinitionsRefresh
	mc.Heartbeat = cc.Heartbeat
	mc.Partitions = cc.Partitions
	mc.PartitionMoves = cc.PartitionMoves
	mc.PartitionMoveInterval = cc.PartitionMoveInterval
	mc.Logger = log
	mc.Registerer = reg
	if cc.GossipKeyFile == "" {
		return mc, nil
	}
	b, err := boundedread.File(cc.GossipKeyFile, maxGossipKeyFileBytes)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return mc, fmt.Errorf("reading %s: %v", cc.GossipKeyFile, err)
	}
	k, err := cluster.ParseKey(string(b))
	if err != nil {
		return mc, errors.New(strings.TrimPrefix(err.Error(), "cluster: "))
	}
	mc.GossipKey = k
	return mc, nil
}

// APIAddress is the HTTP API address this node advertises: advertise_api,
// else listen (the bound address at serve time), with the gossip host
// when listen binds every interface.
func APIAddress(cc ClusterConfig, listen string) (string, error) {
	return advertisedAddr(cc, cc.AdvertiseAPI, "listen", listen, "API")
}

// advertisedAddr is the address this node advertises for one of its
// listeners: explicit when set, else listen (named listenKey) when it
// names a host, else listen's port on the gossip address's host.
func advertisedAddr(cc ClusterConfig, explicit, listenKey, listen, what string) (string, error) {
	if explicit != "" {
		if _, _, err := net.SplitHostPort(explicit); err != nil {
			return "", fmt.Errorf("want host:port, got %q", explicit)
		}
		return explicit, nil
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("%s %q is not host:port", listenKey, listen)
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return listen, nil
	}
	for _, a := range []string{cc.Advertise, cc.Bind} {
		if h, _, err := net.SplitHostPort(a); err == nil && h != "" {
			if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
				return net.JoinHostPort(h, port), nil
			}
		}
	}
	return "", fmt.Errorf("required when %s (%s) and the gossip addresses bind every interface: the other nodes need an address of this node's %s", listenKey, listen, what)
}

// maxGossipKeyFileBytes bounds the gossip key file, a line of base64
// (the CLI reads a key from stdin within the same bound): a device
// (/dev/zero) named by mistake is refused rather than read until the
// memory runs out.
const maxGossipKeyFileBytes = 4096
