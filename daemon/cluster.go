package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/cluster/placement"
	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/server"
	"log/slog"
	"net/http"
	"slices"
	"strings"
)

// openCluster starts this node's membership, advertising the bound listen
// address (or advertise_api) and the bound transfer address xferListen
// (or cluster.transfer.advertise; none when empty); apiTLS, when not nil,
// makes its calls to the other nodes' APIs go over HTTPS.
func openCluster(ctx context.Context, cfg *config.Config, version, listen, xferListen string, apiTLS *tls.Config, log *slog.Logger, reg prometheus.Registerer) (*cluster.Membership, error) {
	api, err := config.APIAddress(cfg.Cluster, listen)
	if err != nil {
		return nil, &config.KeyError{Key: "cluster.advertise_api", Err: err}
	}
	xfer := ""
	if xferListen != "" {
		if xfer, err = config.TransferAddress(cfg.Cluster, xferListen); err != nil {
			return nil, &config.KeyError{Key: "cluster.transfer.advertise", Err: err}
		}
	}
	mc, err := cfg.MembershipConfig(api, xfer, log, reg)
	if err != nil {
		return nil, &config.KeyError{Key: "cluster.gossip_key_file", Err: err}
	}
	mc.Version = version
	mc.APITLS = apiTLS
	m, err := cluster.Open(ctx, mc)
	if err != nil {
		return nil, fmt.Errorf("joining the cluster (cluster.bind %s): %w", cfg.Cluster.Bind, err)
	}
	return m, nil
}

// clusterView is the cluster as the server sees it (server.Cluster): the
// membership, the placement, and the adapters service for this node's
// runs in progress. It turns package cluster's errors into the server's.
type clusterView struct {
	m   *cluster.Membership
	p   *placement.Placement
	svc *adapters.Service
}

func (v clusterView) Nodes() []server.ClusterNode {
	ns := v.m.Nodes()
	out := make([]server.ClusterNode, len(ns))
	for i, n := range ns {
		out[i] = server.ClusterNode{
			ID: n.ID, Address: n.Addr, State: n.State.String(), Since: n.Since.UTC(),
			Self: n.Self, Tags: n.RawTags, API: n.Tags.API, Weight: n.Tags.Weight, Zone: n.Tags.Zone,
			RunsInProgress: n.Tags.Runs,
		}
		if n.Self {
			out[i].RunsInProgress = v.svc.RunsInProgress()
		}
		if !n.LastHeard.IsZero() {
			t := n.LastHeard.UTC()
			out[i].LastHeard = &t
		}
		if !n.FailingSince.IsZero() {
			t := n.FailingSince.UTC()
			out[i].FailingSince = &t
		}
		if out[i].Tags == nil {
			out[i].Tags = map[string]string{}
		}
		v.addRecorded(&out[i])
	}
	// Entries of the node list that the membership no longer shows (serf
	// reaps a failed member after cluster.reconnect_timeout): still there
	// until forgotten.
	for _, r := range v.p.Records() {
		if slices.ContainsFunc(out, func(n server.ClusterNode) bool { return n.ID == r.ID }) {
			continue
		}
		n := server.ClusterNode{ID: r.ID, Address: r.Addr, State: r.State.String(), Since: r.LastHeard.UTC(),
			API: r.API, Weight: r.Weight, Zone: r.Zone, Tags: map[string]string{}}
		v.addRecorded(&n)
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b server.ClusterNode) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// addRecorded adds n's entry of the node list and its config mismatches
// with this node.
func (v clusterView) addRecorded(n *server.ClusterNode) {
	if r, ok := v.p.Recorded(n.ID); ok {
		n.Recorded = &server.RecordedNode{State: r.State.String(), LastHeard: r.LastHeard.UTC()}
	}
	for _, m := range v.p.Mismatches(n.ID) {
		n.ConfigMismatches = append(n.ConfigMismatches, server.ConfigMismatch{Kind: m.Kind, Name: m.Name, Problem: m.Problem, Nodes: m.Nodes})
	}
}

// serverError wraps package cluster's errors in the server's, which give
// their status and code.
func serverError(err error) error {
	for _, m := range []struct{ from, to error }{
		{cluster.ErrNotMember, server.ErrNodeNotFound},
		{cluster.ErrNodeAlive, server.ErrNodeAlive},
		{cluster.ErrNodeNotAlive, server.ErrNodeNotAlive},
		{cluster.ErrNoGossipKey, server.ErrNoGossipKeyCredential},
		{cluster.ErrNoAnswer, adapters.ErrNodeUnreachable},
		{cluster.ErrNoCredential, server.ErrClusterCredential},
		{cluster.ErrBadCredential, server.ErrClusterCredential},
	} {
		if errors.Is(err, m.from) {
			return fmt.Errorf("%w: %w", m.to, err)
		}
	}
	return err
}

func (v clusterView) VerifyRequest(r *http.Request, body []byte) (string, error) {
	id, err := v.m.VerifyRequest(r, body)
	return id, serverError(err)
}

func (v clusterView) Drain(ctx context.Context, id string) error {
	return serverError(v.m.Drain(ctx, id))
}

func (v clusterView) Resume(ctx context.Context, id string) error {
	return serverError(v.m.Resume(ctx, id))
}

func (v clusterView) Forget(ctx context.Context, id string) error {
	return serverError(v.p.Forget(ctx, id))
}

func (v clusterView) Owns(name string) bool {
	owner, ok := v.p.Owner(name)
	return ok && owner == v.m.ID()
}

func (v clusterView) Keys(ctx context.Context) (server.KeyringReport, error) {
	rep, err := v.m.ListKeys()
	return keyringReport(rep), keyringError(err)
}

func (v clusterView) KeyOp(ctx context.Context, op, key string) (server.KeyringReport, error) {
	var rep cluster.KeyringReport
	var err error
	switch op {
	case "install":
		rep, err = v.m.InstallKey(key)
	case "use":
		rep, err = v.m.UseKey(key)
	case "remove":
		rep, err = v.m.RemoveKey(key)
	default:
		return server.KeyringReport{}, fmt.Errorf("%w: unknown keyring operation %q", server.ErrKeyring, op)
	}
	if err != nil {
		return keyringReport(rep), keyringError(err)
	}
	// serf's answer to a change holds no key list: the keys as they are
	// now, when every node answers the listing in time.
	if now, err := v.Keys(ctx); err == nil {
		return now, nil
	}
	return keyringReport(rep), nil
}

// keyringError marks a keyring operation's error: server.ErrGossipNotEncrypted
// on a cluster without a gossip key, server.ErrKeyring otherwise.
func keyringError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cluster.ErrNotEncrypted):
		return fmt.Errorf("%w: %w", server.ErrGossipNotEncrypted, err)
	}
	return fmt.Errorf("%w: %w", server.ErrKeyring, err)
}

// keyringReport converts a keyring report.
func keyringReport(r cluster.KeyringReport) server.KeyringReport {
	out := server.KeyringReport{Nodes: r.Nodes, Responses: r.Responses, Errors: r.Errors, Keys: r.Keys, Primary: r.Primary, Messages: r.Messages}
	if out.Keys == nil {
		out.Keys = map[string]int{}
	}
	if out.Primary == nil {
		out.Primary = map[string]int{}
	}
	return out
}
