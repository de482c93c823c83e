//go:build !unix

package hbase

import "net"

// peerClosed cannot look at the socket here: a connection closed by the
// gateway is found by the call that uses it (pool.call).
func peerClosed(net.Conn) bool { return false }
