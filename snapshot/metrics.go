package snapshot

import "github.com/prometheus/client_golang/prometheus"

// metrics are the DB's Prometheus metrics (Options.Registerer lists them).
type metrics struct {
	runs       *prometheus.CounterVec
	cellsWrite prometheus.Counter
	gcDeleted  prometheus.Counter
	commitSecs prometheus.Histogram
	reg        prometheus.Registerer
	colls      []prometheus.Collector
}

func newMetrics() *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snapstore_snapshot_runs_total",
			Help: "Runs ended, by result (committed, aborted)."}, []string{"result"}),
		cellsWrite: prometheus.NewCounter(prometheus.CounterOpts{Name: "snapstore_snapshot_cells_written_total",
			Help: "Data cells and delete markers written by runs."}),
		gcDeleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "snapstore_snapshot_gc_cells_deleted_total",
			Help: "Cell versions physically removed by GC."}),
		commitSecs: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "snapstore_snapshot_commit_duration_seconds",
			Help: "Time of Run.Commit (delete detection, flush, durable commit)."}),
	}
	return m
}

// register registers the metrics with reg; Close unregisters them.
func (m *metrics) register(reg prometheus.Registerer, db *DB) error {
	m.reg = reg
	txns := func(invalid bool) func() float64 {
		return func() float64 {
			n := 0
			db.mu.Lock()
			defer db.mu.Unlock()
			for _, ds := range db.datasets {
				ds.mu.Lock()
				if invalid {
					n += len(ds.st.Txns.Invalid)
				} else {
					n += len(ds.st.Txns.InProgress)
				}
				ds.mu.Unlock()
			}
			return float64(n)
		}
	}
	for _, c := range []prometheus.Collector{m.runs, m.cellsWrite, m.gcDeleted, m.commitSecs,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "snapstore_snapshot_readers_open",
			Help: "Readers currently pinning a version."}, func() float64 { return float64(db.openReaders.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "snapstore_txn_in_progress_transactions",
			Help: "Transactions in progress, over all datasets (txn.I3)."}, txns(false)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "snapstore_txn_invalid_transactions",
			Help: "Invalid transactions not yet pruned, over all datasets (txn.I6)."}, txns(true)),
	} {
		if err := reg.Register(c); err != nil {
			m.unregister()
			return err
		}
		m.colls = append(m.colls, c)
	}
	return nil
}

func (m *metrics) unregister() {
	for _, c := range m.colls {
		m.reg.Unregister(c)
	}
	m.colls = nil
}
