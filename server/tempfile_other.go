//go:build !linux

package server

import "os"

// openUnnamedTemp is the O_TMPFILE of Linux, which other systems lack:
// the caller makes a named file and unlinks it.
func openUnnamedTemp() (*os.File, bool) { return nil, false }
