package console

import (
	"net/http"
	"slices"

	"github.com/snapstore/snapstore/server"
)

// The cluster page: the members as this node sees them and, beside each,
// a bar of what waits on this node to be sent to it (the backlog of
// partitioned runs), refreshed every few seconds; then the backlog by
// dataset. It reads what GET /v1/cluster/nodes and GET
// /v1/cluster/backlog answer.

// clusterRow is one node of the cluster page.
type clusterRow struct {
	Node    server.ClusterNode
	Member  bool // false for a backlog whose node is no member any more
	Backlog server.NodeBacklog
	// Width is the bar's length in percent of the largest backlog (in
	// bytes); Spilled the part of the bar on disk, in percent of the bar.
	Width, Spilled int
}

// clusterView is the cluster page's data.
type clusterView struct {
	Rows    []clusterRow
	Backlog server.TransferBacklog
}

// clusterPage answers GET /ui/cluster.
func (c *console) clusterPage(w http.ResponseWriter, r *http.Request, v viewer) error {
	if c.s.cluster == nil {
		return server.ErrNotClustered
	}
	bl := c.s.Backlog()
	byNode := map[string]server.NodeBacklog{}
	largest := int64(0)
	for _, n := range bl.Nodes {
		byNode[n.Node] = n
		largest = max(largest, n.Bytes)
	}
	var rows []clusterRow
	for _, n := range c.s.cluster.Nodes() {
		b, ok := byNode[n.ID]
		delete(byNode, n.ID)
		if !ok {
			b = server.NodeBacklog{Node: n.ID}
		}
		rows = append(rows, clusterRow{Node: n, Member: true, Backlog: b})
	}
	for _, b := range bl.Nodes {
		if _, gone := byNode[b.Node]; gone {
			rows = append(rows, clusterRow{Node: server.ClusterNode{ID: b.Node}, Backlog: b})
		}
	}
	for i := range rows {
		b := &rows[i].Backlog
		if largest > 0 && b.Bytes > 0 {
			rows[i].Width = max(1, int(100*b.Bytes/largest))
			rows[i].Spilled = int(100 * b.SpilledBytes / b.Bytes)
		}
	}
	slices.SortStableFunc(rows, func(a, b clusterRow) int {
		if a.Member != b.Member {
			if a.Member {
				return -1
			}
			return 1
		}
		return 0
	})
	return c.render(w, r, http.StatusOK, "cluster", v, clusterView{Rows: rows, Backlog: bl})
}
