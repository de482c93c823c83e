package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// Cluster is the membership the cluster routes answer from: package
// cluster's Membership, adapted by cmd/snapstore (server and cluster share
// a layer and do not import each other). Nodes must not block: it reads
// the membership's in-memory view.
type Cluster interface {
	Nodes() []ClusterNode
}

// ClusterNode is one member as the answering node sees it: the wire form
// of GET /v1/cluster/nodes.
type ClusterNode struct {
	// ID is the node's stable id.
	ID string `json:"id"`
	// Address is its advertised gossip address, host:port.
	Address string `json:"address"`
	// State is joining, active, draining, failed or left; Since is when it
	// entered it.
	State string    `json:"state"`
	Since time.Time `json:"since"`
	// LastHeard is when serf last reported it alive (the time of the
	// answer for a member alive now); absent when never heard.
	LastHeard *time.Time `json:"last_heard,omitempty"`
	// FailingSince is when serf reported it failed, while serf still does;
	// the state turns failed once the confirmation delay has passed.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	// Self marks the answering node.
	Self bool `json:"self"`
	// Tags are the node's serf tags (api, w, zone, v, inc, st).
	Tags map[string]string `json:"tags"`
}

// errNotClustered refuses the cluster routes on a node that runs alone.
var errNotClustered = errors.New("server: this node runs alone (no cluster.bind in its configuration)")

// clusterNodes answers GET /v1/cluster/nodes: every member the answering
// node knows, itself included, ordered by id.
func (s *Server) clusterNodes(c echo.Context) error {
	if s.cluster == nil {
		return errNotClustered
	}
	nodes := s.cluster.Nodes()
	if nodes == nil {
		nodes = []ClusterNode{}
	}
	return c.JSON(http.StatusOK, map[string]any{"nodes": nodes})
}
