package transfer

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a node's transport. Start from DefaultConfig and set
// the node's own fields.
type Config struct {
	// NodeID is this node's id (cluster.K1): its certificate must name it,
	// and the other nodes reach it by it. Required.
	NodeID string
	// Incarnation is this process's incarnation (cluster.K1), told to
	// every sender so that a restart is seen (X5).
	Incarnation string
	// Listen is the address the receiver listens on, host:port (port 0
	// picks a free one; Transport.Addr tells which). Required.
	Listen string
	// CAFile is the PEM file of the cluster CA (or of the CAs) a peer's
	// certificate must chain to; CertFile and KeyFile are this node's
	// certificate (its chain may follow it) and key, PEM. Required: the
	// transport speaks only mutual TLS (X1).
	CAFile, CertFile, KeyFile string
	// ConnectionsPerNode is the number of TCP connections to each
	// destination node, each a lane of its queue (X3); default 4 (NiFi's).
	ConnectionsPerNode int
	// MaxWorkers bounds the batches being written to connections at once,
	// and, separately, the batches being applied at once; default 8
	// (NiFi's).
	MaxWorkers int
	// QueueBatches is the most batches a destination's queue holds in
	// memory, and the increment of its swap files (X7); default 100.
	QueueBatches int
	// QueueMemory bounds the bytes of batches held in memory by every
	// queue of the node together; a connection may hold one batch more
	// (X7). Default 64 MiB.
	QueueMemory int64
	// Dir holds the swap files (<data>/cluster/transfer); emptied at Open.
	// Required.
	Dir string
	// Members tells who may send and where a node listens. Required.
	Members Members
	// Handler applies the batches this node receives; nil refuses every
	// batch (CodeRefused, "this node applies no batches").
	Handler Handler
	// Logger receives the transport's logs; nil discards.
	Logger *slog.Logger
	// Registerer registers the metrics; nil registers none.
	Registerer prometheus.Registerer

	// RetryMin and RetryMax bound the pause before a sender dials again or
	// resends after a retry answer: RetryMin doubling up to RetryMax;
	// default 100 ms and 5 s.
	RetryMin, RetryMax time.Duration
	// Window is the most batches in flight (written, not yet answered) on
	// one connection; default 4.
	Window int

	// dialTimeout bounds a dial and handshake; default 10 s.
	dialTimeout time.Duration
	// hookAfterApply, in tests, is called after a batch is applied and
	// before its ACK is written; returning true drops the connection
	// instead (a lost ACK).
	hookAfterApply func(b *Batch) bool
}

// Defaults of Config.
const (
	DefaultConnectionsPerNode = 4
	DefaultMaxWorkers         = 8
	DefaultQueueBatches       = 100
	DefaultQueueMemory        = 64 << 20
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		ConnectionsPerNode: DefaultConnectionsPerNode,
		MaxWorkers:         DefaultMaxWorkers,
		QueueBatches:       DefaultQueueBatches,
		QueueMemory:        DefaultQueueMemory,
		RetryMin:           100 * time.Millisecond,
		RetryMax:           5 * time.Second,
		Window:             4,
		dialTimeout:        10 * time.Second,
	}
}

// ConfigError is one bad field of a Config. Key is the field's name in a
// configuration file (listen, ca_file, max_workers), which package config
// prefixes with "cluster.transfer.".
type ConfigError struct {
	Key string
	Msg string
}

func (e *ConfigError) Error() string { return "transfer: " + e.Key + ": " + e.Msg }

// Validate checks c and returns every problem, each a *ConfigError. It
// checks values, not files: Open reads the files and says what is wrong
// with them.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &ConfigError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen", "want host:port, got %q", c.Listen)
	}
	for key, f := range map[string]string{"ca_file": c.CAFile, "cert_file": c.CertFile, "key_file": c.KeyFile} {
		if f == "" {
			bad(key, "required: nodes exchange rows only over mutual TLS (snapstore cert makes a CA and node certificates)")
		}
	}
	if c.ConnectionsPerNode < 1 || c.ConnectionsPerNode > 64 {
		bad("connections_per_node", "want 1 to 64, got %d", c.ConnectionsPerNode)
	}
	if c.MaxWorkers < 1 || c.MaxWorkers > 1024 {
		bad("max_workers", "want 1 to 1024, got %d", c.MaxWorkers)
	}
	if c.QueueBatches < 1 || c.QueueBatches > 1_000_000 {
		bad("queue_batches", "want 1 to 1000000, got %d", c.QueueBatches)
	}
	if c.QueueMemory < 1<<20 {
		bad("queue_memory", "want at least 1 MiB, got %d bytes", c.QueueMemory)
	}
	if c.RetryMin <= 0 || c.RetryMax < c.RetryMin || c.Window < 1 || c.dialTimeout <= 0 {
		bad("preset", "RetryMin, RetryMax, Window and the dial timeout come from DefaultConfig")
	}
	if c.NodeID == "" {
		bad("node_id", "required")
	}
	if c.Dir == "" {
		bad("dir", "required: queues spill there")
	}
	if c.Members == nil {
		bad("members", "required")
	}
	return errors.Join(errs...)
}
