package hbase

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/snapstore/snapstore/store"
)

// conn is one Thrift connection to the gateway: a socket, a buffered
// transport and a binary protocol (the Thrift2 server's defaults: not
// framed, not compact). A conn is used by one goroutine at a time; the pool
// hands it out and takes it back.
type conn struct {
	nc     net.Conn
	proto  thrift.TProtocol
	client *thrift.TStandardClient
}

// pool keeps up to size open connections to one gateway. No lock is held
// across a dial or a call: get takes a slot and an idle conn under mu, then
// dials, if needed, outside it.
type pool struct {
	addr        string
	dialTimeout time.Duration
	conf        *thrift.TConfiguration
	slots       chan struct{} // one token per connection in use
	metrics     *metrics

	mu struct {
		sync.Mutex
		idle   []*conn // connections not in use, most recently used last
		open   int     // connections dialed and not yet closed
		closed bool
	}
}

func newPool(addr string, size int, dialTimeout time.Duration, m *metrics) *pool {
	return &pool{
		addr:        addr,
		dialTimeout: dialTimeout,
		conf:        &thrift.TConfiguration{MaxMessageSize: 256 << 20},
		slots:       make(chan struct{}, size),
		metrics:     m,
	}
}

// get returns a connection, waiting for a free slot while ctx allows;
// reused says whether it had served calls before (and so may have been
// closed by a gateway that went away since).
func (p *pool) get(ctx context.Context) (c *conn, reused bool, err error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, false, store.ErrClosed
	}
	for n := len(p.mu.idle); n > 0; n-- {
		c := p.mu.idle[n-1]
		p.mu.idle = p.mu.idle[:n-1]
		if peerClosed(c.nc) {
			// Idle since a gateway that went away: no call was made on it,
			// so none is lost, whatever the method (a scanner's next rows
			// included).
			p.mu.open--
			_ = c.nc.Close()
			continue
		}
		p.mu.Unlock()
		return c, true, nil
	}
	p.mu.open++
	p.mu.Unlock()
	c, err = p.dial(ctx)
	if err != nil {
		p.mu.Lock()
		p.mu.open--
		p.mu.Unlock()
		<-p.slots
		return nil, false, err
	}
	return c, false, nil
}

func (p *pool) dial(ctx context.Context) (*conn, error) {
	d := net.Dialer{Timeout: p.dialTimeout, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("dialing the Thrift2 gateway %s: %w: %w", p.addr, store.ErrUnavailable, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	tr := thrift.NewStreamTransportRW(nc)
	proto := thrift.NewTBinaryProtocolConf(tr, p.conf)
	return &conn{nc: nc, proto: proto, client: thrift.NewTStandardClient(proto, proto)}, nil
}

// put returns c to the pool; a broken connection (bad) is closed instead.
func (p *pool) put(c *conn, bad bool) {
	p.mu.Lock()
	if bad || p.mu.closed {
		p.mu.open--
		p.mu.Unlock()
		_ = c.nc.Close()
	} else {
		p.mu.idle = append(p.mu.idle, c)
		p.mu.Unlock()
	}
	<-p.slots
}

// close closes the idle connections and makes get fail with ErrClosed;
// connections in use are closed when they come back.
func (p *pool) close() {
	p.mu.Lock()
	p.mu.closed = true
	p.mu.Unlock()
	p.dropIdle()
}

// dropIdle closes the idle connections, after one of them turned out
// broken: they were likely opened to the same gateway process.
func (p *pool) dropIdle() {
	p.mu.Lock()
	idle := p.mu.idle
	p.mu.idle = nil
	p.mu.open -= len(idle)
	p.mu.Unlock()
	for _, c := range idle {
		_ = c.nc.Close()
	}
}

func (p *pool) stats() (open, idle int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.open, len(p.mu.idle)
}

// errBrokenConn marks errors after which a connection's stream is in an
// unknown state.
var errBrokenConn = errors.New("broken connection")

// call runs one service method on a pooled connection: it sends args and
// reads the reply into res, within ctx and at most timeout. A declared
// exception (res.exception()) is returned as the error. When a connection
// turns out broken (the gateway restarted since a reused one was opened,
// or a gateway that has just started dropped a new one), the idle
// connections are dropped and the call is made again on a new one, at
// most brokenRetries times and after a pause of retryPause times the
// attempt when the broken one was new, except for the methods that are
// not idempotent (repeatable):
// getScannerRows advances its scanner, checkAndMutate could find its own
// write and report "not applied", increment would count twice. Every
// other method the store uses reads, or writes idempotently (store.S4).
func (p *pool) call(ctx context.Context, timeout time.Duration, method string, args callArgs, res *callResult) error {
	start := time.Now()
	err := ctx.Err()
	for attempt := 0; err == nil; attempt++ {
		var reused bool
		reused, err = p.callOnce(ctx, start, timeout, method, args, res)
		if attempt == brokenRetries || !errors.Is(err, errBrokenConn) {
			break
		}
		// The other idle connections were likely opened to the same
		// gateway process: drop them, whether or not this call is made
		// again.
		p.dropIdle()
		if !repeatable(method) {
			break
		}
		*res = callResult{success: res.success}
		if !reused {
			select {
			case <-time.After(time.Duration(attempt+1) * retryPause):
			case <-ctx.Done():
			}
		}
		err = ctx.Err() // go round again unless ctx ended
	}
	p.metrics.observe(method, start, err)
	return err
}

// brokenRetries is how many times pool.call makes a call again after a
// broken connection, and retryPause the unit of its pause after a new one
// broke: a gateway that has just started may drop its first connections.
const (
	brokenRetries = 2
	retryPause    = 200 * time.Millisecond
)

// repeatable reports whether a call of method may be made again after it
// failed on a broken connection (pool.call).
func repeatable(method string) bool {
	switch method {
	case "getScannerRows", methodCheckAndMutate, methodIncrement:
		return false
	}
	return true
}

func (p *pool) callOnce(ctx context.Context, start time.Time, timeout time.Duration, method string, args callArgs, res *callResult) (reused bool, err error) {
	c, reused, err := p.get(ctx)
	if err != nil {
		return false, err
	}
	deadline := start.Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.nc.SetDeadline(deadline)
	// A canceled ctx interrupts the call by moving the deadline to the past;
	// the connection is then dropped.
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	// The protocol gets a context without deadline: TBinaryProtocol retries
	// reads that time out while its context has time left, which would spin
	// on our passed socket deadline.
	_, err = c.client.Call(context.WithoutCancel(ctx), method, args, res)
	interrupted := !stop()
	var tae thrift.TApplicationException
	switch {
	case err == nil:
		err = res.exception()
		p.put(c, false)
	case interrupted && ctx.Err() != nil:
		p.put(c, true)
		err = ctx.Err()
	case errors.As(err, &tae) && serverException(tae.TypeId()):
		// The server answered with an application exception: the reply was
		// read whole, so the stream is still in step.
		p.put(c, false)
	default:
		p.put(c, true)
		err = fmt.Errorf("%w to the Thrift2 gateway %s: %w", errBrokenConn, p.addr, err)
	}
	return reused, err
}

// serverException reports whether a TApplicationException of this type was
// sent by the server (and read whole) rather than raised by the client on a
// reply out of step.
func serverException(typeID int32) bool {
	switch typeID {
	case thrift.UNKNOWN_APPLICATION_EXCEPTION, thrift.UNKNOWN_METHOD, thrift.MISSING_RESULT, thrift.INTERNAL_ERROR:
		return true
	}
	return false
}
