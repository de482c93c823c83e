package e2e

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Ports that a test picks and a process binds later (gossip, transfer,
// a private MariaDB) are drawn below the kernel's ephemeral range: every
// process of the run that binds port 0 (the servers' API listeners, the
// other test packages, the clients' outgoing connections) is handed ports
// from that range, so between the pick and the bind only another explicit
// bind could take a port drawn here, and the picks of this process never
// repeat (givenPorts).

// portFloor is the lowest port drawn; a port some service listens on
// (the test MariaDB, PostgreSQL and HBase have fixed ones) is passed over
// when it is picked.
const portFloor = 10000

// ephemeralLow is the first port of the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), 32768 where it cannot be read.
var ephemeralLow = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= portFloor+1000 {
		return 32768
	}
	return lo
})

// givenPorts are the ports pickPort returned in this process, per IP.
var givenPorts = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// pickPort returns ip:port with a port below the ephemeral range that is
// free for TCP on ip, and for UDP too when udp is set (serf's gossip uses
// both).
func pickPort(t *testing.T, ip string, udp bool) string {
	t.Helper()
	givenPorts.Lock()
	defer givenPorts.Unlock()
	hi := ephemeralLow()
	for range 200 {
		addr := net.JoinHostPort(ip, strconv.Itoa(portFloor+rand.IntN(hi-portFloor)))
		if givenPorts.m[addr] {
			continue
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		if udp {
			u, err := net.ListenPacket("udp", addr)
			if err != nil {
				l.Close()
				continue
			}
			u.Close()
		}
		l.Close()
		givenPorts.m[addr] = true
		return addr
	}
	t.Fatalf("no port free below %d on %s", hi, ip)
	return ""
}

// gossipAddr returns ip:port free for TCP and UDP on ip.
func gossipAddr(t *testing.T, ip string) string {
	t.Helper()
	return pickPort(t, ip, true)
}

// freePort returns a port free for TCP on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(pickPort(t, "127.0.0.1", false))
	n, _ := strconv.Atoi(port)
	return n
}
