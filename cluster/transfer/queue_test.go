package transfer

import (
	"io"
	"io/fs"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransport_SpillsWhileTheReceiverIsDown queues 400 batches for a node
// that is not running, with room for 5 in memory: the rest is on disk
// only, memory stays within the bound, the backlog shows every row and
// the node as down; once the node starts, the queue drains to it in
// order, memory stays within the bound meanwhile, and the backlog ends
// at zero.
func TestTransport_SpillsWhileTheReceiverIsDown(t *testing.T) {
	ns, ms := newNodes(t, "node-a", "node-b") // nothing listens at node-b's address yet
	a, b := ns[0], ns[1]
	const queueBatches, lanes = 5, 4
	ta := a.open(t, ms, nil, func(c *Config) {
		c.QueueBatches = queueBatches
		c.QueueMemory = 1 << 20
		c.ConnectionsPerNode = lanes
	})
	run := RunKey{Dataset: "orders", Txn: 50}
	ev := newEvents()
	r, _ := ta.StartRun(run, CompressNone, ev)
	const parts, batches, rows = 8, 50, 20
	sendStreams(t, r, b.id, parts, batches, rows)

	bl := backlogOf(ta, b.id)
	if bl.Rows != parts*batches*rows || bl.Batches != parts*(batches+1) {
		t.Fatalf("backlog %+v: want %d rows in %d batches", bl, parts*batches*rows, parts*(batches+1))
	}
	if len(bl.Datasets) != 1 || bl.Datasets[0].Dataset != "orders" || bl.Datasets[0].Rows != bl.Rows {
		t.Errorf("backlog by dataset: %+v", bl.Datasets)
	}
	peer := ta.peers[b.id]
	if n := peer.memItems.Load(); n > queueBatches {
		t.Errorf("%d batches in memory, bound %d", n, queueBatches)
	}
	maxBatch := int64(0)
	for _, l := range peer.lanes {
		l.mu.Lock()
		for _, q := range l.queues {
			for _, it := range q.mem {
				maxBatch = max(maxBatch, int64(len(it.frame)))
			}
		}
		l.mu.Unlock()
	}
	if m := ta.mem.Load(); m > queueBatches*maxBatch || m == 0 {
		t.Errorf("%d bytes in memory; want some, at most %d batches of %d", m, queueBatches, maxBatch)
	}
	if bl.SpilledBytes < bl.Bytes-ta.mem.Load() || bl.SpilledBytes == 0 {
		t.Errorf("spilled %d of %d bytes, %d in memory", bl.SpilledBytes, bl.Bytes, ta.mem.Load())
	}
	onDisk := int64(0)
	filepath.WalkDir(filepath.Join(a.dir, "transfer"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			info, _ := d.Info()
			onDisk += info.Size()
		}
		return nil
	})
	if onDisk < bl.SpilledBytes {
		t.Errorf("%d bytes in the queue files, %d spilled", onDisk, bl.SpilledBytes)
	}
	eventually(t, 10*time.Second, "the node shows as waited for", func() bool {
		w := r.Waiting()
		return len(w) == 1 && w[0].Node == b.id && !w[0].Since.IsZero()
	})
	t.Logf("queued for a stopped node: %d rows, %d bytes (%d spilled, %d in memory), %d bytes of queue files",
		bl.Rows, bl.Bytes, bl.SpilledBytes, ta.mem.Load(), onDisk)

	// Memory while draining: sampled until the queue is empty.
	var peakItems, peakBytes atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := peer.memItems.Load(); n > peakItems.Load() {
				peakItems.Store(n)
			}
			if n := ta.mem.Load(); n > peakBytes.Load() {
				peakBytes.Store(n)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	rec := newRecorder()
	b.open(t, ms, rec, nil)
	eventually(t, 30*time.Second, "every END answered", func() bool { return ev.reportCount() == parts })
	close(stop)
	wg.Wait()
	checkStreams(t, rec, run, parts, batches)
	if bl := backlogOf(ta, b.id); bl.Rows != 0 || bl.Bytes != 0 || bl.SpilledBytes != 0 {
		t.Errorf("backlog after the drain: %+v", bl)
	}
	if n := peakItems.Load(); n > queueBatches+lanes {
		t.Errorf("%d batches in memory while draining, bound %d + %d", n, queueBatches, lanes)
	}
	if n := peakBytes.Load(); n > (queueBatches+lanes)*maxBatch {
		t.Errorf("%d bytes in memory while draining, bound %d", n, (queueBatches+lanes)*maxBatch)
	}
	if len(r.Waiting()) != 0 {
		t.Errorf("still waiting: %v", r.Waiting())
	}
	r.End(true)
	left := 0
	filepath.WalkDir(filepath.Join(a.dir, "transfer"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left++
		}
		return nil
	})
	if left != 0 {
		t.Errorf("%d queue files left after End", left)
	}
}

// TestTransport_Compression sends the same rows with each compression
// through a proxy that counts the bytes on the wire (TLS included): each
// round-trips, metadata sends less than none and all less than metadata.
func TestTransport_Compression(t *testing.T) {
	ns, ms := newNodes(t, "node-a", "node-b")
	a, b := ns[0], ns[1]
	rec := newRecorder()
	b.open(t, ms, rec, nil)
	proxy := newCountingProxy(t, b.addr)
	senderView := newMembers()
	senderView.set(b.id, proxy.addr)
	ta := a.open(t, senderView, nil, nil)

	const parts, batches, rows = 4, 25, 200
	wire := map[Compression]int64{}
	for i, c := range []Compression{CompressNone, CompressMetadata, CompressAll} {
		run := RunKey{Dataset: "orders", Txn: int64(60 + i)}
		ev := newEvents()
		before := proxy.n.Load()
		r, _ := ta.StartRun(run, c, ev)
		sendStreams(t, r, b.id, parts, batches, rows)
		eventually(t, 20*time.Second, "every END answered", func() bool { return ev.reportCount() == parts })
		r.End(true)
		wire[c] = proxy.n.Load() - before
		got := 0
		for _, x := range rec.batches() {
			if x.stream.RunKey == run && !x.end {
				got += len(x.keys)
				for j, k := range x.keys {
					if x.values[j][1] != "customer name "+k {
						t.Fatalf("%s: row %s came back as %q", c, k, x.values[j])
					}
				}
			}
		}
		if got != parts*batches*rows {
			t.Fatalf("%s: %d rows applied, want %d", c, got, parts*batches*rows)
		}
		t.Logf("compression %-8s: %d rows, %d bytes on the wire (%.1f bytes a row)", c, got, wire[c], float64(wire[c])/float64(got))
	}
	if !(wire[CompressAll] < wire[CompressMetadata] && wire[CompressMetadata] < wire[CompressNone]) {
		t.Errorf("bytes on the wire: none %d, metadata %d, all %d; want all < metadata < none", wire[CompressNone], wire[CompressMetadata], wire[CompressAll])
	}
}

// countingProxy forwards TCP to a target and counts the bytes sent to it.
type countingProxy struct {
	addr string
	n    atomic.Int64
}

func newCountingProxy(t *testing.T, target string) *countingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cp := &countingProxy{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, u)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(countingWriter{u, &cp.n}, c); u.Close() }()
			go func() { defer wg.Done(); io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return cp
}

// countingWriter counts the bytes written through it as they go.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
