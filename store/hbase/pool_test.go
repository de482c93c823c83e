package hbase

import (
	"net"
	"testing"
	"time"
)

// TestPoolSkipsClosedIdle: an idle connection the gateway closed (it went
// away, or restarted) is dropped by get before any call is made on it, so
// that a call that cannot be repeated (a scanner's next rows) never meets
// it; an idle connection still open is reused.
func TestPoolSkipsClosedIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	p := newPool(ln.Addr().String(), 2, time.Second, nil)
	defer p.close()
	ctx := t.Context()

	c1, reused, err := p.get(ctx)
	if err != nil || reused {
		t.Fatalf("first get: reused %v, %v", reused, err)
	}
	srv1 := <-accepted
	p.put(c1, false)
	if peerClosed(c1.nc) {
		t.Fatal("an open idle connection taken for closed")
	}
	c, reused, err := p.get(ctx)
	if err != nil || !reused || c != c1 {
		t.Fatalf("second get: reused %v, same %v, %v", reused, c == c1, err)
	}
	p.put(c, false)

	srv1.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !peerClosed(c1.nc) {
		if time.Now().After(deadline) {
			t.Fatal("the gateway's close is not seen on the idle connection")
		}
		time.Sleep(time.Millisecond)
	}
	c2, reused, err := p.get(ctx)
	if err != nil || reused || c2 == c1 {
		t.Fatalf("get after the gateway closed the idle connection: reused %v, same %v, %v", reused, c2 == c1, err)
	}
	if open, idle := p.stats(); open != 1 || idle != 0 {
		t.Errorf("pool: %d open, %d idle; want 1, 0", open, idle)
	}
	p.put(c2, false)
	(<-accepted).Close()
}
