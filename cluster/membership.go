package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"
)

// snapshotFile is serf's snapshot in the data directory: the members last
// known alive and serf's clocks, so that a restarted node rejoins them on
// its own (serf.Config.SnapshotPath).
const snapshotFile = "cluster/serf.snapshot"

// eventBuffer is the size of serf's event channel. The loop drains it with
// in-memory work only (K5), so it never fills in practice; serf would
// block its member updates if it did.
const eventBuffer = 1024

// Membership is this node's view of the cluster: the serf instance, the
// state machine over its reports, and the keyring. Open starts it, Leave
// and Close end it. Its methods are safe for concurrent use.
type Membership struct {
	cfg  Config
	log  *slog.Logger
	id   string
	serf *serf.Serf
	now  func() time.Time
	// leavingAlone is set by Leave when no other member is alive: serf's
	// unacknowledged-leave warning is then expected (logBridge).
	leavingAlone atomic.Bool

	// mu guards tr and self. It is held for no I/O and no serf call (K5).
	mu   sync.Mutex
	tr   *tracker
	self Tags

	// tagsMu serialises SetState's tag updates (serf.SetTags), in order.
	tagsMu sync.Mutex

	// keyring is serf's gossip keyring (nil without a key): the key
	// manager changes it in place, and the cluster credential is derived
	// from its keys (credential.go).
	keyring *memberlist.Keyring
	replays replays

	metrics *metrics
	// changed has one slot: a change pokes it without waiting (K5);
	// persistc likewise wakes persistLoop (peers.go).
	changed  chan struct{}
	persistc chan struct{}
	// hints receives serf's user events (events.go, K9); queries the
	// drain and resume queries, answered by answerQueries.
	hints   chan Hint
	queries chan *serf.Query
	// joinAddrs are cfg.Join and the peers file's addresses.
	joinAddrs []string
	events    chan serf.Event
	// Reconciliation with serf's member list (K15): the event loop asks
	// for it with a generation (reconcileReq), reconcileLoop answers
	// (reconciled); lastEvent is, per member, the generation current when
	// the loop last applied an event of it. Both owned by the event loop.
	reconcileReq chan uint64
	reconciled   chan memberList
	gen          uint64
	lastEvent    map[string]uint64
	stopc        chan struct{}
	donec        chan struct{} // closed when run and joinLoop have returned
	wg           sync.WaitGroup
	closed       sync.Once
}

// Open starts the membership of the node whose data directory is
// cfg.DataDir: loads or creates its id (K1), loads its keyring (K2),
// starts serf with its snapshot and joins cfg.Join and the members of the
// peers file (peers.go), so that a restarted node rejoins the members it
// knew, after a crash too. When no join address answers, Open still
// succeeds: the node is a cluster of one that keeps trying every
// cfg.JoinRetry (logged at warn) until a join succeeds. The node declares
// itself joining; call SetState(Active) once it serves.
func Open(ctx context.Context, cfg Config) (*Membership, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "cluster")
	id, created, err := LoadNodeID(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if created {
		log.Info("new node id", "node", id, "file", filepath.Join(cfg.DataDir, NodeIDFile))
	}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, filepath.Dir(snapshotFile)), 0o700); err != nil {
		return nil, fmt.Errorf("cluster: creating the cluster dir: %w", err)
	}
	keyring, err := loadKeyring(cfg.DataDir, cfg.GossipKey, log)
	if err != nil {
		return nil, err
	}
	now := cfg.now
	if now == nil {
		now = time.Now
	}
	m := &Membership{
		cfg:          cfg,
		log:          log,
		id:           id,
		now:          now,
		keyring:      keyring,
		tr:           newTracker(id, cfg.ConfirmFailure),
		changed:      make(chan struct{}, 1),
		persistc:     make(chan struct{}, 1),
		events:       make(chan serf.Event, eventBuffer),
		reconcileReq: make(chan uint64, 1),
		reconciled:   make(chan memberList, 1),
		lastEvent:    map[string]uint64{},
		hints:        make(chan Hint, hintBuffer),
		queries:      make(chan *serf.Query, 16),
		stopc:        make(chan struct{}),
		donec:        make(chan struct{}),
		self: Tags{
			API: cfg.API, Transfer: cfg.Transfer, Weight: cfg.Weight, Zone: cfg.Zone, Version: truncate(cfg.Version, maxVersionLen),
			Incarnation: newIncarnation(), State: Joining,
		},
	}
	peers, err := loadPeers(cfg.DataDir)
	if err != nil {
		log.Warn("the peers file is unreadable; joining the configured addresses only", "err", err)
	}
	m.joinAddrs = slices.Clone(cfg.Join)
	for _, p := range peers {
		if p.ID != id && !slices.Contains(m.joinAddrs, p.Addr) {
			m.joinAddrs = append(m.joinAddrs, p.Addr)
		}
	}
	sc, err := m.serfConfig(keyring)
	if err != nil {
		return nil, err
	}
	if m.metrics, err = newMetrics(cfg.Registerer, m); err != nil {
		return nil, err
	}
	s, err := serf.Create(sc)
	if err != nil {
		m.metrics.unregister()
		return nil, fmt.Errorf("cluster: starting serf on %s: %w", cfg.Bind, err)
	}
	m.serf = s
	m.wg.Add(4)
	go m.run()
	go m.reconcileLoop()
	go m.persistLoop()
	go m.answerQueries()
	log.Info("cluster membership started", "node", id, "incarnation", m.self.Incarnation, "bind", cfg.Bind,
		"advertise", m.addr(), "encrypted", keyring != nil, "confirm_failure", cfg.ConfirmFailure)
	if len(m.joinAddrs) > 0 {
		if len(peers) > 0 {
			log.Info("rejoining the members last known (peers file)", "peers", len(peers))
		}
		if err := m.join(); err != nil {
			log.Warn("cluster join: no join address answered; retrying in the background", "join", m.joinAddrs, "retry", cfg.JoinRetry, "err", err, joinHint(err, keyring))
			m.wg.Add(1)
			go m.joinLoop()
		}
	}
	go func() { m.wg.Wait(); close(m.donec) }()
	return m, nil
}

// serfConfig builds serf's configuration from m.cfg.
func (m *Membership) serfConfig(keyring *memberlist.Keyring) (*serf.Config, error) {
	cfg := m.cfg
	host, port, _ := splitAddr(cfg.Bind)
	ml := *cfg.Memberlist
	ml.BindAddr, ml.BindPort = host, port
	if ml.BindAddr == "" {
		ml.BindAddr = "0.0.0.0"
	}
	if cfg.Advertise != "" {
		ah, ap, _ := splitAddr(cfg.Advertise)
		ml.AdvertiseAddr, ml.AdvertisePort = ah, ap
	} else if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		ml.AdvertiseAddr, ml.AdvertisePort = host, port
	}
	if keyring != nil {
		ml.Keyring = keyring
	}
	// A node restarted on another address may take its name back once the
	// old one is confirmed failed (memberlist refuses it forever by
	// default).
	ml.DeadNodeReclaimTime = cfg.ConfirmFailure
	ml.Logger = newLogBridge(m.log, nil)
	ml.LogOutput = nil

	sc := serf.DefaultConfig()
	sc.NodeName = m.id
	sc.Tags = m.self.encode()
	sc.EventCh = m.events
	sc.MemberlistConfig = &ml
	sc.Logger = newLogBridge(m.log, &m.leavingAlone)
	sc.LogOutput = nil
	sc.SnapshotPath = filepath.Join(cfg.DataDir, snapshotFile)
	// A node stopped with SIGTERM leaves gracefully (K4) and, started
	// again, rejoins from its snapshot: a restart is not a decommission.
	sc.RejoinAfterLeave = true
	sc.KeyringFile = filepath.Join(cfg.DataDir, keyringFile)
	sc.ReconnectTimeout = cfg.ReconnectTimeout
	sc.TombstoneTimeout = cfg.TombstoneTimeout
	// Two processes claiming one id (a copied data dir): serf's vote makes
	// the minority leave, rather than both flapping.
	sc.EnableNameConflictResolution = true
	return sc, nil
}

// truncate cuts s to n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// join tries cfg.Join once.
func (m *Membership) join() error {
	n, err := m.serf.Join(m.joinAddrs, true)
	if n > 0 {
		m.log.Info("cluster joined", "contacted", n, "join", m.joinAddrs)
		return nil
	}
	if err == nil {
		err = errors.New("no address answered")
	}
	return err
}

// joinHint says what a join refused for the gossip key means: the
// members encrypt with a key this node does not hold, so it will hear
// nobody until an operator gives it theirs (a wrong key file, or a
// rotation this node missed while down: its keyring file, which wins over
// the key file, is stale). It names this node's primary key by
// fingerprint; an empty attribute otherwise.
func joinHint(err error, kr *memberlist.Keyring) slog.Attr {
	if err == nil || !strings.Contains(err.Error(), "no installed keys could decrypt") {
		return slog.Attr{}
	}
	primary := "none"
	if kr != nil {
		primary = Fingerprint(kr.GetPrimaryKey())
	}
	return slog.String("hint", "the members use a gossip key this node does not hold (primary "+primary+
		"): give it the cluster's primary key in the gossip key file; if it missed a rotation, also stop it and delete its keyring file (docs/cluster.md, runbook)")
}

// joinLoop retries the join every cfg.JoinRetry until one succeeds, the
// node already found a member (serf's rejoin from its snapshot, or a
// member that joined it), or Close.
func (m *Membership) joinLoop() {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.JoinRetry)
	defer t.Stop()
	for attempt := 2; ; attempt++ {
		select {
		case <-m.stopc:
			return
		case <-t.C:
		}
		if m.serf.NumNodes() > 1 {
			m.log.Info("cluster joined through another member; join retries stop")
			return
		}
		if err := m.join(); err != nil {
			m.log.Warn("cluster join: no join address answered", "attempt", attempt, "join", m.joinAddrs, "err", err, joinHint(err, m.keyring))
			continue
		}
		return
	}
}

// run is the event loop (K5): it applies serf's member events to the state
// machine and advances its confirmation delays every cfg.Tick, when it
// also reconciles the state machine with serf's member list (K15); it
// passes user events on as hints and the drain and resume queries to
// answerQueries; other queries are logged at debug and dropped.
func (m *Membership) run() {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-m.stopc:
			return
		case ev := <-m.events:
			switch e := ev.(type) {
			case serf.MemberEvent:
				m.apply(e)
			case serf.UserEvent:
				if e.Name == eventForget {
					m.forgotten(string(e.Payload))
					break
				}
				m.deliverHint(e)
			case *serf.Query:
				if e.Name != queryDrain && e.Name != queryResume {
					m.log.Debug("serf query ignored", "name", e.Name)
					break
				}
				select {
				case m.queries <- e:
				default:
					m.log.Warn("serf query dropped: too many waiting", "name", e.Name, "from", e.SourceNode())
				}
			}
		case l := <-m.reconciled:
			m.reconcile(l)
		case <-t.C:
			m.mu.Lock()
			ts := m.tr.tick(m.now())
			m.mu.Unlock()
			m.record(ts)
			m.gen++
			select {
			case m.reconcileReq <- m.gen:
			default: // the previous list is still being read
			}
		}
	}
}

// memberList is serf's member list, read after the event loop's request
// of generation gen.
type memberList struct {
	gen     uint64
	members []serf.Member
}

// reconcileLoop reads serf's member list when the event loop asks: a serf
// call, which the event loop must not make (K5).
func (m *Membership) reconcileLoop() {
	defer m.wg.Done()
	for {
		var gen uint64
		select {
		case <-m.stopc:
			return
		case gen = <-m.reconcileReq:
		}
		l := memberList{gen: gen, members: m.serf.Members()}
		select {
		case <-m.stopc:
			return
		case m.reconciled <- l:
		}
	}
}

// reconcile applies serf's member list l to the state machine where the
// two differ (K15). A member with an event applied since l was asked for
// is left to its events: l may be older than that event. Serf's events
// and its list are written under one lock, so l holds every event sent
// before it was read.
func (m *Membership) reconcile(l memberList) {
	now := m.now()
	var ts []transition
	m.mu.Lock()
	for _, mem := range l.members {
		if mem.Name == m.id || m.lastEvent[mem.Name] >= l.gen {
			continue
		}
		o, ok := observationOf(mem, serf.EventMemberUpdate)
		if !ok || m.tr.ignores(o) {
			continue
		}
		if cur, known := m.tr.members[mem.Name]; known && !cur.seeded && cur.status == o.status && maps.Equal(cur.node.RawTags, o.tags) {
			continue
		}
		if t, ok := m.tr.observe(now, o); ok {
			ts = append(ts, t)
		}
		m.log.Info("serf's member list differs from its events; following the list", "node", mem.Name, "serf_status", mem.Status.String())
	}
	m.mu.Unlock()
	for id, g := range m.lastEvent {
		if g < l.gen { // skips no later list
			delete(m.lastEvent, id)
		}
	}
	m.record(ts)
}

// observationOf turns a member of a serf event of type typ, or of serf's
// member list, into an observation; false for a member in no status,
// observed alive (an event's member is). A member serf marks leaving is
// alive: memberlist still talks to it, and serf marks so a member that
// a leave intent reached before its join intent (a stale leave of a node
// that came back, which the node refutes); a real leave ends in
// memberlist's, reported as left.
func observationOf(mem serf.Member, typ serf.EventType) (observation, bool) {
	o := observation{id: mem.Name, addr: net.JoinHostPort(mem.Addr.String(), strconv.Itoa(int(mem.Port))), tags: mem.Tags, status: serfAlive}
	switch {
	case typ == serf.EventMemberFailed || mem.Status == serf.StatusFailed:
		o.status = serfFailed
	case typ == serf.EventMemberLeave || mem.Status == serf.StatusLeft:
		o.status = serfLeft
	case mem.Status != serf.StatusAlive && mem.Status != serf.StatusLeaving:
		return o, false
	}
	return o, true
}

// apply feeds one member event to the state machine.
func (m *Membership) apply(e serf.MemberEvent) {
	now := m.now()
	var ts []transition
	m.mu.Lock()
	for _, mem := range e.Members {
		m.lastEvent[mem.Name] = m.gen
		if e.Type == serf.EventMemberReap {
			if t, ok := m.tr.remove(mem.Name); ok {
				ts = append(ts, t)
			}
			continue
		}
		o, _ := observationOf(mem, e.Type)
		if t, ok := m.tr.observe(now, o); ok {
			ts = append(ts, t)
		}
	}
	m.mu.Unlock()
	if e.Type == serf.EventMemberFailed {
		for _, mem := range e.Members {
			m.log.Warn("serf reports a member failed; it counts as failed after the confirmation delay unless it comes back",
				"node", mem.Name, "confirm_failure", m.cfg.ConfirmFailure)
		}
	}
	m.record(ts)
}

// record logs and counts transitions and pokes the watchers.
func (m *Membership) record(ts []transition) {
	for _, t := range ts {
		switch {
		case t.removed:
			m.log.Info("cluster member reaped by serf", "node", t.id, "state", t.from)
		case t.first:
			m.log.Info("cluster member", "node", t.id, "state", t.to)
		case t.to == Failed:
			m.log.Warn("cluster member failed", "node", t.id, "from", t.from)
		default:
			m.log.Info("cluster member state", "node", t.id, "from", t.from, "to", t.to)
		}
		m.metrics.transition(t)
	}
	if len(ts) > 0 {
		for _, c := range []chan struct{}{m.changed, m.persistc} {
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}
}

// ID returns this node's id (K1).
func (m *Membership) ID() string { return m.id }

// Incarnation returns this process's incarnation (K1).
func (m *Membership) Incarnation() string { return m.self.Incarnation }

// addr returns the advertised gossip address.
func (m *Membership) addr() string {
	if m.serf == nil {
		return ""
	}
	l := m.serf.LocalMember()
	return net.JoinHostPort(l.Addr.String(), strconv.Itoa(int(l.Port)))
}

// Addr returns the advertised gossip address host:port (with the port
// chosen when Bind's port is 0).
func (m *Membership) Addr() string { return m.addr() }

// Nodes returns every member this node knows, itself included, ordered by
// id.
func (m *Membership) Nodes() []Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tr.nodes(m.now())
}

// Node returns member id as this node sees it.
func (m *Membership) Node(id string) (Node, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.tr.members[id]
	if !ok {
		return Node{}, false
	}
	return mem.node, true
}

// Declared returns the state this node declared last (SetState), which
// its own serf reports back only a moment later.
func (m *Membership) Declared() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.self.State
}

// Config returns the configuration the membership was opened with.
func (m *Membership) Config() Config { return m.cfg }

// Logger returns the membership's logger, for the packages that act on
// the membership's behalf (placement, hand-offs).
func (m *Membership) Logger() *slog.Logger { return m.log }

// Changed returns a channel that receives (one slot, never blocking the
// sender) after any member changed state (K5). Read Nodes after it fires.
func (m *Membership) Changed() <-chan struct{} { return m.changed }

// SetState declares this node's state to the cluster: Active once it
// serves, Draining before it stops taking work. Failed and Left are not
// declared (Leave leaves).
func (m *Membership) SetState(s State) error {
	if !s.declarable() {
		return fmt.Errorf("cluster: a node cannot declare itself %s", s)
	}
	changed, err := m.setTags(func(t *Tags) { t.State = s })
	if err != nil {
		return fmt.Errorf("cluster: declaring %s: %w", s, err)
	}
	if changed {
		m.log.Info("cluster: this node declares itself "+s.String(), "node", m.id)
	}
	return nil
}

// SetRunsInProgress tells the cluster how many runs this node is running
// (tag run).
func (m *Membership) SetRunsInProgress(n int) error {
	if _, err := m.setTags(func(t *Tags) { t.Runs = n }); err != nil {
		return fmt.Errorf("cluster: telling the runs in progress: %w", err)
	}
	return nil
}

// setTags applies edit to this node's tags and gossips them when they
// changed.
func (m *Membership) setTags(edit func(*Tags)) (bool, error) {
	m.tagsMu.Lock()
	defer m.tagsMu.Unlock()
	m.mu.Lock()
	tags := m.self
	m.mu.Unlock()
	edit(&tags)
	if tags == m.self {
		return false, nil
	}
	if err := m.serf.SetTags(tags.encode()); err != nil {
		return false, err
	}
	m.mu.Lock()
	m.self = tags
	m.mu.Unlock()
	return true, nil
}

// Leave leaves the cluster gracefully (K4): the others see this node left
// at once rather than failed after the confirmation delay. It waits for
// the leave to spread (serf's broadcast timeout and propagation delay,
// about 6 s at most), or for ctx.
func (m *Membership) Leave(ctx context.Context) error {
	alive := 0
	for _, mem := range m.serf.Members() {
		if mem.Name != m.id && mem.Status == serf.StatusAlive {
			alive++
		}
	}
	m.leavingAlone.Store(alive == 0)
	errc := make(chan error, 1)
	go func() { errc <- m.serf.Leave() }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("cluster: leaving: %w", err)
		}
		m.log.Info("cluster left", "node", m.id)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cluster: leaving: %w", ctx.Err())
	}
}

// Close stops serf without a leave (the others will see this node failed,
// as after a crash, unless Leave came first) and waits for the loops.
func (m *Membership) Close() error {
	var err error
	m.closed.Do(func() {
		close(m.stopc)
		err = m.serf.Shutdown()
		<-m.donec
		m.metrics.unregister()
	})
	if err != nil {
		return fmt.Errorf("cluster: stopping serf: %w", err)
	}
	return nil
}
