package placement

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/cluster"
)

// Ownership moves. Every node computes the owner of every adapter (cluster.K6);
// this file remembers them, so that a change of the active nodes can be
// counted and logged as the adapters it moved:
//
//	snapstore_cluster_ownership_moves_total   adapters whose owner changed, as this node sees it
//	snapstore_cluster_adapters_owned          adapters this node owns now
type ownership struct {
	m *cluster.Membership
	// mu guards owners.
	mu     sync.Mutex
	owners map[string]string // adapter -> owner ("" for none)

	moves prometheus.Counter
	cs    []prometheus.Collector
}

func newOwnership(m *cluster.Membership) *ownership {
	o := &ownership{m: m, owners: map[string]string{}}
	o.moves = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "snapstore_cluster_ownership_moves_total",
		Help: "Adapters whose owner changed, as this node sees it (joins, leaves, drains, confirmed failures).",
	})
	o.cs = []prometheus.Collector{o.moves, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "snapstore_cluster_adapters_owned",
		Help: "Adapters whose scheduled ticks this node fires (it is their owner).",
	}, func() float64 {
		o.mu.Lock()
		defer o.mu.Unlock()
		n := 0
		for _, owner := range o.owners {
			if owner == m.ID() {
				n++
			}
		}
		return float64(n)
	})}
	return o
}

// register registers the metrics on reg (nil: none).
func (o *ownership) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for i, c := range o.cs {
		if err := reg.Register(c); err != nil {
			for _, done := range o.cs[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("cluster: registering metrics: %w", err)
		}
	}
	return nil
}

// unregister removes the metrics from reg.
func (o *ownership) unregister(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	for _, c := range o.cs {
		reg.Unregister(c)
	}
}

// update computes the owner of each of names with owner and counts the
// moves: a name whose owner was known and is now another (a name seen for
// the first time, or whose owner was none, moved nothing).
func (o *ownership) update(names []string, owner func(string) (string, bool)) (moved int) {
	fresh := make(map[string]string, len(names))
	for _, n := range names {
		fresh[n], _ = owner(n)
	}
	o.mu.Lock()
	for n, now := range fresh {
		if was := o.owners[n]; was != "" && now != was {
			moved++
		}
	}
	o.owners = fresh
	o.mu.Unlock()
	if moved > 0 {
		o.moves.Add(float64(moved))
		o.m.Logger().Info("adapter owners moved", "adapters", moved, "of", len(names))
	}
	return moved
}
