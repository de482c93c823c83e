package hbasetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Gateway is a private Thrift2 gateway of the test HBase, on a port of its
// own, that an outage test stops and starts (through
// scripts/hbase-standalone.sh stop-thrift and start-thrift) without
// disturbing the shared gateway other tests use.
type Gateway struct {
	// Addr is the gateway's host:port, for hbase.Options.Addr.
	Addr   string
	port   int
	script string
}

// StartGateway starts a private gateway on port (pick one per test package,
// other than 29090 to 29092, which store/hbase uses) and stops it when t
// ends. The script works on the HBase in SNAPSTORE_HBASE_DIR, which
// `scripts/hbase-standalone.sh env` exports beside the gateway address
// (without it, the .cache/hbase of the checkout the test runs in). It skips t when there is no test HBase, or when the test HBase was
// not started by scripts/hbase-standalone.sh on this machine. Starting a
// gateway takes a JVM start, about 5 to 10 s.
func StartGateway(t testing.TB, port int) *Gateway {
	t.Helper()
	addr := Addr(t)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Skipf("HBase at %s was not started by scripts/hbase-standalone.sh, which a private gateway needs", addr)
	}
	script, err := findScript()
	if err != nil {
		t.Skip(err.Error())
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
