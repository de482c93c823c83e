package transfer

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// The receiving side: connections accepted on Config.Listen, checked
// (X1), greeted, then read one frame at a time. A connection's batches are
// applied in the order they come, so a stream, pinned to one connection,
// is applied in seq order (X3).

// readIdle bounds the wait for the next frame on an accepted connection;
// senders close theirs after idleClose without work.
const readIdle = 10 * time.Minute

// streamIdle is how long the state of a stream stays after its last
// batch when no DONE comes (its coordinator died).
const streamIdle = time.Hour

type receiver struct {
	t *Transport

	// mu guards streams and conns; it is held for no I/O.
	mu      sync.Mutex
	streams map[streamKey]*streamState
	conns   map[net.Conn]struct{}
}

// streamKey names a stream as its receiver knows it: by its origin too,
// since seq numbers are the origin's.
type streamKey struct {
	origin string
	Stream
}

// streamState is what the receiver keeps of a stream (X5).
type streamState struct {
	// mu is held while a batch of the stream is applied: one at a time.
	mu sync.Mutex
	// hw is the highest seq applied; report the END's report, answered
	// again to a repeated END.
	hw     uint64
	report []byte
	used   time.Time
}

func newReceiver(t *Transport) *receiver {
	return &receiver{t: t, streams: map[streamKey]*streamState{}, conns: map[net.Conn]struct{}{}}
}

// acceptLoop accepts connections until the listener closes.
func (r *receiver) acceptLoop(ln net.Listener) {
	defer r.t.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if r.t.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				r.t.log.Error("transfer: accepting a connection", "err", err)
				r.t.sleep(100 * time.Millisecond)
				continue
			}
			return
		}
		r.mu.Lock()
		if r.t.ctx.Err() != nil {
			r.mu.Unlock()
			c.Close()
			return
		}
		r.conns[c] = struct{}{}
		r.mu.Unlock()
		r.t.wg.Add(1)
		go r.serve(c)
	}
}

// closeConns closes every accepted connection (Close).
func (r *receiver) closeConns() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns {
		c.Close()
	}
}

// sweepLoop drops the state of streams idle for streamIdle.
func (r *receiver) sweepLoop() {
	defer r.t.wg.Done()
	tk := time.NewTicker(streamIdle / 6)
	defer tk.Stop()
	for {
		select {
		case <-r.t.stopc:
			return
		case <-tk.C:
		}
		cut := r.t.now().Add(-streamIdle)
		r.mu.Lock()
		for k, st := range r.streams {
			if st.mu.TryLock() {
				if st.used.Before(cut) {
					delete(r.streams, k)
				}
				st.mu.Unlock()
			}
		}
		r.mu.Unlock()
	}
}

// serve handles one accepted connection: TLS with the checks of X1, HELLO,
// then frames until it ends.
func (r *receiver) serve(c net.Conn) {
	t := r.t
	defer t.wg.Done()
	defer func() {
		c.Close()
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
	}()
	remote := c.RemoteAddr().String()
	tc := tls.Server(c, t.creds.serverConfig(t.cfg.Members))
	tc.SetDeadline(t.now().Add(t.cfg.dialTimeout))
	if err := tc.HandshakeContext(t.ctx); err != nil {
		if t.ctx.Err() != nil {
			return
		}
		rf := handshakeRefusal(err)
		t.metrics.refused.WithLabelValues(rf.reason).Inc()
		t.log.Warn("transfer: connection refused", "remote", remote, "reason", rf.reason, "detail", rf.detail, "sans", rf.sans)
		return
	}
	from, err := t.creds.peerID(tc.ConnectionState(), t.cfg.Members)
	if err != nil { // the member left during the handshake
		rf := handshakeRefusal(err)
		t.metrics.refused.WithLabelValues(rf.reason).Inc()
		t.log.Warn("transfer: connection refused", "remote", remote, "reason", rf.reason, "detail", rf.detail, "sans", rf.sans)
		return
	}
	br := bufio.NewReaderSize(tc, 64<<10)
	f, err := readFrame(br)
	if err != nil || f.typ != frameHello {
		t.metrics.refused.WithLabelValues(reasonHello).Inc()
		t.log.Warn("transfer: connection refused", "remote", remote, "node", from, "reason", reasonHello, "detail", fmt.Sprintf("no HELLO (%v)", err))
		return
	}
	h, err := parseHello(f.payload)
	switch {
	case err != nil:
	case h.version != protocolVersion:
		err = fmt.Errorf("protocol version %d; this node speaks %d", h.version, protocolVersion)
	case h.target != t.cfg.NodeID:
		err = fmt.Errorf("this is node %s, not %s", t.cfg.NodeID, h.target)
	}
	if err != nil {
		t.metrics.refused.WithLabelValues(reasonHello).Inc()
		t.log.Warn("transfer: connection refused", "remote", remote, "node", from, "reason", reasonHello, "detail", err.Error())
		tc.Write(answer{code: CodeRefused, data: []byte(err.Error())}.frame())
		return
	}
	if _, err := tc.Write(helloOK{id: t.cfg.NodeID, incarnation: t.cfg.Incarnation}.frame()); err != nil {
		return
	}
	t.log.Debug("transfer: connection accepted", "remote", remote, "node", from)
	for {
		tc.SetDeadline(t.now().Add(readIdle))
		f, err := readFrame(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && t.ctx.Err() == nil {
				t.log.Debug("transfer: connection ended", "node", from, "err", err)
			}
			return
		}
		t.metrics.receivedBytes.Add(float64(len(f.raw)))
		switch f.typ {
		case frameBatch:
			a, drop := r.batch(from, f)
			if drop {
				return
			}
			tc.SetWriteDeadline(t.now().Add(writeTimeout))
			if _, err := tc.Write(a.frame()); err != nil {
				return
			}
			if a.code != CodeApplied {
				// The sender resends from the batch answered; what it
				// wrote after it on this connection is not read.
				return
			}
		case frameDone:
			d, err := parseDone(f.payload)
			if err != nil {
				t.log.Warn("transfer: connection dropped", "node", from, "err", err)
				return
			}
			t.handler.Done(from, d.run, d.committed)
			r.dropRun(from, d.run)
		default:
			t.log.Warn("transfer: connection dropped: unexpected frame", "node", from, "type", f.typ)
			return
		}
	}
}

// state returns the state of stream k, creating it.
func (r *receiver) state(k streamKey) *streamState {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.streams[k]
	if st == nil {
		st = &streamState{}
		r.streams[k] = st
	}
	return st
}

// dropRun forgets the streams of origin's run.
func (r *receiver) dropRun(origin string, run RunKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.streams {
		if k.origin == origin && k.RunKey == run {
			delete(r.streams, k)
		}
	}
}

// batch applies one BATCH frame from node from and returns the answer
// (X5, X6); drop reports that the connection must end without an answer
// (a test's lost ACK).
func (r *receiver) batch(from string, f frame) (a answer, drop bool) {
	t := r.t
	b, err := decodeBatch(f.flags, f.payload)
	if err != nil {
		t.metrics.batches.WithLabelValues("refused").Inc()
		return answer{code: CodeRefused, data: []byte(err.Error())}, false
	}
	a = answer{stream: b.Stream, seq: b.Seq}
	k := streamKey{origin: b.Origin, Stream: b.Stream}
	st := r.state(k)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.used = t.now()
	switch {
	case b.Seq == 0:
		t.metrics.batches.WithLabelValues("refused").Inc()
		a.code, a.data = CodeRefused, []byte("seq 0")
		return a, false
	case b.Seq <= st.hw:
		// Applied before; its ACK was lost.
		t.metrics.batches.WithLabelValues("duplicate").Inc()
		if b.End {
			a.data = st.report
		}
		return a, false
	case b.Seq > st.hw+1:
		t.metrics.batches.WithLabelValues("rewind").Inc()
		a.code = CodeRewind
		a.data = fmt.Appendf(nil, "seq %d of a stream whose last applied batch here is %d", b.Seq, st.hw)
		return a, false
	}
	select {
	case t.applySem <- struct{}{}:
	case <-t.stopc:
		a.code, a.data = CodeRetry, []byte("this node is stopping")
		return a, false
	}
	out := t.handler.Apply(t.ctx, from, b)
	<-t.applySem
	switch out.Code {
	case CodeApplied:
		st.hw = b.Seq
		if b.End {
			st.report = slices.Clone(out.Report)
			a.data = st.report
		}
		t.metrics.batches.WithLabelValues("applied").Inc()
		if h := t.cfg.hookAfterApply; h != nil && h(b) {
			return a, true
		}
		return a, false
	case codeForward:
		switch {
		case f.flags&flagForwarded != 0:
			a.code, a.data = CodeRetry, []byte("a forwarded batch is not forwarded again: the nodes disagree on the owner of partition "+fmt.Sprint(b.Partition))
		case out.To == t.cfg.NodeID || out.To == from:
			a.code, a.data = CodeRetry, []byte("forwarding to "+out.To+" would loop")
		default:
			raw := slices.Clone(f.raw)
			raw[1] |= flagForwarded
			a = t.forward(t.ctx, out.To, raw, b.Stream, b.Seq, len(b.Rows))
			switch a.code {
			case CodeApplied:
				st.hw = b.Seq
				if b.End {
					st.report = slices.Clone(a.data)
				}
			case CodeRewind:
				st.hw = 0
				r.dropRunLocked(k)
			}
		}
		t.metrics.batches.WithLabelValues("forwarded").Inc()
		return a, false
	case CodeRewind:
		st.hw = 0
		r.dropRunLocked(k)
	}
	a.code, a.data = out.Code, []byte(out.Reason)
	if a.code > CodeRefused {
		a.code = CodeRefused // not a code of the protocol
	}
	t.metrics.batches.WithLabelValues(a.code.String()).Inc()
	return a, false
}

// dropRunLocked forgets the other streams of k's run from k's origin; k's
// own state, whose mutex the caller holds, is reset by the caller.
func (r *receiver) dropRunLocked(k streamKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for o := range r.streams {
		if o.origin == k.origin && o.RunKey == k.RunKey && o != k {
			delete(r.streams, o)
		}
	}
}
