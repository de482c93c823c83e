package adapters

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/snapstore/snapstore/api"
)

// Definitions across a cluster. Every node of a cluster keeps the API
// definitions in memory, read from the metadata table that the nodes
// share. A change made through one node's API is written there first, then
// announced (Cluster.DefinitionsChanged: a serf user event, a hint); the
// other nodes reread the table on the hint, and every node also rereads
// it periodically, so that a hint lost on the way delays a change but
// never loses it (A5).
//
//	A5 Reload makes memory equal to the stored API definitions: created,
//	   replaced (another revision or update time) and deleted ones are
//	   applied as the local API applies them: a replaced or dropped
//	   connection's handle is retired (N1), an adapter's schedule follows
//	   (C4). A local change made while a reload read the table makes that
//	   reload read again, so a reload never puts back what this node just
//	   changed.

// changedLocked records a local change of a definition of kind, name,
// and announces it to the cluster. Caller holds s.mu.
func (s *Service) changedLocked(kind defKind, name string) {
	s.defsGen++
	s.indexAuditReadsLocked()
	if s.cluster != nil {
		s.cluster.DefinitionsChanged(kind.noun, name)
	}
}

// Reload rereads the API definitions from the metadata table and applies
// what another node changed (A5). It reports how many definitions
// changed.
func (s *Service) Reload(ctx context.Context) (int, error) {
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		gen := s.defsGen
		s.mu.Unlock()
		conns, err := readDefinitions(ctx, s.db, s.log, connectionKind, s.parseStoredConnection)
		if err != nil {
			return 0, err
		}
		ads, err := readDefinitions(ctx, s.db, s.log, adapterKind, parseStoredAdapter)
		if err != nil {
			return 0, err
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			return 0, ErrShuttingDown
		}
		if s.defsGen != gen && attempt < 3 {
			s.mu.Unlock()
			continue
		}
		n := s.applyLocked(conns, ads)
		s.mu.Unlock()
		return n, nil
	}
}

// applyLocked makes conns and ads the API definitions (A5). Caller holds
// s.mu.
func (s *Service) applyLocked(conns map[string]*connDef, ads map[string]*adapterDef) int {
	cc := s.conns.sync(conns)
	for _, c := range cc {
		if c.old != nil {
			s.retireLocked(c.old)
		}
		switch {
		case c.new == nil:
			s.log.Info("data connection dropped on another node", "connection", c.name)
		case c.old == nil:
			s.log.Info("data connection created on another node", "connection", c.name, "revision", c.new.revision)
		default:
			s.log.Info("data connection replaced on another node", "connection", c.name, "revision", c.new.revision)
		}
	}
	ac := s.adapters.sync(ads)
	for _, c := range ac {
		switch {
		case c.new == nil:
			s.log.Info("adapter deleted on another node", "adapter", c.name)
		case c.old == nil:
			s.log.Info("adapter created on another node", "adapter", c.name, "revision", c.new.revision)
		default:
			s.log.Info("adapter replaced on another node", "adapter", c.name, "revision", c.new.revision)
		}
		if c.new != nil {
			if other := s.datasetWriterLocked(c.new.spec.Dataset, c.name); other != "" {
				s.log.Warn("two adapters write one dataset; delete or change one", "adapter", c.name, "other", other, "dataset", c.new.spec.Dataset)
			}
		}
		if s.sched == nil {
			continue
		}
		// The schedule of the definition in force now: a config one
		// shadows whatever the API holds.
		if a, ok := s.adapters.active(c.name); ok && a.sched != nil {
			s.sched.set(c.name, a.sched, a.spec.Retries, time.Duration(a.spec.RetryBackoff))
		} else {
			s.sched.set(c.name, nil, 0, 0)
		}
	}
	s.indexAuditReadsLocked()
	return len(cc) + len(ac)
}

// parseStoredConnection decrypts the secrets of a stored connection spec
// (K1) and checks it.
func (s *Service) parseStoredConnection(spec api.Connection) (*connDef, error) {
	if err := s.secrets.openSpec(spec); err != nil {
		return nil, err
	}
	upgradeDurations(spec)
	return parseConnection("", spec)
}

// parseStoredAdapter checks a stored adapter spec.
func parseStoredAdapter(r adapterRecord) (*adapterDef, error) {
	return parseAdapter("", r.spec())
}

// ConfigDigests returns a digest of each config-file definition of this
// node, "connection/NAME" or "adapter/NAME" to a hex HMAC-SHA256 under key
// of the definition's spec as given (secrets as written in the file, so
// that two nodes whose files give one connection different passwords
// differ too), for nodes to compare their files (cluster.K12). The key
// keeps a literal secret from being guessed from its digest; nil hashes
// without one.
func (s *Service) ConfigDigests(key []byte) map[string]string {
	out := map[string]string{}
	digest := func(spec any) string {
		b, _ := json.Marshal(spec)
		m := hmac.New(sha256.New, key)
		m.Write(b)
		return hex.EncodeToString(m.Sum(nil))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, d := range s.conns.config {
		out[connectionKind.noun+"/"+name] = digest(d.spec)
	}
	for name, a := range s.adapters.config {
		out[adapterKind.noun+"/"+name] = digest(adapterRecordOf(a.spec))
	}
	return out
}
