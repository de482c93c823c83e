package transfer

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A destination node and its lanes: one TCP connection each (X3), dialled
// when the lane has work and closed after idleClose without any.

// idleClose is how long a lane's connection stays open with nothing to
// send or to wait for.
const idleClose = 30 * time.Second

// writeTimeout bounds the write of one frame; a receiver that reads
// nothing for that long is taken as gone.
const writeTimeout = 2 * time.Minute

// peer is a destination node.
type peer struct {
	t        *Transport
	id       string
	lanes    []*lane
	memItems atomic.Int64 // batches of this destination held in memory (X7)

	// mu guards the fields below; never held across I/O.
	mu        sync.Mutex
	conns     int       // lanes connected
	downSince time.Time // when dialling first failed with no lane connected; zero while reachable
	lastErr   string
}

// lane is one connection to a destination and the batches it carries:
// the queues of the runs whose streams are pinned to it, forwarded
// batches (X6) and DONE frames.
type lane struct {
	peer *peer
	idx  int
	// wake has one slot: a queued batch, an answer or Close pokes it
	// without waiting.
	wake chan struct{}

	// mu guards the fields below and the queues' state. It is held while
	// a record is written to or read from a queue's log (page-cache I/O),
	// never across network I/O.
	mu       sync.Mutex
	queues   []*queue // round-robin order
	next     int
	fwd      []*fwdItem // forwarded batches not yet written
	control  [][]byte   // DONE frames not yet written
	inflight []flight   // written to the connection, unanswered, oldest first
	inc      string     // the receiver's incarnation at the last HELLO_OK
	applied  int64      // batches answered applied, ever
}

// flight is a batch written to a connection and not yet answered: a
// queue's, or a forwarded one.
type flight struct {
	q      *queue
	fw     *fwdItem
	stream Stream
	seq    uint64
}

// fwdItem is a batch this node forwards (X6); the goroutine that received
// it waits for reply.
type fwdItem struct {
	frame  []byte
	stream Stream
	seq    uint64
	rows   int
	reply  chan answer // buffered: never blocks the lane
}

func newPeer(t *Transport, id string) *peer {
	p := &peer{t: t, id: id}
	for i := range t.cfg.ConnectionsPerNode {
		p.lanes = append(p.lanes, &lane{peer: p, idx: i, wake: make(chan struct{}, 1)})
	}
	return p
}

// poke wakes the lane's loop without waiting.
func (l *lane) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// hasWorkLocked reports whether the lane has something to write.
func (l *lane) hasWorkLocked() bool {
	if len(l.fwd) > 0 || len(l.control) > 0 {
		return true
	}
	for _, q := range l.queues {
		if !q.refused && q.sent < q.n {
			return true
		}
	}
	return false
}

// loop dials the destination when the lane has work, serves the
// connection until it fails, idles or the transport closes, and dials
// again after a pause that doubles while dialling fails or the receiver
// answers retry without applying anything (X5).
func (l *lane) loop() {
	t := l.peer.t
	defer t.wg.Done()
	pause := time.Duration(0)
	for {
		if pause > 0 && !t.sleep(pause) {
			return
		}
		for {
			l.mu.Lock()
			work := l.hasWorkLocked()
			l.mu.Unlock()
			if work {
				break
			}
			select {
			case <-l.wake:
			case <-t.stopc:
				return
			}
		}
		conn, inc, err := l.dial()
		if err != nil {
			l.peer.dialFailed(err)
			pause = min(max(2*pause, t.cfg.RetryMin), t.cfg.RetryMax)
			continue
		}
		l.peer.connected()
		l.mu.Lock()
		if l.inc != "" && l.inc != inc {
			// The receiver restarted: it lost every stream (X5).
			for _, q := range l.queues {
				q.rewindLocked()
			}
			t.log.Info("transfer: the receiver restarted; its runs are sent again from the start", "node", l.peer.id, "lane", l.idx)
		}
		l.inc = inc
		applied := l.applied
		l.mu.Unlock()
		err = l.serve(conn)
		l.disconnect()
		l.peer.disconnected()
		l.mu.Lock()
		progressed := l.applied > applied
		l.mu.Unlock()
		var nack *nackError
		switch {
		case err == nil:
			pause = 0
		case errors.As(err, &nack) && nack.code == CodeRewind:
			pause = 0
		case errors.As(err, &nack):
			// Retry (or refused, on another queue's behalf): the pause
			// doubles while the receiver applies nothing.
			if progressed {
				pause = t.cfg.RetryMin
			} else {
				pause = min(max(2*pause, t.cfg.RetryMin), t.cfg.RetryMax)
			}
		default:
			if t.ctx.Err() != nil {
				return
			}
			lvl := t.log.Warn // a queue file that cannot be read, a protocol error
			var ne net.Error
			if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
				lvl = t.log.Debug // the receiver went away: dialled again
			}
			lvl("transfer: connection ended", "node", l.peer.id, "lane", l.idx, "err", err)
			pause = t.cfg.RetryMin
		}
	}
}

// dial connects to the destination and exchanges HELLO and HELLO_OK; it
// returns the receiver's incarnation.
func (l *lane) dial() (net.Conn, string, error) {
	t := l.peer.t
	addr, ok := t.cfg.Members.Lookup(l.peer.id)
	switch {
	case !ok:
		return nil, "", fmt.Errorf("node %s is not a member of the cluster", l.peer.id)
	case addr == "":
		// The address is the member's xfer tag, which only gossip brings:
		// a member known from the node list alone has none yet.
		return nil, "", fmt.Errorf("node %s has no transfer address: this node has not heard from it since it started (gossip cannot reach it, or its gossip key differs), or its cluster.transfer.listen is unset", l.peer.id)
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.cfg.dialTimeout)
	defer cancel()
	d := tls.Dialer{Config: t.creds.clientConfig(l.peer.id)}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("dialling node %s at %s: %w", l.peer.id, addr, err)
	}
	c.SetDeadline(time.Now().Add(t.cfg.dialTimeout))
	if _, err := c.Write(hello{version: protocolVersion, target: l.peer.id, incarnation: t.cfg.Incarnation}.frame()); err != nil {
		c.Close()
		return nil, "", fmt.Errorf("greeting node %s at %s: %w", l.peer.id, addr, err)
	}
	f, err := readFrame(bufio.NewReaderSize(c, frameHeader+256))
	if err != nil {
		c.Close()
		return nil, "", fmt.Errorf("greeting node %s at %s: %w", l.peer.id, addr, err)
	}
	switch f.typ {
	case frameHelloOK:
		h, err := parseHelloOK(f.payload)
		if err != nil {
			c.Close()
			return nil, "", err
		}
		c.SetDeadline(time.Time{})
		return c, h.incarnation, nil
	case frameNack:
		c.Close()
		a, err := parseAnswer(f.payload)
		if err != nil {
			return nil, "", err
		}
		return nil, "", fmt.Errorf("node %s at %s refused the connection: %s", l.peer.id, addr, a.data)
	}
	c.Close()
	return nil, "", fmt.Errorf("node %s at %s: frame %d before HELLO_OK", l.peer.id, addr, f.typ)
}

// nackError ends a connection on which a NACK came.
type nackError struct {
	code   Code
	reason string
}

func (e *nackError) Error() string {
	return "transfer: batch answered " + e.code.String() + ": " + e.reason
}

// serve writes the lane's frames to conn until conn fails, a NACK comes,
// the lane idles or the transport closes (then nil); a goroutine reads the
// answers meanwhile. conn is closed when serve returns.
func (l *lane) serve(conn net.Conn) error {
	t := l.peer.t
	// Close ends a write blocked on a receiver that reads nothing.
	unhook := context.AfterFunc(t.ctx, func() { conn.Close() })
	defer unhook()
	errc := make(chan error, 1)
	go func() { errc <- l.readAnswers(bufio.NewReaderSize(conn, 16<<10)) }()
	stop := func(err error) error {
		conn.Close()
		if rerr := <-errc; err == nil && !isClosed(rerr) {
			err = rerr
		}
		return err
	}
	idle := time.NewTimer(idleClose)
	defer idle.Stop()
	for {
		select {
		case err := <-errc:
			conn.Close()
			return err
		default:
		}
		frame, err := l.nextFrame()
		if err != nil {
			return stop(err)
		}
		if frame == nil {
			select {
			case <-l.wake:
			case err := <-errc:
				conn.Close()
				return err
			case <-idle.C:
				l.mu.Lock()
				quiet := len(l.inflight) == 0 && !l.hasWorkLocked()
				l.mu.Unlock()
				if quiet {
					return stop(nil)
				}
				idle.Reset(idleClose)
			case <-t.stopc:
				return stop(nil)
			}
			continue
		}
		select {
		case t.sendSem <- struct{}{}:
		case <-t.stopc:
			return stop(nil)
		}
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err = conn.Write(frame)
		<-t.sendSem
		if err != nil {
			return stop(fmt.Errorf("writing to node %s: %w", l.peer.id, err))
		}
		t.metrics.sentBytes.WithLabelValues(l.peer.id).Add(float64(len(frame)))
		idle.Reset(idleClose)
	}
}

func isClosed(err error) bool { return err == nil || errors.Is(err, net.ErrClosed) }

// nextFrame returns the next frame to write, or nil when there is none
// now: DONE frames first, then forwarded batches, then the queues in
// turn, while the connection's window has room.
func (l *lane) nextFrame() ([]byte, error) {
	t := l.peer.t
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.control) > 0 {
		f := l.control[0]
		l.control = l.control[1:]
		return f, nil
	}
	if len(l.inflight) >= t.cfg.Window {
		return nil, nil
	}
	if len(l.fwd) > 0 {
		fw := l.fwd[0]
		l.fwd = l.fwd[1:]
		l.inflight = append(l.inflight, flight{fw: fw, stream: fw.stream, seq: fw.seq})
		return fw.frame, nil
	}
	for k := range l.queues {
		i := (l.next + k) % len(l.queues)
		q := l.queues[i]
		if q.refused || q.sent >= q.n {
			continue
		}
		it, err := q.nextLocked(len(l.inflight) == 0)
		if err != nil {
			return nil, err
		}
		if it == nil {
			continue // the memory bound: wait for answers
		}
		l.next = i + 1
		l.inflight = append(l.inflight, flight{q: q, stream: Stream{RunKey: q.run.key, Partition: it.part}, seq: it.seq})
		return it.frame, nil
	}
	return nil, nil
}

// readAnswers reads ACKs and NACKs until the connection ends or a NACK
// comes (a *nackError).
func (l *lane) readAnswers(br *bufio.Reader) error {
	for {
		f, err := readFrame(br)
		if err != nil {
			return err
		}
		if f.typ != frameAck && f.typ != frameNack {
			return fmt.Errorf("transfer: node %s sent frame %d where an answer was due", l.peer.id, f.typ)
		}
		a, err := parseAnswer(f.payload)
		if err != nil {
			return err
		}
		if err := l.answer(a); err != nil {
			return err
		}
	}
}

// answer applies one answer to the oldest batch in flight.
func (l *lane) answer(a answer) error {
	t := l.peer.t
	l.mu.Lock()
	if len(l.inflight) == 0 {
		l.mu.Unlock()
		return fmt.Errorf("transfer: node %s answered a batch that was not sent", l.peer.id)
	}
	f := l.inflight[0]
	if f.stream != a.stream || f.seq != a.seq {
		l.mu.Unlock()
		return fmt.Errorf("transfer: node %s answered %v seq %d where %v seq %d was due", l.peer.id, a.stream, a.seq, f.stream, f.seq)
	}
	l.inflight = l.inflight[1:]
	var notify func()
	switch {
	case f.fw != nil:
		f.fw.reply <- a
	case f.q.closed():
		// The run ended meanwhile: nothing to tell.
	case a.code == CodeApplied:
		l.applied++
		f.q.ackLocked()
		if ev := f.q.run.ev; ev != nil {
			report := a.data
			notify = func() { ev.Acked(l.peer.id, f.stream, f.seq, report) }
		}
	case a.code == CodeRewind:
		f.q.rewindLocked()
	case a.code == CodeRefused:
		f.q.refused = true
		if ev := f.q.run.ev; ev != nil {
			reason := string(a.data)
			notify = func() { ev.Refused(l.peer.id, f.stream, reason) }
		}
	}
	l.mu.Unlock()
	if notify != nil {
		notify()
	}
	l.poke()
	if a.code != CodeApplied {
		lvl := t.log.Warn
		if a.code == CodeRewind {
			lvl = t.log.Info
		}
		lvl("transfer: batch not applied", "node", l.peer.id, "dataset", a.stream.Dataset, "txn", a.stream.Txn,
			"partition", a.stream.Partition, "seq", a.seq, "answer", a.code, "reason", string(a.data))
		return &nackError{code: a.code, reason: string(a.data)}
	}
	return nil
}

// disconnect forgets what was in flight on a connection that ended: the
// queues send it again, forwarded batches go back to the front.
func (l *lane) disconnect() {
	l.mu.Lock()
	defer l.mu.Unlock()
	var back []*fwdItem
	for _, f := range l.inflight {
		if f.fw != nil {
			back = append(back, f.fw)
		}
	}
	l.fwd = append(back, l.fwd...)
	l.inflight = nil
	for _, q := range l.queues {
		q.unsendLocked()
	}
}

// removeQueueLocked takes q off the lane (its run ended).
func (l *lane) removeQueueLocked(q *queue) {
	if i := slices.Index(l.queues, q); i >= 0 {
		l.queues = slices.Delete(l.queues, i, i+1)
		if l.next > i {
			l.next--
		}
	}
}

// dialFailed records that the destination could not be reached.
func (p *peer) dialFailed(err error) {
	p.mu.Lock()
	first := p.conns == 0 && p.downSince.IsZero()
	if first {
		p.downSince = p.t.now()
	}
	p.lastErr = err.Error()
	p.mu.Unlock()
	if first {
		p.t.log.Warn("transfer: node unreachable; its batches wait in the queue", "node", p.id, "err", err)
	} else {
		p.t.log.Debug("transfer: node still unreachable", "node", p.id, "err", err)
	}
}

// connected records a lane's connection.
func (p *peer) connected() {
	p.mu.Lock()
	was := p.downSince
	p.conns++
	p.downSince, p.lastErr = time.Time{}, ""
	p.mu.Unlock()
	p.t.metrics.connections.Inc()
	if !was.IsZero() {
		p.t.log.Info("transfer: node reachable again", "node", p.id, "down_for", p.t.now().Sub(was).Round(time.Millisecond))
	}
}

// disconnected records the end of a lane's connection.
func (p *peer) disconnected() {
	p.mu.Lock()
	p.conns--
	p.mu.Unlock()
	p.t.metrics.connections.Dec()
}
