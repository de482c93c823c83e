package hbase

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snapstore/snapstore/store"
)

// metrics are one Store's Prometheus metrics, registered on the Registerer
// of Options (none when it is nil).
type metrics struct {
	calls    *prometheus.CounterVec   // snapstore_hbase_calls_total{method, result}
	duration *prometheus.HistogramVec // snapstore_hbase_call_duration_seconds{method}
	cellsIn  prometheus.Counter       // snapstore_hbase_cells_written_total
	cellsOut prometheus.Counter       // snapstore_hbase_cells_read_total
}

func newMetrics(reg prometheus.Registerer, p func() (open, idle int)) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_hbase_calls_total",
			Help: "Thrift2 calls to HBase, by method and result (ok, unavailable, server_error, canceled, closed, error).",
		}, []string{"method", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "snapstore_hbase_call_duration_seconds",
			Help:    "Duration of Thrift2 calls to HBase, including the wait for a pooled connection, in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"method"}),
		cellsIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_hbase_cells_written_total",
			Help: "Cell versions and markers sent to HBase by Apply (after collapsing rewrites of one coordinate in a batch).",
		}),
		cellsOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_hbase_cells_read_total",
			Help: "Cells returned by Get and Scan.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.duration, m.cellsIn, m.cellsOut,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "snapstore_hbase_pool_connections",
				Help: "Open Thrift2 connections to the gateway, idle or in use.",
			}, func() float64 { o, _ := p(); return float64(o) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "snapstore_hbase_pool_idle_connections",
				Help: "Open Thrift2 connections to the gateway that are idle.",
			}, func() float64 { _, i := p(); return float64(i) }),
		)
	}
	return m
}

func (m *metrics) observe(method string, start time.Time, err error) {
	m.duration.WithLabelValues(method).Observe(time.Since(start).Seconds())
	m.calls.WithLabelValues(method, resultLabel(err)).Inc()
}

func resultLabel(err error) string {
	var (
		ioe *tIOError
		iae *tIllegalArgument
	)
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case errors.Is(err, store.ErrClosed):
		return "closed"
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, errBrokenConn):
		return "unavailable"
	case errors.As(err, &ioe):
		if ioe.canRetry {
			return "unavailable"
		}
		return "server_error"
	case errors.As(err, &iae):
		return "server_error"
	}
	return "error"
}
