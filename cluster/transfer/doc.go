// Package transfer moves the rows of a partitioned run between the nodes
// of a cluster: from the run's coordinator, which reads the source once,
// to the owners of the partitions, which compare and write them
// (docs/rfcs/20261202_partitioned_runs.md). It is a protocol over mutual
// TLS, bounded in memory on both ends, with a visible backlog, after
// Apache NiFi's load-balanced connections. It knows nothing of snapshots:
// a row is a row key and encoded values, and a Handler applies them.
//
// # What is here
//
//   - batch.go: streams, batches, their encoding, compression.
//   - frame.go: the frames of a connection and their content.
//   - tls.go: certificates, the checks of X1, why a connection is refused.
//   - cert.go: a cluster CA and node certificates (snapstore cert).
//   - config.go: Config, DefaultConfig, Validate.
//   - transport.go: Open, Close, the destinations, forwarding.
//   - run.go: the sending side of a run: Send, End, Waiting.
//   - queue.go: a run's queue for one lane: its log, memory and disk.
//   - lane.go: a destination's connections: dial, write, read answers.
//   - receiver.go: accepted connections, batches applied, duplicates.
//   - handler.go: the Handler that applies batches, its outcomes.
//   - backlog.go: what waits, per destination node and dataset.
//   - metrics.go: the backlog, bytes, refusals.
//
// # Rules
//
// X1. Identity. Connections are TLS 1.3 with a certificate on both ends.
// The receiver accepts a connection only when the client certificate
// chains to the configured CA for client authentication and has exactly
// one DNS SAN that names a member (Members.Lookup: a node that has not
// left); any other is refused during the handshake, before a frame is
// read, and logged at warn with its reason (no client certificate,
// untrusted certificate, not a member) and counted. The sender dials a
// node by its id: crypto/tls verifies the receiver's chain and that its
// certificate names that id. HELLO names the node the sender meant to
// reach, and a receiver that is another node refuses it.
//
// X2. Framing. A frame is type, flags, a 32-bit length and at most 256 MiB
// of payload (frame.go); a connection opens with HELLO and HELLO_OK. A
// protocol version the receiver does not speak is refused.
//
// X3. Streams and order. A stream is one partition of one run from one
// origin; its batches are numbered from 1 and the last is an END. Each
// stream is pinned to one lane of its destination (its partition modulo
// the connections per node), a lane is one connection, and a receiver
// applies a connection's batches one after the other: a stream is applied
// in seq order, so a partition's rows reach its owner in source order.
//
// X4. Compression. A batch is two sections: metadata (stream header,
// column names, row keys, every length) and values. CompressMetadata
// compresses the first with zstd, CompressAll both; the frame's flags say
// which, so a receiver reads any.
//
// X5. Delivery. Every batch is answered. The receiver keeps per stream the
// highest seq applied: a batch at or below it is acknowledged again
// without being applied (its ACK was lost), the next is applied, a later
// one is answered rewind. The sender resends from the oldest unanswered
// batch after a lost connection or a retry answer, pausing from RetryMin
// doubling to RetryMax. It keeps every batch of a run, answered or not,
// until Run.End; on a rewind answer, or when HELLO_OK shows a new
// incarnation of the receiver, it sends the run's queue on that lane again
// from the first batch. Hence a restarted owner gets each of its streams
// whole, in order, and a batch is applied once per life of its stream at
// the owner.
//
// X6. Forwarding. A Handler that does not own a batch's partition answers
// Forward(owner): the transport sends the batch, flagged forwarded, to the
// owner, and answers the sender with the owner's answer; the receiver's
// record of the stream advances only on the owner's ACK. A forwarded batch
// is never forwarded again (answered retry), so nodes that disagree cannot
// loop.
//
// X7. Memory. Each batch is appended to its queue's log when it is queued
// (queue.go): the log is the swap file and the retention of X5. A queue
// keeps a batch in memory too only while nothing of it is on disk only,
// its destination holds fewer than Config.QueueBatches batches in memory,
// and all queues hold less than Config.QueueMemory bytes; otherwise the
// batch is on disk only and is read back in order when its turn comes,
// within the same bounds, except that a lane with nothing in flight may
// read one batch beyond them. Memory is bounded by QueueMemory plus one
// batch per connection, whatever the table's size or the count of nodes,
// and a destination holds at most QueueBatches plus one batch per
// connection. The directory is emptied at
// Open: queues die with their process, as the runs they carry do.
//
// X8. Backlog. A batch is in the backlog from Send until its destination
// answers it (or its run ends): rows, bytes as sent and batches, per
// destination node and dataset, with the bytes on disk only and whether
// the node is reachable (Transport.Backlog, the metrics).
//
// # Goroutines
//
// Open starts the accept loop (receiver.acceptLoop) and the sweep of idle
// stream states (receiver.sweepLoop); the accept loop starts one goroutine
// per accepted connection, which reads, applies and answers. The first
// Send or forward to a node starts one loop per lane (lane.loop), which
// dials when the lane has work and writes frames; while connected, a
// goroutine of the lane reads the answers. Close stops them all and waits.
//
// # Locks
//
// Transport.mu guards the destinations and runs; Run.mu serialises Send
// and is taken before a lane's mutex; lane.mu guards the lane and its
// queues and is held while a queue's log is written or read (page-cache
// I/O), never across network I/O; peer.mu and receiver.mu are leaves. A
// stream's mutex is held while one of its batches is applied or forwarded,
// and is taken before receiver.mu.
package transfer
