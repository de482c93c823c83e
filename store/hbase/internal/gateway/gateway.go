// Package gateway starts and stops private Thrift2 gateways of the test
// HBase for outage tests: a gateway of its own that a test may stop and
// start without disturbing the shared one other tests use.
package gateway

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Gateway is one private Thrift2 gateway, run by scripts/hbase-standalone.sh
// start-thrift and stop-thrift on a port of its own.
type Gateway struct {
	// Addr is the gateway's host:port, for hbase.Options.Addr.
	Addr   string
	port   int
	script string
}

// Start starts a private gateway of the HBase that shared (the address of
// the shared gateway) belongs to, on a free loopback port chosen here, and
// stops it when t ends. A port chosen per gateway keeps tests of several
// checkouts on one machine from stopping each other's gateways. The script
// works on the HBase in SNAPSTORE_HBASE_DIR, which `scripts/hbase-standalone.sh
// env` exports beside the gateway address (without it, the .cache/hbase of
// the checkout the test runs in). It skips t when the test HBase was not
// started by scripts/hbase-standalone.sh on this machine. Starting a gateway
// takes a JVM start, about 5 to 10 s.
func Start(t testing.TB, shared string) *Gateway {
	t.Helper()
	if !strings.HasPrefix(shared, "127.0.0.1:") {
		t.Skipf("HBase at %s was not started by scripts/hbase-standalone.sh, which a private gateway needs", shared)
	}
	script, err := findScript()
	if err != nil {
		t.Skip(err.Error())
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("choosing a port for a private gateway: %v", err)
	}
	g := &Gateway{Addr: fmt.Sprintf("127.0.0.1:%d", port), port: port, script: script}
	g.Start(t)
	t.Cleanup(func() { g.Stop(t) })
	return g
}

// Stop stops the gateway process (TERM, and KILL after 60 s) and returns
// when it is gone: calls through it then fail with store.ErrUnavailable.
func (g *Gateway) Stop(t testing.TB) { t.Helper(); g.run(t, "stop-thrift") }

// Start starts the gateway again and returns when its port accepts.
func (g *Gateway) Start(t testing.TB) { t.Helper(); g.run(t, "start-thrift") }

func (g *Gateway) run(t testing.TB, cmd string) {
	t.Helper()
	c := exec.Command(g.script, cmd)
	c.Env = append(os.Environ(), fmt.Sprintf("SNAPSTORE_HBASE_THRIFT_PORT=%d", g.port))
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("hbase-standalone.sh %s (port %d): %v\n%s", cmd, g.port, err, out)
	}
}

// freePort returns a loopback port that was free a moment ago: the kernel's
// choice for a listener on port 0, closed again for the gateway to take.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// findScript returns scripts/hbase-standalone.sh of the module the test
// runs in, found by walking up from the working directory to go.mod.
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			s := filepath.Join(dir, "scripts", "hbase-standalone.sh")
			if _, err := os.Stat(s); err != nil {
				return "", fmt.Errorf("no %s to start a private gateway with", s)
			}
			return s, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory, so no scripts/hbase-standalone.sh")
		}
		dir = parent
	}
}
