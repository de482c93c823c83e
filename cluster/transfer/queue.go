package transfer

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// The queue of a run's batches for one lane of one destination (X7): an
// append-only log file in the transport's directory, of which a bounded
// number of batches is also held in memory.
//
// Every batch is written to the log when it is queued: the log is both the
// swap file of the queue (the batches beyond the memory bound live only
// there, and are read back in order when their turn comes) and the
// retention of X5 (a receiver that restarted gets the run again from the
// first batch, read from the log). The batches [acked, acked+len(mem))
// are in memory, the first sent-acked of them in flight on the lane's
// connection; the batches from acked+len(mem) to the end are on disk only,
// the first of them at diskOff. A batch is kept in memory when it is
// queued only while no batch of the log is on disk only, so the log is
// sent in order.
//
// A record of the log is
//
//	rows u32 | seq u64 | partition u32 | frame (header and payload)
//
// Logs are never synced: they die with the process, as the runs they
// carry do.
type queue struct {
	run  *Run
	lane *lane
	path string
	f    *os.File

	size int64 // bytes appended
	n    int   // records appended
	// acked records are answered; sent records have been written to the
	// lane's current connection (acked <= sent <= n).
	acked, sent int
	mem         []*item
	diskOff     int64
	memBytes    int64 // bytes of the frames in mem

	// unacked rows and bytes, for the backlog; total rows and bytes, to
	// restore them on a rewind.
	rows, bytes           int64
	totalRows, totalBytes int64
	// refused is set when the receiver refused a batch (CodeRefused): the
	// queue sends nothing more.
	refused bool
	// ended is set when the run ended and the log is gone.
	ended bool
}

// item is one batch of a queue.
type item struct {
	seq   uint64
	part  int
	rows  int
	size  int // record size in the log
	frame []byte
}

const recordHeader = 4 + 8 + 4

// openQueue creates the log of run's batches for lane at path.
func openQueue(run *Run, l *lane, path string) (*queue, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("transfer: creating a queue file: %w", err)
	}
	return &queue{run: run, lane: l, path: path, f: f}, nil
}

// appendLocked queues a batch; the lane's mutex is held. It writes the
// record to the log, then keeps the frame in memory when nothing of the
// log is on disk only and the memory bounds allow (X7).
func (q *queue) appendLocked(it *item) error {
	rec := make([]byte, recordHeader, recordHeader+len(it.frame))
	binary.BigEndian.PutUint32(rec[0:4], uint32(it.rows))
	binary.BigEndian.PutUint64(rec[4:12], it.seq)
	binary.BigEndian.PutUint32(rec[12:16], uint32(it.part))
	rec = append(rec, it.frame...)
	if _, err := q.f.WriteAt(rec, q.size); err != nil {
		return fmt.Errorf("transfer: writing a queue file: %w", err)
	}
	it.size = len(rec)
	atEnd := q.acked+len(q.mem) == q.n
	q.size += int64(len(rec))
	q.n++
	q.rows += int64(it.rows)
	q.bytes += int64(len(it.frame))
	q.totalRows += int64(it.rows)
	q.totalBytes += int64(len(it.frame))
	t := q.lane.peer.t
	if atEnd && q.lane.peer.memItems.Load() < int64(t.cfg.QueueBatches) && t.mem.Load()+int64(len(it.frame)) <= t.cfg.QueueMemory {
		q.keepLocked(it)
		q.diskOff = q.size
		return nil
	}
	it.frame = nil // on disk only: swapped out
	t.metrics.spilled.Add(float64(len(rec)))
	return nil
}

// keepLocked adds it to the batches held in memory.
func (q *queue) keepLocked(it *item) {
	q.mem = append(q.mem, it)
	q.memBytes += int64(len(it.frame))
	q.lane.peer.memItems.Add(1)
	q.lane.peer.t.mem.Add(int64(len(it.frame)))
}

// dropLocked releases the first n batches held in memory.
func (q *queue) dropLocked(n int) {
	for _, it := range q.mem[:n] {
		q.memBytes -= int64(len(it.frame))
		q.lane.peer.memItems.Add(-1)
		q.lane.peer.t.mem.Add(-int64(len(it.frame)))
	}
	clear(q.mem[:n])
	q.mem = q.mem[n:]
}

// nextLocked returns the next batch to send and marks it sent. A batch on
// disk only is read back (swapped in) when the memory bounds allow, or
// when the lane has nothing in flight (so that every lane progresses
// whatever the others hold); nil, nil means wait.
func (q *queue) nextLocked(laneIdle bool) (*item, error) {
	i := q.sent - q.acked
	if i < len(q.mem) {
		q.sent++
		return q.mem[i], nil
	}
	t := q.lane.peer.t
	var h [recordHeader + frameHeader]byte
	if _, err := q.f.ReadAt(h[:], q.diskOff); err != nil {
		return nil, fmt.Errorf("transfer: reading a queue file: %w", err)
	}
	flen := frameHeader + int(binary.BigEndian.Uint32(h[recordHeader+2:]))
	if !laneIdle && (q.lane.peer.memItems.Load() >= int64(t.cfg.QueueBatches) || t.mem.Load()+int64(flen) > t.cfg.QueueMemory) {
		return nil, nil // wait for answers to free memory
	}
	frame := make([]byte, flen)
	if _, err := q.f.ReadAt(frame, q.diskOff+recordHeader); err != nil && err != io.EOF {
		return nil, fmt.Errorf("transfer: reading a queue file: %w", err)
	}
	it := &item{
		rows:  int(binary.BigEndian.Uint32(h[0:4])),
		seq:   binary.BigEndian.Uint64(h[4:12]),
		part:  int(binary.BigEndian.Uint32(h[12:16])),
		size:  recordHeader + flen,
		frame: frame,
	}
	q.diskOff += int64(it.size)
	q.keepLocked(it)
	q.sent++
	return it, nil
}

// ackLocked records the answer to the oldest batch in flight: it leaves
// memory (the log keeps it, X5).
func (q *queue) ackLocked() *item {
	it := q.mem[0]
	q.dropLocked(1)
	q.acked++
	q.rows -= int64(it.rows)
	q.bytes -= int64(len(it.frame))
	if q.acked+len(q.mem) == q.n {
		q.diskOff = q.size
	}
	return it
}

// unsendLocked forgets what was written to a connection that is gone:
// the batches in flight are sent again on the next one.
func (q *queue) unsendLocked() { q.sent = q.acked }

// rewindLocked makes the whole log unanswered again, to be sent from the
// first batch (X5): everything in memory is dropped and read back from
// the log in order.
func (q *queue) rewindLocked() {
	q.dropLocked(len(q.mem))
	q.acked, q.sent, q.diskOff = 0, 0, 0
	q.rows, q.bytes = q.totalRows, q.totalBytes
}

// spilledLocked returns the bytes of unanswered batches on disk only.
func (q *queue) spilledLocked() int64 { return q.bytes - q.memBytes }

// closed reports whether the run ended; the lane's mutex is held.
func (q *queue) closed() bool { return q.ended }

// closeLocked releases the memory and removes the log.
func (q *queue) closeLocked() error {
	q.ended = true
	q.dropLocked(len(q.mem))
	q.rows, q.bytes = 0, 0
	err := q.f.Close()
	if rerr := os.Remove(q.path); err == nil {
		err = rerr
	}
	return err
}
