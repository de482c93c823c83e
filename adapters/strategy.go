package adapters

import (
	"fmt"
	"strings"
)

// Strategy says where the runs of an adapter happen when several nodes
// share one HBase table (docs/cluster.md), after Apache NiFi's
// load-balance strategies of a connection. On a node that runs alone every
// strategy but StrategyPartitionByKey runs on that node.
type Strategy string

const (
	// StrategyLocal (default; NiFi's "do not load balance"): a scheduled
	// run fires once in the cluster, on the adapter's owner; a manual run
	// happens on the node that was asked (S1).
	StrategyLocal Strategy = "local"
	// StrategyRoundRobin: successive runs rotate over the active nodes;
	// a node that cannot be reached is skipped for the next (S2).
	StrategyRoundRobin Strategy = "round-robin"
	// StrategySingleNode: every run of every adapter of this strategy goes
	// to the one node the cluster picks; while it cannot be reached runs
	// wait for it, up to a limit (S3).
	StrategySingleNode Strategy = "single-node"
	// StrategyPartitionByKey: the rows of one run spread over the nodes by
	// a key column. Accepted in definitions; a run is refused with
	// ErrStrategyNotSupported until partitioned runs exist (S4).
	StrategyPartitionByKey Strategy = "partition-by-key"
)

// Strategies lists every strategy, the default first.
var Strategies = []Strategy{StrategyLocal, StrategyRoundRobin, StrategySingleNode, StrategyPartitionByKey}

// parseStrategy checks s; "" is StrategyLocal (A3).
func parseStrategy(key string, s Strategy) (Strategy, error) {
	if s == "" {
		return StrategyLocal, nil
	}
	for _, k := range Strategies {
		if s == k {
			return s, nil
		}
	}
	names := make([]string, len(Strategies))
	for i, k := range Strategies {
		names[i] = string(k)
	}
	return "", &OptionError{Key: key, Msg: fmt.Sprintf("want %s, got %q", strings.Join(names, ", "), s)}
}
