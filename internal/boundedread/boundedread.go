// Package boundedread reads files and streams that should be small (key
// files, token files, the config file, a definition on stdin) up to a
// bound, so that a device such as /dev/zero or a file named by mistake is
// refused rather than read until the memory runs out.
package boundedread

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is wrapped by the error of a read that found more than its
// bound.
var ErrTooLarge = errors.New("larger than the bound")

// tooLarge is the error of a read of more than max bytes: its text says
// the bound ("larger than 4096 bytes").
type tooLarge struct{ max int64 }

func (e tooLarge) Error() string { return fmt.Sprintf("larger than %d bytes", e.max) }
func (e tooLarge) Unwrap() error { return ErrTooLarge }

// All reads r to its end, and fails, wrapping ErrTooLarge, when it holds
// more than max bytes (what was read, max+1 bytes at most, is returned
// with the error, for the caller to clear).
func All(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err == nil && int64(len(b)) > max {
		err = tooLarge{max}
	}
	return b, err
}

// File reads the file at path as All does; an error opening it is
// os.Open's (an *fs.PathError naming the file).
func File(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return All(f, max)
}
