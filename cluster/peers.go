package cluster

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Rejoining after a crash.
//
// serf's snapshot (serf.Config.SnapshotPath) records the members a node
// knew, but through a buffered writer that is flushed only when a later
// line is appended at least 500 ms after the previous flush, or at a
// graceful leave or shutdown. In a quiet cluster the lines of the last
// joins can stay in the buffer for good, and a node killed then (SIGKILL,
// a power cut) restarts knowing nobody. So the membership also keeps the
// peers file: the gossip addresses of every member this node knows and
// that did not leave, rewritten durably (write, sync, rename) whenever
// that set changes, by a goroutine of its own (K5). Open joins them, with
// cluster.Join, so a restarted node rejoins on its own after a crash too.

// peersFile is the peers file in the data directory.
const peersFile = "cluster/peers.json"

// peer is one entry of the peers file.
type peer struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// loadPeers reads the peers file; none is no peers.
func loadPeers(dir string) ([]peer, error) {
	b, err := os.ReadFile(filepath.Join(dir, peersFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: reading the peers file: %w", err)
	}
	var f struct {
		Peers []peer `json:"peers"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("cluster: decoding the peers file %s: %v", filepath.Join(dir, peersFile), err)
	}
	return f.Peers, nil
}

// peersOf returns the peers to record from a member list: every member
// but this node and those that left, ordered by id.
func peersOf(nodes []Node) []peer {
	var out []peer
	for _, n := range nodes {
		if !n.Self && n.State != Left && n.Addr != "" {
			out = append(out, peer{ID: n.ID, Addr: n.Addr})
		}
	}
	slices.SortFunc(out, func(a, b peer) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// persistLoop rewrites the peers file whenever the set of peers changed,
// woken through m.persistc; it stops at Close. A write error is logged and
// retried at the next change.
func (m *Membership) persistLoop() {
	defer m.wg.Done()
	path := filepath.Join(m.cfg.DataDir, peersFile)
	var last []byte
	if b, err := os.ReadFile(path); err == nil {
		last = b
	}
	for {
		select {
		case <-m.stopc:
			return
		case <-m.persistc:
		}
		b, _ := json.MarshalIndent(struct {
			Peers []peer `json:"peers"`
		}{peersOf(m.Nodes())}, "", "  ")
		if bytes.Equal(b, last) {
			continue
		}
		if err := writeFileAtomic(path, b, 0o600); err != nil {
			m.log.Warn("writing the peers file", "file", path, "err", err)
			continue
		}
		last = b
	}
}
