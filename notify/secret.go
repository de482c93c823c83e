package notify

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/snapstore/snapstore/internal/boundedread"
)

// A webhook's secret is a reference as a connection password is
// (adapters' OptSecret): "env:NAME" reads the environment variable NAME,
// "file:/abs/path" the file (one trailing newline trimmed), anything else
// is the secret itself.

// checkSecretRef validates the shape of a reference; literals pass.
func checkSecretRef(s string) error {
	switch {
	case strings.HasPrefix(s, "env:"):
		if n := s[len("env:"):]; n == "" || strings.ContainsAny(n, "= \t\n") {
			return fmt.Errorf("env reference wants a variable name, as env:NAME")
		}
	case strings.HasPrefix(s, "file:"):
		if !filepath.IsAbs(s[len("file:"):]) {
			return fmt.Errorf("file reference wants an absolute path, as file:/path")
		}
	}
	return nil
}

// resolveSecret returns the secret s refers to. Its errors name the
// variable or file, never a value.
func resolveSecret(s string) ([]byte, error) {
	switch {
	case strings.HasPrefix(s, "env:"):
		n := s[len("env:"):]
		v, ok := os.LookupEnv(n)
		if !ok {
			return nil, fmt.Errorf("secret: environment variable %s is not set", n)
		}
		return []byte(v), nil
	case strings.HasPrefix(s, "file:"):
		p := s[len("file:"):]
		b, err := readSecretFile(p)
		if err != nil {
			return nil, fmt.Errorf("secret: file %s cannot be read", p)
		}
		return []byte(strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")), nil
	}
	return []byte(s), nil
}

// maxSecretFile is the largest secret file read, as for connections.
const maxSecretFile = 64 << 10

// readSecretFile reads the regular file p, at most maxSecretFile bytes: a
// FIFO (which would block a sender) or a device is refused.
func readSecretFile(p string) ([]byte, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	return boundedread.File(p, maxSecretFile)
}
