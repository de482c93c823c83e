package placement

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster"
)

// Handing a run to another node (adapters.L5): a POST of the hand-off to
// the node's HTTP API, at the address it advertises in its api tag, signed
// with the cluster credential (cluster.K8). The node starts the run and answers
// 202 with its record, or a problem whose code says whether the run may
// go elsewhere (adapters.ErrNodeUnreachable, ErrNodeDraining) or was
// refused as such (ErrRunInProgress, ErrAdapterNotFound, ...).

// HandOffPath is the route of the API that takes a run handed by another
// node.
const HandOffPath = "/v1/cluster/runs"

// handOffClient sends hand-offs.
type handOffClient struct {
	m  *cluster.Membership
	hc *http.Client
}

func newHandOffClient(m *cluster.Membership) *handOffClient {
	// No redirect is followed: the request is signed with the cluster's
	// key, which would go with it wherever a redirect points.
	hc := &http.Client{Timeout: m.Config().HandOffTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if m.Config().APITLS != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = m.Config().APITLS
		hc.Transport = tr
	}
	return &handOffClient{m: m, hc: hc}
}

// scheme is how the other nodes' APIs are called: https when this node
// has a client TLS configuration for them (cluster.Config.APITLS).
func (c *handOffClient) scheme() string {
	if c.m.Config().APITLS != nil {
		return "https"
	}
	return "http"
}

// HandOff asks node to start run h (adapters.Cluster).
func (p *Placement) HandOff(ctx context.Context, node string, h adapters.HandOff) (adapters.RunRecord, error) {
	return p.h.send(ctx, node, h)
}

// problem is what a node answers when it refuses a hand-off.
type problem struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// moveOnCodes are the problem codes of a node that cannot take a run now,
// so that the run may go to another node: stopping, draining, a store it
// cannot write, a credential it does not accept.
var moveOnCodes = map[string]bool{
	"shutting_down": true, "closed": true, "store_unavailable": true, "timeout": true, "canceled": true,
	"read_only": true, "unauthorized": true, "forbidden": true,
	"node_unreachable": true,
}

// send posts h to node's API.
func (c *handOffClient) send(ctx context.Context, node string, h adapters.HandOff) (adapters.RunRecord, error) {
	n, ok := c.m.Node(node)
	if !ok || n.Tags.API == "" {
		return adapters.RunRecord{}, fmt.Errorf("%w: node %s is not a member with an API address", adapters.ErrNodeUnreachable, node)
	}
	body, err := json.Marshal(h)
	if err != nil {
		return adapters.RunRecord{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.m.Config().HandOffTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.scheme()+"://"+n.Tags.API+HandOffPath, bytes.NewReader(body))
	if err != nil {
		return adapters.RunRecord{}, fmt.Errorf("%w: node %s: %v", adapters.ErrNodeUnreachable, node, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if err := c.m.SignRequest(req, body); err != nil && !errors.Is(err, cluster.ErrNoGossipKey) {
		return adapters.RunRecord{}, err
	}
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return adapters.RunRecord{}, fmt.Errorf("%w: node %s at %s: %v", adapters.ErrNodeUnreachable, node, n.Tags.API, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return adapters.RunRecord{}, fmt.Errorf("%w: node %s: reading its answer: %v", adapters.ErrNodeUnreachable, node, err)
	}
	if resp.StatusCode == http.StatusAccepted {
		var rec adapters.RunRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return adapters.RunRecord{}, fmt.Errorf("node %s took run %s but its answer does not decode: %v", node, h.RunID, err)
		}
		c.m.Logger().Debug("run handed off", "node", node, "run", h.RunID, "adapter", h.Adapter, "took", time.Since(start))
		return rec, nil
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return adapters.RunRecord{}, fmt.Errorf("%w: node %s at %s answered %d with a redirect to %q, which is not followed (the signed hand-off would go with it): its api address must be the node's own",
			adapters.ErrNodeUnreachable, node, n.Tags.API, resp.StatusCode, resp.Header.Get("Location"))
	}
	var p problem
	if json.Unmarshal(b, &p) != nil || p.Code == "" {
		p = problem{Status: resp.StatusCode, Code: "http_error", Detail: http.StatusText(resp.StatusCode)}
	}
	refused := fmt.Errorf("node %s refused run %s of adapter %q: %s (%d %s)", node, h.RunID, h.Adapter, p.Detail, resp.StatusCode, p.Code)
	switch {
	case p.Code == "node_draining":
		return adapters.RunRecord{}, fmt.Errorf("%w: %w", adapters.ErrNodeDraining, refused)
	case p.Code == "run_in_progress":
		return adapters.RunRecord{}, fmt.Errorf("%w: %w", adapters.ErrRunInProgress, refused)
	case p.Code == "adapter_not_found":
		return adapters.RunRecord{}, fmt.Errorf("%w: %w", adapters.ErrAdapterNotFound, refused)
	case moveOnCodes[p.Code] || resp.StatusCode >= 500:
		return adapters.RunRecord{}, fmt.Errorf("%w: %w", adapters.ErrNodeUnreachable, refused)
	}
	return adapters.RunRecord{}, refused
}
