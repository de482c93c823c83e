package notify

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("secret: file %s cannot be read", p)
		}
		return []byte(strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")), nil
	}
	return []byte(s), nil
}
