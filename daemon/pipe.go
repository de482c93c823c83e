package daemon

import (
	"context"
	"net"
	"sync"
)

// pipeListener is a net.Listener of in-memory connections (net.Pipe): the
// in-process API of a data directory listens on no port, so nothing else
// on the machine can reach it.
type pipeListener struct {
	conns   chan net.Conn
	done    chan struct{}
	closeMu sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept implements net.Listener.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *pipeListener) Close() error {
	l.closeMu.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dialContext connects to the listener: the client's end of a new pipe.
func (l *pipeListener) dialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, srv := net.Pipe()
	select {
	case l.conns <- srv:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
	}
	client.Close()
	srv.Close()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, net.ErrClosed
}

// pipeAddr is the address of a pipeListener.
type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "data-directory" }
