package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A client that announces a body it never sends gets 408 instead of holding
// the connection forever; a normal body reaches the handler intact.
func TestBodyDeadline(t *testing.T) {
	var got string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.WriteHeader(204)
	})
	srv := httptest.NewUnstartedServer(WithBodyDeadline(handler, 200*time.Millisecond))
	srv.Start()
	defer srv.Close()

	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || got != `{"a":1}` {
		t.Fatalf("normal body: status %d, handler saw %q", resp.StatusCode, got)
	}

	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}")
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a hang fails the test instead of blocking it
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	body, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), `"code":"body_timeout"`) || r.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("stalled body: %d %s %q", r.StatusCode, r.Header.Get("Content-Type"), body)
	}
}
