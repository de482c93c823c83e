package notify

import "github.com/prometheus/client_golang/prometheus"

// metrics are a notifier's metrics (docs/operations.md).
type metrics struct {
	// attempts counts attempts by webhook and outcome (delivered, retry,
	// failed).
	attempts *prometheus.CounterVec
	// dropped counts events and attempts dropped: a full queue, or a
	// shutdown (N1).
	dropped prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, queued func() float64) *metrics {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_notify_attempts_total",
			Help: "Webhook delivery attempts, by webhook and outcome (delivered, retry, failed).",
		}, []string{"webhook", "outcome"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_notify_dropped_total",
			Help: "Notifications dropped because the queue was full or the process was stopping.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.dropped, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "snapstore_notify_queue_length",
			Help: "Run events and delivery attempts waiting to be processed.",
		}, queued))
	}
	return m
}
