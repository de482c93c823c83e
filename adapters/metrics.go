package adapters

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the package's Prometheus metrics, one set per Service,
// registered on Options.Registerer (nil registers none). Labels carry
// adapter names and statuses only, never an option value.
//
//	snapstore_adapters_runs_total{adapter,status}           counter
//	snapstore_adapters_run_duration_seconds{adapter,status}  histogram
//	snapstore_adapters_rows_read_total{adapter}              counter
//	snapstore_adapters_rows_written_total{adapter,op}        counter (op: inserted, updated, deleted)
//	snapstore_adapters_bytes_written_total{adapter}          counter
//	snapstore_adapters_runs_running                          gauge
//	snapstore_adapters_runs_placed_total{node,strategy}      counter: runs this node placed in a cluster, by the node that took them
type metrics struct {
	placed   *prometheus.CounterVec
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	rowsRead *prometheus.CounterVec
	written  *prometheus.CounterVec
	bytes    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, running func() float64) *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_adapters_runs_total", Help: "Adapter runs ended, by adapter and status (succeeded, failed, aborted, skipped).",
		}, []string{"adapter", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "snapstore_adapters_run_duration_seconds", Help: "Wall time of adapter runs from start to end.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 16),
		}, []string{"adapter", "status"}),
		rowsRead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_adapters_rows_read_total", Help: "Source rows read by adapter runs.",
		}, []string{"adapter"}),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_adapters_rows_written_total", Help: "Rows inserted, updated or deleted by committed runs.",
		}, []string{"adapter", "op"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_adapters_bytes_written_total", Help: "Bytes written to storage by committed runs.",
		}, []string{"adapter"}),
		placed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_adapters_runs_placed_total", Help: "Runs this node placed in its cluster (itself included), by the node that took them and the adapter's strategy.",
		}, []string{"node", "strategy"}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.duration, m.rowsRead, m.written, m.bytes, m.placed,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "snapstore_adapters_runs_running", Help: "Adapter runs in progress.",
			}, running))
	}
	return m
}

func (m *metrics) observeRun(r RunRecord) {
	if m == nil {
		return
	}
	m.runs.WithLabelValues(r.Adapter, string(r.Status)).Inc()
	if r.Status == RunSkipped {
		return
	}
	if r.End != nil {
		m.duration.WithLabelValues(r.Adapter, string(r.Status)).Observe(r.End.Sub(r.Start).Seconds())
	}
	m.rowsRead.WithLabelValues(r.Adapter).Add(float64(r.RowsRead))
	if r.Status == RunSucceeded {
		m.written.WithLabelValues(r.Adapter, "inserted").Add(float64(r.Stats.Inserted))
		m.written.WithLabelValues(r.Adapter, "updated").Add(float64(r.Stats.Updated))
		m.written.WithLabelValues(r.Adapter, "deleted").Add(float64(r.Stats.Deleted))
		m.bytes.WithLabelValues(r.Adapter).Add(float64(r.Stats.BytesWritten))
	}
}

// observePlaced counts a run placed on node.
func (m *metrics) observePlaced(node string, strategy Strategy) {
	if m == nil {
		return
	}
	m.placed.WithLabelValues(node, string(strategy)).Inc()
}
