package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
)

// Cluster is the cluster this node is a member of, as the cluster routes
// use it: package cluster's Membership and Placement, adapted by
// package daemon (server and cluster share a layer and do not import each
// other), which also turns package cluster's errors into this package's
// (ErrNodeNotFound, ErrNodeAlive, ErrNodeNotAlive, ErrClusterCredential).
// Nodes must not block: it reads the membership's in-memory view and the
// node list last read from HBase.
type Cluster interface {
	// Nodes returns every member this node knows, itself included,
	// ordered by id.
	Nodes() []ClusterNode
	// VerifyRequest checks the cluster credential of r, whose body is
	// body, and returns the signing node's id; ErrClusterCredential.
	VerifyRequest(r *http.Request, body []byte) (string, error)
	// Drain makes node id declare itself draining; Resume active again.
	Drain(ctx context.Context, id string) error
	Resume(ctx context.Context, id string) error
	// Forget removes a node that will not come back from the cluster and
	// from the node list; ErrNodeAlive while serf sees it alive.
	Forget(ctx context.Context, id string) error
	// Owns reports whether this node owns name (weighted rendezvous over
	// the active nodes): the periodic GC of a dataset runs on the owner of
	// the dataset's name alone. It must not block.
	Owns(name string) bool
	// Keys lists the gossip keys of every member by fingerprint;
	// KeyOp installs, uses (makes primary) or removes a key on every
	// member.
	Keys(ctx context.Context) (KeyringReport, error)
	KeyOp(ctx context.Context, op, key string) (KeyringReport, error)
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
	// API is the node's HTTP API address; Weight and Zone its placement
	// weight and failure zone.
	API    string `json:"api,omitempty"`
	Weight int    `json:"weight,omitempty"`
	Zone   string `json:"zone,omitempty"`
	// RunsInProgress counts the runs the node is running, as it last
	// told.
	RunsInProgress int `json:"runs_in_progress"`
	// Recorded is the node's entry in the node list kept in HBase: the
	// state it last recorded and when it last wrote; absent for a member
	// not recorded (yet).
	Recorded *RecordedNode `json:"recorded,omitempty"`
	// ConfigMismatches lists the config-file definitions that this node
	// and that node define differently, or only one of them defines.
	ConfigMismatches []ConfigMismatch `json:"config_mismatches"`
	// Tags are the node's serf tags (api, w, zone, v, inc, st, run).
	Tags map[string]string `json:"tags"`
}

// RecordedNode is a node's entry in the node list.
type RecordedNode struct {
	State     string    `json:"state"`
	LastHeard time.Time `json:"last_heard"`
}

// ConfigMismatch is one config-file definition that two nodes do not
// share: Kind is connection or adapter; Problem is "differs" (both define
// it, differently) or "missing" (one of them does not define it); Nodes
// are the ids of the nodes that define it.
type ConfigMismatch struct {
	Kind    string   `json:"kind"`
	Name    string   `json:"name"`
	Problem string   `json:"problem"`
	Nodes   []string `json:"nodes"`
}

// KeyringReport is the cluster's answer to a keyring operation: how many
// nodes answered and, per key fingerprint (never the key), how many hold
// it and how many use it as primary key.
type KeyringReport struct {
	Nodes     int               `json:"nodes"`
	Responses int               `json:"responses"`
	Errors    int               `json:"errors"`
	Keys      map[string]int    `json:"keys"`
	Primary   map[string]int    `json:"primary"`
	Messages  map[string]string `json:"messages,omitempty"`
}

// Errors of the cluster routes; package daemon wraps package cluster's
// errors in them.
var (
	// ErrNodeNotFound: no member of that id.
	ErrNodeNotFound = errors.New("server: no cluster node of that id")
	// ErrNodeAlive: forget of a node serf sees alive; drain it and stop
	// it first.
	ErrNodeAlive = errors.New("server: the cluster node is alive")
	// ErrNodeNotAlive: drain or resume of a node that is failed or left.
	ErrNodeNotAlive = errors.New("server: the cluster node is not alive")
	// ErrClusterCredential: a cluster route called without a valid
	// cluster credential.
	ErrClusterCredential = errors.New("server: bad cluster credential")
	// ErrKeyring: a keyring operation that some nodes refused; the
	// problem's messages hold each one's answer (withMessages).
	ErrKeyring = errors.New("server: gossip keyring operation failed")
	// ErrGossipNotEncrypted: a keyring operation on a cluster whose gossip
	// is not encrypted: there is no keyring to list or change.
	ErrGossipNotEncrypted = errors.New("server: gossip encryption is not enabled")
)

// ErrNotClustered refuses the cluster routes on a node that runs alone.
var ErrNotClustered = errors.New("server: this node runs alone (no cluster.bind in its configuration)")

// authorizeNode checks the cluster credential of a request to a route
// only nodes may call (role cluster): a valid credential, or, in a
// cluster without a gossip key, no credential on a server without tokens
// (loopback only, as every route then).
func (s *Server) authorizeNode(c echo.Context) error {
	r := c.Request()
	if s.cluster == nil {
		// No credential at all is the first thing wrong with the request
		// (the route requires one), whether or not this node is clustered.
		if r.Header.Get(echo.HeaderAuthorization) == "" {
			return echo.NewHTTPError(http.StatusUnauthorized, "this route takes a cluster node's credential, and this node runs alone")
		}
		return ErrNotClustered
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", mbe.Limit))
		}
		return BadField("body", "reading the body: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	node, err := s.cluster.VerifyRequest(r, body)
	if err != nil {
		if !s.tokens.enabled() && errors.Is(err, ErrNoGossipKeyCredential) {
			return nil
		}
		if tok, ok := s.tokens.lookup(r.Header.Get(echo.HeaderAuthorization)); ok {
			c.Set("token", tok.Name)
			return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("token %q has role %s; only cluster nodes call this route, with the cluster credential", tok.Name, tok.Role))
		}
		return echo.NewHTTPError(http.StatusUnauthorized, "this route takes a cluster node's credential: "+err.Error())
	}
	c.Set("token", "node:"+node)
	return nil
}

// ErrNoGossipKeyCredential marks a credential error of a cluster without
// a gossip key, where nodes cannot sign requests.
var ErrNoGossipKeyCredential = errors.New("server: the cluster has no gossip key, hence no cluster credential")

// clusterOf returns the cluster, or ErrNotClustered.
func (s *Server) clusterOf() (Cluster, error) {
	if s.cluster == nil {
		return nil, ErrNotClustered
	}
	return s.cluster, nil
}

// clusterNodes answers GET /v1/cluster/nodes: every member the answering
// node knows, itself included, ordered by id.
func (s *Server) clusterNodes(c echo.Context) error {
	cl, err := s.clusterOf()
	if err != nil {
		return err
	}
	nodes := cl.Nodes()
	if nodes == nil {
		nodes = []ClusterNode{}
	}
	for i := range nodes {
		if nodes[i].ConfigMismatches == nil {
			nodes[i].ConfigMismatches = []ConfigMismatch{}
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"nodes": nodes})
}

// clusterAndID returns the cluster and the node id of the path.
func (s *Server) clusterAndID(c echo.Context) (Cluster, string, error) {
	cl, err := s.clusterOf()
	if err != nil {
		return nil, "", err
	}
	id, err := pathParam(c, "id")
	return cl, id, err
}

// clusterNode finds node id among the members.
func clusterNode(cl Cluster, id string) (ClusterNode, error) {
	for _, n := range cl.Nodes() {
		if n.ID == id {
			return n, nil
		}
	}
	return ClusterNode{}, fmt.Errorf("%w: %q", ErrNodeNotFound, id)
}

// drainNode answers POST /v1/cluster/nodes/{id}/drain: the node declares
// itself draining (it takes no new run and owns nothing) and finishes
// what it runs; the answer is the node as it is then.
func (s *Server) drainNode(c echo.Context) error {
	return s.declareNode(c, Cluster.Drain, "draining")
}

// resumeNode answers DELETE /v1/cluster/nodes/{id}/drain: a draining node
// becomes active again.
func (s *Server) resumeNode(c echo.Context) error {
	return s.declareNode(c, Cluster.Resume, "active")
}

// declareNode runs a drain or a resume of the node of the path, which
// then declares state.
func (s *Server) declareNode(c echo.Context, do func(Cluster, context.Context, string) error, state string) error {
	cl, id, err := s.clusterAndID(c)
	if err != nil {
		return err
	}
	if _, err := clusterNode(cl, id); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 30*time.Second)
	defer cancel()
	if err := do(cl, ctx, id); err != nil {
		return err
	}
	s.log.Info("cluster node state changed", "node", id, "route", c.Path(), "method", c.Request().Method, TokenAttr(c.Get("token")))
	// The new state spreads by gossip: answer with what the node asked
	// for, as this node will see it shortly.
	n, err := clusterNode(cl, id)
	if err != nil {
		return err
	}
	n.State = state
	return c.JSON(http.StatusOK, n)
}

// forgetNode answers DELETE /v1/cluster/nodes/{id}: removes a node that
// will not come back (failed or left) from serf and from the node list;
// its share moves to the others. 409 node_alive while serf sees it alive.
func (s *Server) forgetNode(c echo.Context) error {
	cl, id, err := s.clusterAndID(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 30*time.Second)
	defer cancel()
	if err := cl.Forget(ctx, id); err != nil {
		return err
	}
	s.log.Warn("cluster node forgotten", "node", id, TokenAttr(c.Get("token")))
	return c.NoContent(http.StatusNoContent)
}

// listKeys answers GET /v1/cluster/keys: the gossip keys of every member,
// by fingerprint.
func (s *Server) listKeys(c echo.Context) error {
	cl, err := s.clusterOf()
	if err != nil {
		return err
	}
	rep, err := cl.Keys(c.Request().Context())
	if err != nil {
		return withMessages(err, rep.Messages)
	}
	return c.JSON(http.StatusOK, rep)
}

// keyOp answers POST /v1/cluster/keys/{op} (install, use, remove) with
// body {"key": base64}: the operation on every member's keyring.
func (s *Server) keyOp(c echo.Context) error {
	cl, err := s.clusterOf()
	if err != nil {
		return err
	}
	op, err := pathParam(c, "op")
	if err != nil {
		return err
	}
	var in struct {
		Key string `json:"key"`
	}
	if err := decodeBody(c, &in, true); err != nil {
		return err
	}
	if k, err := base64.StdEncoding.DecodeString(in.Key); err != nil || (len(k) != 16 && len(k) != 24 && len(k) != 32) {
		return BadField("body.key", "want a base64 key of 16, 24 or 32 bytes (snapstore cluster keygen)")
	}
	rep, err := cl.KeyOp(c.Request().Context(), op, in.Key)
	if err != nil {
		return withMessages(err, rep.Messages)
	}
	s.log.Info("gossip keyring changed", "op", op, TokenAttr(c.Get("token")))
	return c.JSON(http.StatusOK, rep)
}

// takeRun answers POST /v1/cluster/runs, which only cluster nodes call:
// starts on this node a run that another node placed here
// (adapters.L5), 202 with its record.
func (s *Server) takeRun(c echo.Context) error {
	var h adapters.HandOff
	if err := decodeBody(c, &h, true); err != nil {
		return err
	}
	rec, err := s.svc.TakeRun(c.Request().Context(), h)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/v1/runs/"+rec.ID)
	return c.JSON(http.StatusAccepted, rec)
}
