package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a node's membership. Start from a preset
// (DefaultConfig, LoopbackConfig) and set the node's own fields.
type Config struct {
	// DataDir holds the node id (K1), serf's snapshot and the keyring file;
	// required.
	DataDir string
	// Bind is the gossip address host:port, TCP and UDP (serf's default
	// port is 7946; port 0 picks a free one, for tests).
	Bind string
	// Advertise is the gossip address the other nodes use, host:port;
	// empty advertises Bind (memberlist picks a private address when
	// Bind's host is 0.0.0.0).
	Advertise string
	// Join lists gossip addresses of members to join at start. Empty: the
	// node starts a cluster, or rejoins the members of its snapshot.
	Join []string
	// GossipKey is the initial gossip key (16, 24 or 32 bytes: AES-128,
	// -192, -256). It seeds the keyring file; once that file exists it is
	// the keyring (K2). Nil: no encryption, allowed only when Bind and
	// Advertise are loopback addresses.
	GossipKey []byte
	// API is the advertised address of the node's HTTP API (tag api).
	API string
	// Transfer is the advertised address of the node's transfer listener
	// (tag xfer, cluster/transfer), host:port; empty when the node
	// receives no rows of partitioned runs.
	Transfer string
	// Weight is the placement weight, 1 to 10000; default 100.
	Weight int
	// Zone is the node's failure zone, at most 64 bytes; default none.
	Zone string
	// Version is the build version (tag v), at most 64 bytes.
	Version string
	// ConfirmFailure is how long a member serf reports failed stays in its
	// state before it counts as failed (K3); default 30s, loopback 2s.
	ConfirmFailure time.Duration
	// Tick is how often the confirmation delays are checked; default 1s,
	// loopback 100ms. A member turns failed at most Tick after its delay.
	Tick time.Duration
	// JoinRetry is the pause between join attempts while Join's addresses
	// do not answer; default 10s, loopback 500ms.
	JoinRetry time.Duration
	// ReconnectTimeout is how long serf keeps trying to reconnect to a
	// failed member before reaping it (serf.Config.ReconnectTimeout);
	// default 24h.
	ReconnectTimeout time.Duration
	// TombstoneTimeout is how long serf keeps a member that left
	// (serf.Config.TombstoneTimeout); default 24h.
	TombstoneTimeout time.Duration
	// SingleNodeWait is how long a run of a single-node adapter waits for
	// its node before it fails (adapters.L3); default 5m.
	SingleNodeWait time.Duration
	// HandOffTimeout bounds one hand-off of a run to another node's API
	// (adapters.L5); default 10s.
	HandOffTimeout time.Duration
	// APITLS, when set, is the client side of TLS for calls to the other
	// nodes' APIs (hand-offs), which then go over HTTPS: every node of a
	// cluster serves its API the same way. Nil means plain HTTP.
	APITLS *tls.Config
	// Heartbeat is how often a node rewrites its entry of the node list
	// (last heard, config digests) and rereads the others' (K11, K12);
	// default 10s.
	Heartbeat time.Duration
	// DefinitionsRefresh is how often the definitions are reread from
	// HBase whatever the hints say (K9); default 15s.
	DefinitionsRefresh time.Duration
	// Partitions is the count of partitions of partitioned runs, the
	// same on every node and fixed when the partition table is first
	// written; default 32, 8 to 1024.
	Partitions int
	// PartitionMoves is the most partitions one change of the partition
	// table moves; default (0) Partitions/8. PartitionMoveInterval is
	// the least time between two changes; default 10s. Partitions
	// without an owner are assigned at once, whatever these say.
	PartitionMoves        int
	PartitionMoveInterval time.Duration
	// Memberlist is the preset's memberlist configuration (probe, gossip
	// and suspicion timing); Open sets its addresses, keyring and logger.
	Memberlist *memberlist.Config
	// Logger receives the membership's logs and serf's and memberlist's
	// (logbridge.go); nil discards.
	Logger *slog.Logger
	// Registerer registers the metrics; nil registers none.
	Registerer prometheus.Registerer

	// now is the clock of the state machine; default time.Now.
	now func() time.Time
}

// Defaults of Config.
const (
	DefaultWeight         = 100
	maxWeight             = 10000
	DefaultConfirmFailure = 30 * time.Second
	// MinConfirmFailure and MaxConfirmFailure bound ConfirmFailure: below
	// a second a member's flap (a GC pause, a lost probe) would move its
	// share; above an hour a dead node's share would wait that long.
	MinConfirmFailure     = time.Second
	MaxConfirmFailure     = time.Hour
	DefaultSingleNodeWait = 5 * time.Minute
	DefaultHandOffTimeout = 10 * time.Second
	// DefaultDefinitionsRefresh bounds how long a change of definitions
	// whose hint was lost takes to reach a node.
	DefaultDefinitionsRefresh = 15 * time.Second
	DefaultHeartbeat          = 10 * time.Second
	DefaultPartitions         = 32
	minPartitions             = 8
	maxPartitions             = 1024
	// DefaultPartitionMoveInterval is the least time between two changes
	// of the partition table.
	DefaultPartitionMoveInterval = 10 * time.Second
)

// DefaultConfig is the preset for a LAN (memberlist.DefaultLANConfig: 1s
// probes; a dead node is confirmed by memberlist in about 5 to 25 s, then
// K3's 30 s).
func DefaultConfig() Config {
	return Config{
		Weight:                DefaultWeight,
		ConfirmFailure:        DefaultConfirmFailure,
		Tick:                  time.Second,
		JoinRetry:             10 * time.Second,
		ReconnectTimeout:      24 * time.Hour,
		TombstoneTimeout:      24 * time.Hour,
		SingleNodeWait:        DefaultSingleNodeWait,
		HandOffTimeout:        DefaultHandOffTimeout,
		DefinitionsRefresh:    DefaultDefinitionsRefresh,
		Heartbeat:             DefaultHeartbeat,
		Partitions:            DefaultPartitions,
		PartitionMoveInterval: DefaultPartitionMoveInterval,
		Memberlist:            memberlist.DefaultLANConfig(),
	}
}

// LoopbackConfig is the preset for nodes on one machine, for tests
// (memberlist.DefaultLocalConfig: shorter timeouts) with a 2 s
// confirmation delay and Bind 127.0.0.1:0.
func LoopbackConfig() Config {
	c := DefaultConfig()
	c.Bind = "127.0.0.1:0"
	c.ConfirmFailure = 2 * time.Second
	c.Tick = 100 * time.Millisecond
	c.JoinRetry = 500 * time.Millisecond
	c.Memberlist = memberlist.DefaultLocalConfig()
	return c
}

// ConfigError is one bad field of a Config. Key is the field's name in a
// configuration file (bind, gossip_key, weight), which package config
// prefixes with "cluster.".
type ConfigError struct {
	Key string
	Msg string
}

func (e *ConfigError) Error() string { return "cluster: " + e.Key + ": " + e.Msg }

// Validate checks c and returns every problem, each a *ConfigError.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &ConfigError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if c.DataDir == "" {
		bad("data", "required: the node id and serf's files live there")
	}
	bindHost, _, err := splitAddr(c.Bind)
	if err != nil {
		bad("bind", "%v", err)
	}
	advHost := bindHost
	if c.Advertise != "" {
		if advHost, _, err = splitAddr(c.Advertise); err != nil {
			bad("advertise", "%v", err)
		}
	}
	for i, j := range c.Join {
		if _, _, err := splitAddr(j); err != nil {
			bad(fmt.Sprintf("join[%d]", i), "%v", err)
		}
	}
	if c.GossipKey != nil {
		if err := memberlist.ValidateKey(c.GossipKey); err != nil {
			bad("gossip_key", "want 16, 24 or 32 bytes (AES-128, -192 or -256), got %d", len(c.GossipKey))
		}
	} else if err == nil && !(isLoopback(bindHost) && isLoopback(advHost)) {
		bad("gossip_key", "required when gossip binds or advertises off loopback (%s): serf encrypts gossip only with a shared key, and without one any host that reaches the port can join the cluster and read its members", c.Bind)
	}
	if len(c.API) > maxAddrLen {
		bad("advertise_api", "at most %d bytes (serf's tag limit), got %d", maxAddrLen, len(c.API))
	}
	if c.Transfer != "" {
		if _, _, err := splitAddr(c.Transfer); err != nil {
			bad("transfer", "%v", err)
		}
	}
	if c.Weight < 1 || c.Weight > maxWeight {
		bad("weight", "want 1 to %d, got %d", maxWeight, c.Weight)
	}
	if len(c.Zone) > maxZoneLen {
		bad("zone", "at most %d bytes, got %d", maxZoneLen, len(c.Zone))
	}
	if c.ConfirmFailure < MinConfirmFailure || c.ConfirmFailure > MaxConfirmFailure {
		bad("confirm_failure", "want %s to %s, got %s", MinConfirmFailure, MaxConfirmFailure, c.ConfirmFailure)
	}
	if c.ReconnectTimeout < c.ConfirmFailure {
		bad("reconnect_timeout", "must be at least confirm_failure (%s): serf would forget a failed member before it counts as failed", c.ConfirmFailure)
	}
	if c.TombstoneTimeout <= 0 {
		bad("tombstone_timeout", "must be positive")
	}
	if c.SingleNodeWait <= 0 {
		bad("single_node_wait", "must be positive")
	}
	if c.HandOffTimeout <= 0 {
		bad("handoff_timeout", "must be positive")
	}
	if c.Heartbeat < 100*time.Millisecond {
		bad("heartbeat", "at least 100ms, got %s", c.Heartbeat)
	}
	if c.DefinitionsRefresh < time.Second {
		bad("definitions_refresh", "at least 1s, got %s", c.DefinitionsRefresh)
	}
	if c.Partitions < minPartitions || c.Partitions > maxPartitions {
		bad("partitions", "want %d to %d, got %d", minPartitions, maxPartitions, c.Partitions)
	}
	if c.PartitionMoves < 0 || c.PartitionMoves > max(c.Partitions, minPartitions) {
		bad("partition_moves", "want 0 (partitions/8) to partitions (%d), got %d", c.Partitions, c.PartitionMoves)
	}
	if c.PartitionMoveInterval < 100*time.Millisecond {
		bad("partition_move_interval", "at least 100ms, got %s", c.PartitionMoveInterval)
	}
	if c.Tick <= 0 || c.JoinRetry <= 0 || c.Memberlist == nil {
		bad("preset", "Tick, JoinRetry and Memberlist come from a preset (DefaultConfig, LoopbackConfig)")
	}
	if n := tagBytesBound(worstTags()); n > MaxTagBytes {
		// The bounds of tags.go are wrong: a programming error.
		bad("tags", "up to %d bytes, more than serf's %d", n, MaxTagBytes)
	}
	return errors.Join(errs...)
}

// splitAddr splits host:port and checks the port.
func splitAddr(a string) (string, int, error) {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", 0, fmt.Errorf("want host:port, got %q", a)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("want a port 0 to 65535, got %q", port)
	}
	if len(a) > maxAddrLen {
		return "", 0, fmt.Errorf("at most %d bytes, got %d", maxAddrLen, len(a))
	}
	return host, p, nil
}

// isLoopback reports whether host is a loopback address or localhost.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// PartitionMovesPerStep is PartitionMoves, or its default: an eighth of
// the partitions, at least one.
func (c *Config) PartitionMovesPerStep() int {
	if c.PartitionMoves > 0 {
		return c.PartitionMoves
	}
	return max(c.Partitions/8, 1)
}
