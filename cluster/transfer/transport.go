package transfer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Transport is a node's end of the transfer protocol: the receiver
// listening on Config.Listen and the senders of the runs this node
// coordinates, with their queues. Open starts it, Close ends it. Its
// methods are safe for concurrent use.
type Transport struct {
	cfg     Config
	log     *slog.Logger
	creds   *credentials
	ln      net.Listener
	handler Handler
	metrics *metrics
	recv    *receiver

	// mem is the bytes of batches held in memory by every queue (X7).
	mem atomic.Int64
	// sendSem and applySem bound the frames being written and the batches
	// being applied (Config.MaxWorkers each).
	sendSem, applySem chan struct{}

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	stopc  <-chan struct{}
	wg     sync.WaitGroup
	closed sync.Once

	// mu guards peers and runs; it is held for no I/O.
	mu    sync.Mutex
	peers map[string]*peer
	runs  map[RunKey]*Run
}

// Open starts the transport of cfg.NodeID: reads and checks its
// certificate, key and CA (X1; ErrCredentials), empties cfg.Dir (swap files of a previous
// process belong to runs that died with it), and listens on cfg.Listen.
func Open(cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	creds, err := loadCredentials(cfg.CAFile, cfg.CertFile, cfg.KeyFile, cfg.NodeID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "transfer")
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return nil, fmt.Errorf("transfer: emptying %s: %w", cfg.Dir, err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("transfer: creating %s: %w", cfg.Dir, err)
	}
	handler := cfg.Handler
	if handler == nil {
		handler = refuseAll{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Transport{
		cfg: cfg, log: log, creds: creds, handler: handler,
		sendSem: make(chan struct{}, cfg.MaxWorkers), applySem: make(chan struct{}, cfg.MaxWorkers),
		ctx: ctx, cancel: cancel, stopc: ctx.Done(),
		peers: map[string]*peer{}, runs: map[RunKey]*Run{},
	}
	t.recv = newReceiver(t)
	if t.metrics, err = newMetrics(cfg.Registerer, t); err != nil {
		cancel()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		cancel()
		t.metrics.unregister()
		return nil, fmt.Errorf("transfer: listening on %s: %w", cfg.Listen, err)
	}
	t.ln = ln
	t.wg.Add(2)
	go t.recv.acceptLoop(ln)
	go t.recv.sweepLoop()
	log.Info("transfer listening", "listen", ln.Addr().String(), "node", cfg.NodeID,
		"connections_per_node", cfg.ConnectionsPerNode, "max_workers", cfg.MaxWorkers,
		"queue_batches", cfg.QueueBatches, "queue_memory", cfg.QueueMemory)
	return t, nil
}

// Addr returns the address the receiver listens on (with the port chosen
// when Config.Listen's port is 0).
func (t *Transport) Addr() string { return t.ln.Addr().String() }

// ErrRunExists is returned by StartRun for a run that is already sending.
var ErrRunExists = errors.New("transfer: the run is already sending")

// ErrClosed is returned once the transport is closed.
var ErrClosed = errors.New("transfer: closed")

// ErrCredentials wraps Open's errors about the CA, certificate and key
// files: missing, unreadable, not matching, or not naming the node.
var ErrCredentials = errors.New("transfer: certificates")

// StartRun begins sending run: its batches are compressed as c and its
// events go to ev (which may be nil). End it with Run.End.
func (t *Transport) StartRun(run RunKey, c Compression, ev Events) (*Run, error) {
	if c > CompressAll {
		return nil, fmt.Errorf("transfer: compression %d", c)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() != nil {
		return nil, ErrClosed
	}
	if _, ok := t.runs[run]; ok {
		return nil, fmt.Errorf("%w: %v", ErrRunExists, run)
	}
	r := &Run{t: t, key: run, c: c, ev: ev, seqs: map[int]uint64{}, queues: map[*lane]*queue{}}
	t.runs[run] = r
	return r, nil
}

// peer returns the destination id, starting its lanes at the first use.
func (t *Transport) peer(id string) (*peer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx.Err() != nil {
		return nil, ErrClosed
	}
	p := t.peers[id]
	if p == nil {
		p = newPeer(t, id)
		t.peers[id] = p
		for _, l := range p.lanes {
			t.wg.Add(1)
			go l.loop()
		}
	}
	return p, nil
}

// laneOf returns the lane of stream s: its partition modulo the lanes, so
// that a stream's batches go in order on one connection (X3).
func (t *Transport) laneOf(s Stream) int { return s.Partition % t.cfg.ConnectionsPerNode }

// forward sends a batch received for a partition this node does not own
// on to node to and returns to's answer (X6). frame is the batch's frame,
// flagged as forwarded.
func (t *Transport) forward(ctx context.Context, to string, frame []byte, s Stream, seq uint64, rows int) answer {
	p, err := t.peer(to)
	if err != nil {
		return answer{stream: s, seq: seq, code: CodeRetry, data: []byte(err.Error())}
	}
	l := p.lanes[t.laneOf(s)]
	fw := &fwdItem{frame: frame, stream: s, seq: seq, rows: rows, reply: make(chan answer, 1)}
	l.mu.Lock()
	l.fwd = append(l.fwd, fw)
	l.mu.Unlock()
	l.poke()
	t.metrics.forwarded.Inc()
	select {
	case a := <-fw.reply:
		return a
	case <-ctx.Done():
		l.mu.Lock()
		if i := indexFwd(l.fwd, fw); i >= 0 {
			l.fwd = append(l.fwd[:i], l.fwd[i+1:]...)
		}
		l.mu.Unlock()
		return answer{stream: s, seq: seq, code: CodeRetry, data: []byte("this node is stopping")}
	}
}

func indexFwd(fs []*fwdItem, fw *fwdItem) int {
	for i, f := range fs {
		if f == fw {
			return i
		}
	}
	return -1
}

// now is the transport's clock.
func (t *Transport) now() time.Time { return time.Now() }

// sleep pauses for d, or until Close (then false).
func (t *Transport) sleep(d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-t.stopc:
		return false
	}
}

// Close stops the transport: the listener, every connection, every lane.
// Runs still sending are ended (not committed) and their queues removed.
func (t *Transport) Close() error {
	var err error
	t.closed.Do(func() {
		t.cancel()
		err = t.ln.Close()
		t.recv.closeConns()
		t.wg.Wait()
		t.mu.Lock()
		runs := make([]*Run, 0, len(t.runs))
		for _, r := range t.runs {
			runs = append(runs, r)
		}
		t.mu.Unlock()
		for _, r := range runs {
			r.drop()
		}
		t.metrics.unregister()
		t.log.Info("transfer stopped")
	})
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("transfer: closing the listener: %w", err)
	}
	return nil
}
