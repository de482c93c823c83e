package transfer

import (
	"cmp"
	"slices"
	"time"
)

// Backlog is what waits to be sent to other nodes (X8): per destination
// node, and in it per dataset, the rows and bytes of batches queued in
// memory, spilled to disk, or written and not yet answered. A run's
// batches leave the backlog when their owner answers them.
type Backlog struct {
	// Nodes lists the destinations this node has sent to, by id.
	Nodes []NodeBacklog
	// MemoryBytes is the bytes of batches held in memory by every queue.
	MemoryBytes int64
}

// NodeBacklog is the backlog for one destination node.
type NodeBacklog struct {
	Node string
	// Rows and Bytes wait for the node (bytes as sent: encoded,
	// compressed); Batches counts them.
	Rows, Bytes, Batches int64
	// SpilledBytes is the part of Bytes held on disk only.
	SpilledBytes int64
	// Connections is the count of open connections to the node.
	Connections int
	// DownSince is when dialling the node first failed while none was
	// open; zero while it is reachable. LastError is the last dial error.
	DownSince time.Time
	LastError string
	// Datasets splits the backlog by dataset, by name.
	Datasets []DatasetBacklog
}

// DatasetBacklog is one dataset's share of a node's backlog.
type DatasetBacklog struct {
	Dataset              string
	Rows, Bytes, Batches int64
}

// Backlog returns the backlog now.
func (t *Transport) Backlog() Backlog {
	t.mu.Lock()
	peers := make([]*peer, 0, len(t.peers))
	for _, p := range t.peers {
		peers = append(peers, p)
	}
	t.mu.Unlock()
	b := Backlog{MemoryBytes: t.mem.Load()}
	for _, p := range peers {
		nb := NodeBacklog{Node: p.id}
		ds := map[string]*DatasetBacklog{}
		add := func(dataset string, rows, bytes, batches int64) {
			d := ds[dataset]
			if d == nil {
				d = &DatasetBacklog{Dataset: dataset}
				ds[dataset] = d
			}
			d.Rows += rows
			d.Bytes += bytes
			d.Batches += batches
			nb.Rows += rows
			nb.Bytes += bytes
			nb.Batches += batches
		}
		for _, l := range p.lanes {
			l.mu.Lock()
			for _, q := range l.queues {
				if q.acked < q.n {
					add(q.run.key.Dataset, q.rows, q.bytes, int64(q.n-q.acked))
					nb.SpilledBytes += q.spilledLocked()
				}
			}
			fws := slices.Clone(l.fwd)
			for _, f := range l.inflight {
				if f.fw != nil {
					fws = append(fws, f.fw)
				}
			}
			for _, fw := range fws {
				add(fw.stream.Dataset, int64(fw.rows), int64(len(fw.frame)), 1)
			}
			l.mu.Unlock()
		}
		p.mu.Lock()
		nb.Connections, nb.DownSince, nb.LastError = p.conns, p.downSince, p.lastErr
		p.mu.Unlock()
		for _, d := range ds {
			nb.Datasets = append(nb.Datasets, *d)
		}
		slices.SortFunc(nb.Datasets, func(a, b DatasetBacklog) int { return cmp.Compare(a.Dataset, b.Dataset) })
		b.Nodes = append(b.Nodes, nb)
	}
	slices.SortFunc(b.Nodes, func(a, b NodeBacklog) int { return cmp.Compare(a.Node, b.Node) })
	return b
}
