package cluster

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the membership's Prometheus metrics:
//
//	snapstore_cluster_members{state}               members this node sees, by state
//	snapstore_cluster_member_transitions_total{to} state changes of members, by new state
//	snapstore_cluster_member_flaps_total           failures serf reported that ended within the confirmation delay (K3)
//	snapstore_cluster_hints_dropped_total          hints (user events) dropped because their reader was behind (K9)
type metrics struct {
	reg          prometheus.Registerer
	cs           []prometheus.Collector
	transitions  *prometheus.CounterVec
	hintsDropped prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, m *Membership) (*metrics, error) {
	mt := &metrics{
		reg: reg,
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_cluster_member_transitions_total",
			Help: "State changes of cluster members seen by this node, by new state.",
		}, []string{"to"}),
		hintsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_cluster_hints_dropped_total",
			Help: "Hints (serf user events) dropped because their reader was behind; the periodic reread covers them.",
		}),
	}
	mt.cs = append(mt.cs, mt.transitions, mt.hintsDropped, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "snapstore_cluster_member_flaps_total",
		Help: "Member failures reported by serf that ended within the confirmation delay, so nothing moved.",
	}, func() float64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		return float64(m.tr.flaps)
	}))
	for _, s := range States {
		mt.transitions.WithLabelValues(s.String())
		mt.cs = append(mt.cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "snapstore_cluster_members",
			Help:        "Cluster members this node sees, by state (itself included).",
			ConstLabels: prometheus.Labels{"state": s.String()},
		}, func() float64 {
			m.mu.Lock()
			defer m.mu.Unlock()
			return float64(m.tr.counts()[s])
		}))
	}
	if reg == nil {
		return mt, nil
	}
	for i, c := range mt.cs {
		if err := reg.Register(c); err != nil {
			for _, done := range mt.cs[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("cluster: registering metrics: %w", err)
		}
	}
	return mt, nil
}

// transition counts one state change.
func (mt *metrics) transition(t transition) {
	if !t.removed {
		mt.transitions.WithLabelValues(t.to.String()).Inc()
	}
}

// unregister removes the metrics from the registerer.
func (mt *metrics) unregister() {
	if mt.reg == nil {
		return
	}
	for _, c := range mt.cs {
		mt.reg.Unregister(c)
	}
}
