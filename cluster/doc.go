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
//   - metrics.go: members by state, flaps, transitions, dropped hints.
//   - noderecord.go: a node's entry of the node list (K11), seeding
//     the membership with the recorded nodes.
//   - credential.go: the cluster credential between nodes' APIs (K8).
//   - events.go: hints, the drain and resume queries, forget (K9, K10).
//
// Package placement (cluster/placement) places work over the members:
// rendezvous, the node list, the partition table and its keeper, and
// package adapters' view of the cluster. Package partitionrun
// (cluster/partitionrun) runs partitioned runs over the partition table
// (K14); package transfer (cluster/transfer) carries their rows. This
// package imports none of the project's packages.
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
// K8. A node proves itself to another node's HTTP API with the cluster
// credential: an HMAC, under a key derived from the gossip key, of the
// request (method, path, body) with the node's id and the time. It needs
// no state beyond the keyring every member holds; the receiver accepts any
// key of its keyring (rotations), a time within 2 minutes of its clock, a
// MAC it has not seen, and a node it sees alive. A cluster without a
// gossip key has no credential.
//
// K9. Definitions made through the API live in HBase. A node that changes
// one sends a hint (a user event naming it); the others reread the
// definitions on the hint and every DefinitionsRefresh whatever the hints,
// so that a lost hint delays a change by at most that long, never loses it.
//
// K10. A node leaves the work by its own declaration (drain: it declares
// draining, owns nothing, takes no new run and finishes what it runs; a
// serf query asks it when the call comes to another node), by leaving
// (SIGTERM), or by an operator's forget once it failed or left: forget is
// the only way a failed node's place is given up. A flap, a failure not
// confirmed, moves nothing (K3). Forget is serf's force-leave without
// prune, a forget event, and the node list's entry deleted: every member
// drops the node, ignores serf's reports of it as left, and takes it as
// a node that joins if it starts again (serf's prune would erase it again
// if a late leave intent found it back).
//
// K11. The node list in HBase (one record per node: addresses, weight,
// zone, incarnation, last state, last heard, config digests) is written
// by conditional single-row mutations from the value read: a node writes
// its own entry once it is a member (K16), another member records it
// failed (only the incarnation that failed), an operator's forget
// deletes it. A node that starts counts the
// recorded nodes it does not hear from yet as failing since its start
// (K3), in their recorded state, so that a full restart moves nothing
// while the nodes come back. The single node of single-node adapters is
// chosen over the node list and the live members, neither draining nor
// left after a drain: it stays on a failed node until that node is
// forgotten.
//
// K12. A config-file definition that two alive nodes define differently,
// or that one of them does not define, is reported by both (a warn log
// line, snapstore_cluster_config_mismatches, GET /v1/cluster/nodes):
// each node records a digest of each of its config definitions in its
// entry (an HMAC under a key derived from the gossip key) and compares
// them with the others' at every Heartbeat. Nothing is papered over: each
// node keeps using its own file.
//
// K13. The partition table (placement.Partitions) changes only on the
// keeper, the rendezvous owner of the name "partitions" over the active
// nodes, by one compare-and-set of the record read, epoch + 1: every node
// rereads it every cluster.partition_move_interval and when the members
// change; the keeper writes one rebalance step (Rebalance, over the
// members and the node list, K11: failed and left nodes keep their
// partitions) at most every interval and of at most
// cluster.partition_moves moves, partitions without an owner at once. A
// member without a transfer listener owns none. A node configured with
// another count than the stored table's does not start.
//
// K14. A partitioned run is committed by its coordinator alone, in the
// one conditional write of the dataset's row (snapshot.D3, snapshot.W3), once
// every partition's owner at the epoch the run began at has reported its
// counts and checksum with the ACK of its stream's END; the run record
// (kind partitioned-run) names those owners, and an owner writes only the
// partitions it names for it (a batch for another goes on, transfer.X6).
// An owner that cannot be reached gets no failover: the run waits for it
// (its rows queued on disk, the backlog) up to cluster.transfer.owner_wait
// in a row, then fails, its transaction invalid (snapshot.D4). A
// coordinator that dies leaves its transaction in progress, invisible,
// until the dataset's writer slot is next taken (snapshot.W1).
//
// K15. serf's member events are hints; its member list is the truth. serf
// changes a member's status without an event on some paths (a leave
// intent marks an alive member leaving, a join intent marks it alive
// again), so every Tick the event loop reconciles the state machine with
// serf's member list (read by reconcileLoop, a serf call the loop must
// not make, K5), skipping the members that had an event since the list
// was asked for (the list may be older than it). Consul's leader
// reconciles with serf's members the same way. A member serf marks
// leaving counts as alive until memberlist reports it left: a stale leave
// intent (a forgotten node that came back) must not make it left.
//
// K16. Only a member writes what the nodes share: its entry of the node
// list and the others' (failed, K11), the partition table (K13), the fire
// records of the adapters it owns (the owner, K6). A node is a member
// once, in this process, it heard alive through serf a node the node
// list records joining, active or draining, or the list recorded no other
// such node (the first node of a cluster); it stays one until it stops.
// A node that is not a member counts itself joining: it owns no adapter,
// no partition and no place in the rotation, and takes no other node for
// gone. serf's view is what a stranger cannot fake: a node without the
// gossip key, or with one the cluster no longer uses, hears nobody
// (placement.Placement.member argues the rule).
//
// # Goroutines
//
// Open starts serf (its own goroutines: memberlist's probe, gossip and
// push-pull loops, serf's reaper, reconnector and snapshotter), the event
// loop (run) that owns the state machine's inputs, its reader of serf's
// member list (reconcileLoop, K15), the peers writer
// (persistLoop) that rewrites the peers file when the members change, the
// query answerer (answerQueries), and, when the join addresses do not
// answer at once, a join retry loop that stops at the first successful
// join or at Close. The one reader of Changed and Hints is package
// placement's loop (placement.Placement.Start).
//
// # Not built here
//
// Writer slots are package snapshot's (snapshot.W1): every node may
// write, and two nodes never write one dataset at once. A node started
// read-only places runs but runs none. The owners' cache of their
// partitions' rows (docs/rfcs/20261202_partitioned_runs.md) is not built:
// an owner compares with HBase as snapshot does alone.
package cluster
