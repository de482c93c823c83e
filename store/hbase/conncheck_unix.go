//go:build unix

package hbase

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether an idle connection was closed by the gateway
// (or has bytes waiting, which a request-reply protocol never leaves
// between calls): one non-blocking read of the socket, which finds EOF,
// an error, a byte, or nothing yet (EAGAIN: the connection looks alive).
func peerClosed(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var (
		buf  [1]byte
		n    int
		rerr error
	)
	if err := rc.Read(func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), buf[:])
		return true // do not wait for the socket to become readable
	}); err != nil {
		return true
	}
	switch {
	case n > 0:
		return true
	case errors.Is(rerr, syscall.EAGAIN), errors.Is(rerr, syscall.EWOULDBLOCK), errors.Is(rerr, syscall.EINTR):
		return false
	default: // n == 0: EOF; or a reset
		return true
	}
}
