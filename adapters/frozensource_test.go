package adapters

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/snapstore/snapstore/adapters/source"
)

// freezingProxy forwards TCP connections to addr until a client sends
// bytes holding trigger; from then on it forwards nothing more from the
// server to any client, as a source server stopped with SIGSTOP answers
// nothing, while the connections stay open.
type freezingProxy struct {
	ln      net.Listener
	trigger []byte
	frozen  atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func newFreezingProxy(t *testing.T, addr, trigger string) *freezingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{ln: ln, trigger: []byte(trigger)}
	t.Cleanup(p.close)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { // client to server: watch for the trigger
				defer p.wg.Done()
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if bytes.Contains(buf[:n], p.trigger) {
							p.frozen.Store(true)
						}
						if _, werr := s.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() { // server to client: nothing once frozen
				defer p.wg.Done()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if p.frozen.Load() {
						_, _ = io.Copy(io.Discard, s) // until close
						return
					}
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

func (p *freezingProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestMySQLFrozenSourceReadTimeout: a MariaDB that stops answering in the
// middle of a read (its answers to the second chunk query never come)
// fails the read once read_timeout passes, and the error says so, naming
// the bound, rather than that the server went away: the driver reports a
// read deadline and a dropped connection alike as "invalid connection".
func TestMySQLFrozenSourceReadTimeout(t *testing.T) {
	e := mysqlEnv(t)
	db := e.tempDatabase(t, "frozen")
	e.exec(t, db, "CREATE TABLE items (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO items SELECT seq, CONCAT('item ', seq) FROM seq_1_to_20")
	// The keyset's later chunk queries, and they alone, compare the key.
	proxy := newFreezingProxy(t, net.JoinHostPort(e.Host, e.Port), "WHERE (`id` > ")
	_, port, _ := net.SplitHostPort(proxy.ln.Addr().String())
	src := e.openSource(t, db, map[string]any{"host": "127.0.0.1", "port": port, "chunk_rows": 5, "read_timeout": "1s"})
	wantReadTimeout(t, src, proxy)
}

// wantReadTimeout reads table items of src, through proxy, which freezes
// after its first chunk of 5 rows: the read must end with a source
// timeout of read_timeout (1s), and the run's error name that bound, not
// a server gone.
func wantReadTimeout(t *testing.T, src Source, proxy *freezingProxy) {
	t.Helper()
	ctx := context.Background()
	tr, err := src.OpenTable(ctx, TableRequest{Resource: "items"})
	if err != nil {
		t.Fatal(noteErr(err))
	}
	defer tr.Close()
	n := 0
	for tr.Next(ctx) {
		n++
	}
	err = noteErr(tr.Err())
	if !proxy.frozen.Load() || n != 5 {
		t.Fatalf("read %d rows (frozen %v), want the first chunk of 5 then the freeze: %v", n, proxy.frozen.Load(), err)
	}
	var se *source.SourceError
	if !errors.As(err, &se) || se.Cause != "timeout" || se.Bound != "read_timeout" || !errors.Is(err, ErrSourceUnavailable) {
		t.Fatalf("error %v (%#v), want a source timeout of read_timeout", err, se)
	}
	msg := readError(ctx, "shop", err).Error()
	if !strings.Contains(msg, "no answer within 1s (read_timeout)") || strings.Contains(msg, "went away") {
		t.Errorf("run error %q, want it to name read_timeout and not a server gone", msg)
	}
}

// TestPostgresFrozenSourceReadTimeout: as TestMySQLFrozenSourceReadTimeout
// for PostgreSQL, whose read_timeout bounds the wait for each read of the
// connection: without it a run on a frozen server waits forever (the
// kernel of a stopped server still answers TCP keepalives), holding its
// dataset.
func TestPostgresFrozenSourceReadTimeout(t *testing.T) {
	e := postgresEnv(t)
	db := e.tempDatabase(t, "frozen")
	e.exec(t, db, "CREATE TABLE items (id INT PRIMARY KEY, v TEXT)",
		"INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 20) g")
	proxy := newFreezingProxy(t, net.JoinHostPort(e.Host, e.Port), `WHERE ("id") > (`)
	_, port, _ := net.SplitHostPort(proxy.ln.Addr().String())
	src := openEnvSource(t, e, db, map[string]any{"host": "127.0.0.1", "port": port, "chunk_rows": 5, "read_timeout": "1s"})
	wantReadTimeout(t, src, proxy)
	ctx := context.Background()

	// A cancelled read still ends with the context's error, not the
	// timeout's: the deadline of each read does not hide the one a cancel
	// sets.
	proxy = newFreezingProxy(t, net.JoinHostPort(e.Host, e.Port), `WHERE ("id") > (`)
	_, port, _ = net.SplitHostPort(proxy.ln.Addr().String())
	src = openEnvSource(t, e, db, map[string]any{"host": "127.0.0.1", "port": port, "chunk_rows": 5, "read_timeout": "2s"})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tr, err := src.OpenTable(cctx, TableRequest{Resource: "items"})
	if err != nil {
		t.Fatal(noteErr(err))
	}
	defer tr.Close()
	go func() {
		for !proxy.frozen.Load() && cctx.Err() == nil {
			runtime.Gosched()
		}
		cancel()
	}()
	for tr.Next(cctx) {
	}
	if err := noteErr(tr.Err()); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled read of a frozen source: %v, want context.Canceled", err)
	}
}
