package transfer

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the transport's Prometheus metrics:
//
//	snapstore_cluster_transfer_backlog_rows{node,dataset}    rows waiting for a node (X8)
//	snapstore_cluster_transfer_backlog_bytes{node,dataset}   bytes waiting for a node, as sent
//	snapstore_cluster_transfer_spilled_bytes{node}           of those, bytes on disk only
//	snapstore_cluster_transfer_memory_bytes                  bytes of batches held in memory by the queues (X7)
//	snapstore_cluster_transfer_spilled_bytes_total           bytes written to disk only (swapped out) when queued
//	snapstore_cluster_transfer_queued_batches_total          batches queued by runs
//	snapstore_cluster_transfer_sent_bytes_total{node}        bytes written to connections, resends included
//	snapstore_cluster_transfer_received_bytes_total          bytes read from accepted connections
//	snapstore_cluster_transfer_batches_received_total{outcome}  applied, duplicate, rewind, forwarded, retry, refused
//	snapstore_cluster_transfer_forwarded_total               batches this node sent on to their owner (X6)
//	snapstore_cluster_transfer_refused_total{reason}         connections refused (X1)
//	snapstore_cluster_transfer_connections                   open connections to other nodes
//	snapstore_cluster_transfer_certificate_expiry_timestamp_seconds  when this node's certificate expires
type metrics struct {
	reg           prometheus.Registerer
	cs            []prometheus.Collector
	sentBytes     *prometheus.CounterVec
	receivedBytes prometheus.Counter
	batches       *prometheus.CounterVec
	forwarded     prometheus.Counter
	refused       *prometheus.CounterVec
	connections   prometheus.Gauge
	spilled       prometheus.Counter
	queuedBatches prometheus.Counter
	certExpiry    prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, t *Transport) (*metrics, error) {
	m := &metrics{
		reg: reg,
		sentBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_cluster_transfer_sent_bytes_total",
			Help: "Bytes written to transfer connections, by destination node (resends included).",
		}, []string{"node"}),
		receivedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_cluster_transfer_received_bytes_total",
			Help: "Bytes read from accepted transfer connections.",
		}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_cluster_transfer_batches_received_total",
			Help: "Batches received, by outcome: applied, duplicate, rewind, forwarded, retry, refused.",
		}, []string{"outcome"}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_cluster_transfer_forwarded_total",
			Help: "Batches this node sent on to the owner of their partition.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_cluster_transfer_refused_total",
			Help: "Transfer connections refused, by reason.",
		}, []string{"reason"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snapstore_cluster_transfer_connections",
			Help: "Open transfer connections to other nodes.",
		}),
		spilled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_cluster_transfer_spilled_bytes_total",
			Help: "Bytes of batches queued to disk only because the memory bound was reached.",
		}),
		queuedBatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_cluster_transfer_queued_batches_total",
			Help: "Batches queued for other nodes by the runs this node coordinates.",
		}),
	}
	for _, o := range []string{"applied", "duplicate", "rewind", "forwarded", "retry", "refused"} {
		m.batches.WithLabelValues(o)
	}
	for _, r := range []string{reasonNoCert, reasonUntrusted, reasonNotMember, reasonHandshake, reasonHello} {
		m.refused.WithLabelValues(r)
	}
	m.certExpiry = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "snapstore_cluster_transfer_certificate_expiry_timestamp_seconds",
		Help: "When this node's transfer certificate (cluster.transfer.cert_file) expires, Unix seconds.",
	}, func() float64 { return float64(t.creds.notAfter.Unix()) })
	m.cs = []prometheus.Collector{m.sentBytes, m.receivedBytes, m.batches, m.forwarded, m.refused, m.connections, m.spilled, m.queuedBatches, m.certExpiry,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "snapstore_cluster_transfer_memory_bytes",
			Help: "Bytes of batches held in memory by the transfer queues.",
		}, func() float64 { return float64(t.mem.Load()) }),
		backlogCollector{t},
	}
	if reg == nil {
		return m, nil
	}
	for i, c := range m.cs {
		if err := reg.Register(c); err != nil {
			for _, done := range m.cs[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("transfer: registering metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.cs {
		m.reg.Unregister(c)
	}
}

// backlogCollector reports the backlog at scrape time, one series per
// destination node and dataset that has one.
type backlogCollector struct{ t *Transport }

var (
	backlogRowsDesc = prometheus.NewDesc("snapstore_cluster_transfer_backlog_rows",
		"Rows waiting to be sent to a node and applied there, by destination node and dataset.", []string{"node", "dataset"}, nil)
	backlogBytesDesc = prometheus.NewDesc("snapstore_cluster_transfer_backlog_bytes",
		"Bytes (as sent) waiting to be sent to a node and applied there, by destination node and dataset.", []string{"node", "dataset"}, nil)
	spilledDesc = prometheus.NewDesc("snapstore_cluster_transfer_spilled_bytes",
		"Bytes waiting for a node that are held on disk only, by destination node.", []string{"node"}, nil)
)

func (c backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- backlogRowsDesc
	ch <- backlogBytesDesc
	ch <- spilledDesc
}

func (c backlogCollector) Collect(ch chan<- prometheus.Metric) {
	for _, n := range c.t.Backlog().Nodes {
		ch <- prometheus.MustNewConstMetric(spilledDesc, prometheus.GaugeValue, float64(n.SpilledBytes), n.Node)
		for _, d := range n.Datasets {
			ch <- prometheus.MustNewConstMetric(backlogRowsDesc, prometheus.GaugeValue, float64(d.Rows), n.Node, d.Dataset)
			ch <- prometheus.MustNewConstMetric(backlogBytesDesc, prometheus.GaugeValue, float64(d.Bytes), n.Node, d.Dataset)
		}
	}
}
