//go:build linux

package server

import (
	"os"

	"golang.org/x/sys/unix"
)

// openUnnamedTemp opens a new file of the temporary directory that has no
// name in it (O_TMPFILE), readable and writable by this process alone;
// false when the file system cannot make one (the caller then makes a
// named one and unlinks it).
func openUnnamedTemp() (*os.File, bool) {
	f, err := os.OpenFile(os.TempDir(), os.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false
	}
	return f, true
}
