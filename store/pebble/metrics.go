package pebble

import (
	"github.com/prometheus/client_golang/prometheus"
)

// registerMetrics registers the store's derived metrics on s.reg (if any).
// Every metric reads db.Metrics() at scrape time (NewGaugeFunc, as
// Prometheus tsdb does for loaded blocks) and reads 0 once the store is
// closed.
//
//	snapstore_pebble_disk_usage_bytes        gauge    bytes of every file Pebble owns (sstables, WAL, manifest)
//	snapstore_pebble_memtable_bytes          gauge    bytes allocated by memtables
//	snapstore_pebble_read_amplification      gauge    sublevels + levels a point read may touch (L0 sublevels count one each)
//	snapstore_pebble_block_cache_bytes       gauge    bytes in use by the block cache
//	snapstore_pebble_block_cache_reserved_bytes gauge bytes of the block cache reserved by readers (ReserveCache)
//	snapstore_pebble_block_cache_hits_total  counter  block cache hits
//	snapstore_pebble_block_cache_misses_total counter block cache misses
//	snapstore_pebble_compactions_total       counter  compactions finished
//	snapstore_pebble_flushes_total           counter  memtable flushes finished
func (s *Store) registerMetrics() error {
	if s.reg == nil {
		return nil
	}
	read := func(f func(m *metricsView) float64) func() float64 {
		return func() float64 {
			s.mu.RLock()
			defer s.mu.RUnlock()
			if s.closed {
				return 0
			}
			m := s.db.Metrics()
			return f(&metricsView{
				disk:       float64(m.DiskSpaceUsage()),
				memtable:   float64(m.MemTable.Size),
				readAmp:    float64(m.ReadAmp()),
				cacheBytes: float64(m.BlockCache.Size),
				hits:       float64(m.BlockCache.Hits),
				misses:     float64(m.BlockCache.Misses),
				compacts:   float64(m.Compact.Count),
				flushes:    float64(m.Flush.Count),
			})
		}
	}
	gauge := func(name, help string, f func(m *metricsView) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, read(f))
	}
	counter := func(name, help string, f func(m *metricsView) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, read(f))
	}
	colls := []prometheus.Collector{
		gauge("snapstore_pebble_disk_usage_bytes", "Bytes of every file the Pebble store owns (sstables, WAL, manifest).", func(m *metricsView) float64 { return m.disk }),
		gauge("snapstore_pebble_memtable_bytes", "Bytes allocated by Pebble memtables.", func(m *metricsView) float64 { return m.memtable }),
		gauge("snapstore_pebble_read_amplification", "Number of sublevels and levels a Pebble point read may touch.", func(m *metricsView) float64 { return m.readAmp }),
		gauge("snapstore_pebble_block_cache_bytes", "Bytes in use by the Pebble block cache.", func(m *metricsView) float64 { return m.cacheBytes }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "snapstore_pebble_block_cache_reserved_bytes", Help: "Bytes of the Pebble block cache reserved by readers beside it (an export's batches)."},
			func() float64 { return float64(s.resv.reserved()) }),
		counter("snapstore_pebble_block_cache_hits_total", "Pebble block cache hits.", func(m *metricsView) float64 { return m.hits }),
		counter("snapstore_pebble_block_cache_misses_total", "Pebble block cache misses.", func(m *metricsView) float64 { return m.misses }),
		counter("snapstore_pebble_compactions_total", "Pebble compactions finished.", func(m *metricsView) float64 { return m.compacts }),
		counter("snapstore_pebble_flushes_total", "Pebble memtable flushes finished.", func(m *metricsView) float64 { return m.flushes }),
	}
	for i, c := range colls {
		if err := s.reg.Register(c); err != nil {
			for _, r := range colls[:i] {
				s.reg.Unregister(r)
			}
			return err
		}
	}
	s.colls = colls
	return nil
}

// metricsView holds the figures of one db.Metrics() call.
type metricsView struct {
	disk, memtable, readAmp, cacheBytes, hits, misses, compacts, flushes float64
}
