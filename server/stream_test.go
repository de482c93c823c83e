package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// TestStream_ClientCutCountedApart: an answer whose client closes the
// connection mid-stream (NDJSON, CSV, Arrow, a Parquet file) is logged
// and counted with status 499, not as the 200 its status line said, so
// that cut streams can be told from served ones; the same answer read
// whole is a 200. The socket buffers of both ends of the cut request are
// made small so that the server is still writing when the client hangs
// up after its first bytes: the answers are megabytes, the buffers a few
// hundred kilobytes at most (the answers read whole go through ordinary
// buffers: small ones make a transfer crawl).
func TestStream_ClientCutCountedApart(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.exec(`INSERT INTO products (id, name, price, stock)
		WITH RECURSIVE n(i) AS (SELECT 1000 UNION ALL SELECT i + 1 FROM n WHERE i < 41000)
		SELECT i, hex(randomblob(64)), i % 1000 + 0.25, i % 77 FROM n`)
	v := f.run("products")

	ts := httptest.NewUnstartedServer(f.srv.Handler())
	ts.Listener = smallSendBuffers{ts.Listener}
	ts.Start()
	defer ts.Close()
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err == nil {
				err = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
			}
			return conn, err
		},
	}}

	const route = "/v1/datasets/:dataset/rows"
	for _, format := range []string{"ndjson", "csv", "arrow", "parquet"} {
		t.Run(format, func(t *testing.T) {
			path := fmt.Sprintf("/v1/datasets/products/rows?format=%s&version=%d", format, v)
			before := requestCounts(t, f, route)

			resp, err := http.Get(f.ts.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("read whole: %d, %v", resp.StatusCode, err)
			}
			if n < 2<<20 {
				t.Fatalf("the answer is %d bytes, too small to outlast the socket buffers", n)
			}

			resp, err = client.Get(ts.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if _, err := io.ReadFull(resp.Body, make([]byte, 1<<10)); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close() // unread body, no keep-alive: the connection closes

			// The handler ends once a write fails; wait for its count.
			var after map[string]int
			for {
				after = requestCounts(t, f, route)
				if after["200"]+after["499"] >= before["200"]+before["499"]+2 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if got := after["200"] - before["200"]; got != 1 {
				t.Errorf("%d more requests counted as 200, want 1 (the answer read whole)", got)
			}
			if got := after["499"] - before["499"]; got != 1 {
				t.Errorf("%d more requests counted as 499, want 1 (the answer cut)", got)
			}
		})
	}
	if logs := f.logs.String(); !strings.Contains(logs, `msg="http request" method=GET route=`+route+` status=499`) {
		t.Errorf("a cut stream is not logged as 499:\n%s", logs)
	}
}

// requestCounts reads /metrics: the number of GET requests of route
// counted by status.
func requestCounts(t *testing.T, f *fixture, route string) map[string]int {
	t.Helper()
	body := string(f.must(200, "GET", "/metrics", "").body)
	re := regexp.MustCompile(`snapstore_server_http_request_duration_seconds_count\{method="GET",route="` +
		regexp.QuoteMeta(route) + `",status="(\d+)"\} (\d+)`)
	counts := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatal(err)
		}
		counts[m[1]] = n
	}
	return counts
}

// smallSendBuffers gives each accepted connection a small send buffer,
// so that a server writing an answer faster than its client reads it
// blocks after a few kilobytes.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := c.(*net.TCPConn).SetWriteBuffer(4 << 10); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// TestStream_ServerCutCounted: a stream the server cuts on its own error
// after its status line (streamAbort) is counted and logged with status
// 500, not lost from the metrics and the audit trail as the panic that
// cuts the connection passes the middleware. The handler is a test
// route on the server's own router and middleware that writes a first
// part and fails, as a scan whose store read fails mid-way does.
func TestStream_ServerCutCounted(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.srv.echo.GET("/test/stream-cut", func(c echo.Context) error {
		bw := startStream(c, mediaNDJSON)
		for range 4096 {
			bw.WriteString("{\"a\":1}\n")
		}
		bw.Flush()
		c.Response().Flush()
		return f.srv.endStream(c, bw, errors.New("a store read failed"))
	})
	before := requestCounts(t, f, "unmatched")
	resp, err := http.Get(f.ts.URL + "/test/stream-cut")
	if err != nil {
		t.Fatal(err)
	}
	_, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || rerr == nil {
		t.Fatalf("status %d, body error %v: want the 200 begun and a cut body", resp.StatusCode, rerr)
	}
	var after map[string]int
	for range 100 {
		if after = requestCounts(t, f, "unmatched"); after["500"] > before["500"] {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after["500"] != before["500"]+1 || after["200"] != before["200"] {
		t.Errorf("counts of the cut stream: %v before, %v after; want one more 500", before, after)
	}
}
