// Package cluster is the membership of a snapstore cluster: several nodes
// on one HBase table, each able to serve every read and admin call. HBase
// holds every piece of shared state; this package gives who is there and
// where a name belongs, and nothing else (Consul and Nomad use serf the
// same way: serf for liveness, an authoritative record of ownership
// elsewhere).
//
// # What is here
//
//   - node.go: the node id, generated once and kept in the data directory,
//     and the incarnation of one process.
//   - state.go: the states of a member (joining, active, draining, failed,
//     left) and the state machine that turns serf's reports and the time
//     into them.
//   - tags.go: what a node tells the others through serf's tags, within
//     serf's size limit.
//   - config.go: Config, its presets (DefaultConfig, LoopbackConfig, after
//     memberlist's DefaultLANConfig and DefaultLocalConfig) and Validate.
//   - membership.go: Open, the serf instance, its event loop, Nodes.
//   - keyring.go: the gossip key, serf's keyring file, key rotation.
//   - peers.go: the peers file, so that a node rejoins after a crash.
//   - logbridge.go: serf's and memberlist's log lines into slog.
//   - rendezvous.go: weighted rendezvous (highest random weight) placement.
//   - partitions.go: the placement of the partitions of partitioned runs,
//     rendezvous with bounded loads (Rebalance).
//   - partitiontable.go: the partition table in the metadata table, with
//     its epoch, changed by compare-and-set (Partitions, Keeper).
//   - metrics.go: members by state, flaps, transitions.
//   - nodelist.go: the interface of the persisted node list (not built).
//
// # Rules
//
// K1. A node's id is generated once, kept in <data dir>/node-id, and never
// changes for the life of that directory; serf's node name is the id. An
// incarnation, random per process start, tells a restarted node from the
// process it replaces.
//
// K2. Gossip is encrypted with serf's keyring (AES-GCM with a shared
// symmetric key; serf has no TLS). Off loopback a key is required. Once
// the keyring file exists in the data directory it is the node's keyring:
// keys installed, made primary or removed through serf's key manager are
// written to it on every node, so a restart keeps them.
//
// K3. A member counts as failed only after serf reports it failed AND the
// confirmation delay passes without serf seeing it alive again. A member
// that comes back within the delay (a flap) never leaves its state: its
// share of the work does not move.
//
// K4. A member that leaves gracefully (serf's leave intent) is left at
// once; a left member that starts again joins again.
//
// K5. Callbacks never block: serf's event channel is drained by one loop
// that does only in-memory work under a mutex held for no I/O and for no
// serf call (serf sends events while holding its member lock), and
// watchers are told of a change through a channel of one slot, poked
// without waiting.
//
// K6. A name's owner depends only on the name and on the ids and weights
// of the eligible nodes: every node that sees the same members computes the
// same owner without talking to the others, and a join or leave moves only
// the names whose highest-scoring node changed, about 1/N of them.
//
// K7. A node's tags stay within serf's limit (memberlist.MetaMaxSize, 512
// bytes encoded): Validate refuses a configuration whose tags could exceed
// it. User events are limited to 512 bytes and queries to 1 KB (serf's
// defaults, kept): they may carry hints, never data.
//
// # Goroutines
//
// Open starts serf (its own goroutines: memberlist's probe, gossip and
// push-pull loops, serf's reaper, reconnector and snapshotter), the event
// loop (run) that owns the state machine's inputs, the peers writer
// (persistLoop) that rewrites the peers file when the members change, and,
// when the join addresses do not answer at once, a join retry loop that
// stops at the first successful join or at Close.
//
// # Not built yet
//
// The node list persisted in HBase (nodelist.go holds its interface),
// writer slots across nodes, the strategies that decide where a run
// happens, definitions applied cluster-wide, drain and forget of a node's
// work. Until they exist one node of a cluster writes (the HBase writer
// lease, snapshot.W1) and the others are read-only readers.
package cluster
