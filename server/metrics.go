package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's own metrics (Prometheus's newDBMetrics pattern:
// one struct per instance, registered on an injected registerer).
type metrics struct {
	httpDuration   *prometheus.HistogramVec
	gcBytes        *prometheus.CounterVec
	gcCells        *prometheus.CounterVec
	datasetCollect *datasetCollector
	// The cache of built Parquet files (parquetcache.go).
	parquetBuilds    prometheus.Counter
	parquetHits      prometheus.Counter
	parquetEvictions prometheus.Counter
	parquetBytes     prometheus.Gauge
	parquetSpills    prometheus.Counter
	// obsMu serialises adding an observer to a route's copy-on-write list.
	obsMu sync.Mutex
}

func newMetrics(reg prometheus.Registerer, s *Server) (*metrics, error) {
	m := &metrics{
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "snapstore_server_http_request_duration_seconds",
			Help:    "Latency of HTTP requests in seconds, by method, route template and status code (499 when the client went away before the answer was whole); a stream counts until its last byte.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"method", "route", "status"}),
		gcBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_server_gc_bytes_reclaimed_total",
			Help: "Bytes reclaimed by garbage collection, periodic or through POST /v1/datasets/{dataset}/gc (dry runs excluded), by dataset.",
		}, []string{"dataset"}),
		gcCells: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_server_gc_cells_deleted_total",
			Help: "Cells deleted by garbage collection, periodic or through the API (dry runs excluded), by dataset.",
		}, []string{"dataset"}),
		datasetCollect: &datasetCollector{s: s},
		parquetBuilds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_server_parquet_cache_builds_total",
			Help: "Parquet files built for an answer: one per request without the cache, one per key with it.",
		}),
		parquetHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_server_parquet_cache_hits_total",
			Help: "Parquet answers (GET, HEAD, Range) served from a file the cache held or another request's build made.",
		}),
		parquetEvictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_server_parquet_cache_evictions_total",
			Help: "Parquet files removed from the cache, least recently used first, to keep it within parquet_cache.size, the files being built included.",
		}),
		parquetBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snapstore_server_parquet_cache_bytes",
			Help: "Bytes of the whole Parquet files the cache holds; with the files being built, at most parquet_cache.size.",
		}),
		parquetSpills: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_server_parquet_cache_spills_total",
			Help: "Parquet builds that found no room in the cache (a file larger than parquet_cache.size, or the other builds holding the rest) and were served without being kept.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.httpDuration, m.gcBytes, m.gcCells, m.datasetCollect,
		m.parquetBuilds, m.parquetHits, m.parquetEvictions, m.parquetBytes, m.parquetSpills} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observeHTTP(method, route string, status int, d time.Duration) {
	m.httpDuration.WithLabelValues(method, route, strconv.Itoa(status)).Observe(d.Seconds())
}

// datasetCollector reads dataset info at scrape time (a collector rather
// than gauges kept up to date, like tsdb's NewGaugeFunc for loaded blocks):
// the age of each dataset's current version and the time since it was last
// known to match the source, so a stale snapshot can be alerted on, the
// current version and the number of kept versions.
type datasetCollector struct{ s *Server }

var (
	descVersionAge = prometheus.NewDesc("snapstore_server_dataset_current_version_age_seconds",
		"Seconds since the dataset's current version was committed; absent for a dataset with no version.", []string{"dataset"}, nil)
	descCheckedAge = prometheus.NewDesc("snapstore_server_dataset_checked_age_seconds",
		"Seconds since the dataset's current version was last known to match its source: committed, or verified by a run that found nothing changed; absent for a dataset with no version.", []string{"dataset"}, nil)
	descCurrentVersion = prometheus.NewDesc("snapstore_server_dataset_current_version",
		"The dataset's current version (transaction id); 0 when nothing was committed.", []string{"dataset"}, nil)
	descKeptVersions = prometheus.NewDesc("snapstore_server_dataset_kept_versions",
		"Number of committed versions the dataset keeps.", []string{"dataset"}, nil)
	descScrapeErrors = prometheus.NewDesc("snapstore_server_dataset_info_errors",
		"1 when the dataset info could not be read during this scrape, else 0.", nil, nil)
)

func (d *datasetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descVersionAge
	ch <- descCheckedAge
	ch <- descCurrentVersion
	ch <- descKeptVersions
	ch <- descScrapeErrors
}

func (d *datasetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	infos, err := d.s.db.Datasets(ctx)
	if err != nil {
		d.s.log.Warn("reading dataset info for metrics", "err", err)
		ch <- prometheus.MustNewConstMetric(descScrapeErrors, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(descScrapeErrors, prometheus.GaugeValue, 0)
	now := d.s.now()
	for _, info := range infos {
		ch <- prometheus.MustNewConstMetric(descCurrentVersion, prometheus.GaugeValue, float64(info.Current), info.Name)
		ch <- prometheus.MustNewConstMetric(descKeptVersions, prometheus.GaugeValue, float64(info.Versions), info.Name)
		if info.Current != 0 && info.CurrentInfo != nil {
			ch <- prometheus.MustNewConstMetric(descVersionAge, prometheus.GaugeValue, now.Sub(info.CurrentInfo.CommittedAt).Seconds(), info.Name)
			ch <- prometheus.MustNewConstMetric(descCheckedAge, prometheus.GaugeValue, now.Sub(info.CurrentInfo.CheckedAt()).Seconds(), info.Name)
		}
	}
}

// serveMetrics answers GET /metrics: the exposition of Options.Gatherer.
func (s *Server) serveMetrics(c echo.Context) error {
	promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}).ServeHTTP(c.Response(), c.Request())
	return nil
}

// observe records the latency histogram and logs the request at debug.
func (s *Server) observe(c echo.Context, rt *route, d time.Duration) {
	status := c.Response().Status
	if rt != nil {
		rt.observer(s.metrics, status).Observe(d.Seconds())
	} else {
		s.metrics.observeHTTP(methodLabel(c.Request().Method), "unmatched", status, d)
	}
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		label := "unmatched"
		if rt != nil {
			label = rt.label
		}
		s.log.Debug("http request", "method", c.Request().Method, "route", label, "status", status, "bytes", c.Response().Size)
	}
}

// methodLabel is the method label of metrics: the standard methods as
// they are, any other token "other", so that clients cannot add series by
// inventing methods (unknown paths are "unmatched" for the same reason).
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

type statusObserver struct {
	status int
	obs    prometheus.Observer
}

// observer returns the latency observer of the route's status, creating it
// on first use.
func (rt *route) observer(m *metrics, status int) prometheus.Observer {
	if p := rt.obs.Load(); p != nil {
		for _, so := range *p {
			if so.status == status {
				return so.obs
			}
		}
	}
	m.obsMu.Lock()
	defer m.obsMu.Unlock()
	var cur []statusObserver
	if p := rt.obs.Load(); p != nil {
		cur = *p
		for _, so := range cur {
			if so.status == status {
				return so.obs
			}
		}
	}
	o := m.httpDuration.WithLabelValues(rt.method, rt.label, strconv.Itoa(status))
	next := append(cur[:len(cur):len(cur)], statusObserver{status, o})
	rt.obs.Store(&next)
	return o
}
