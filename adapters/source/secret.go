package source

import (
	"fmt"
	"log/slog"
	"strings"
)

// Secret is a secret option value (a password, a DSN with a password), as
// OptionValues.Secret returns it to a connector. It renders as REDACTED
// through String, fmt verbs, slog and JSON, so it cannot leak by accident
// (N4). Reveal returns the real text.
type Secret struct{ v string }

// Redacted stands for a secret in responses, log lines and errors.
const Redacted = "REDACTED"

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{v: s} }

// Reveal returns the secret text. Call it only to hand the value to a driver.
func (s Secret) Reveal() string { return s.v }

// String returns "REDACTED" (or "" for an empty secret).
func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return "REDACTED"
}

// GoString returns the same as String.
func (s Secret) GoString() string { return s.String() }

// Format renders as String for every fmt verb (%d, %x and %q too), so no
// verb can print the text.
func (s Secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(s.String())) }

// LogValue renders as REDACTED in slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON renders as "REDACTED".
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.String() + `"`), nil }

// Secret references: "env:NAME" reads the environment variable NAME,
// "file:/abs/path" reads the file (one trailing newline trimmed). Anything
// else is a literal secret.
const (
	SecretEnvPrefix  = "env:"
	SecretFilePrefix = "file:"
)

// IsSecretRef reports whether s is an env: or file: reference (which may
// be shown; a literal secret may not).
func IsSecretRef(s string) bool {
	return strings.HasPrefix(s, SecretEnvPrefix) || strings.HasPrefix(s, SecretFilePrefix)
}

// ScrubError hides every given secret text inside err's message while
// keeping errors.Is and errors.As working (the chain is kept): every error
// from a source passes it with the resolved secrets (N4).
func ScrubError(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, s := range secrets {
		if len(s) >= 3 && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, Redacted)
			changed = true
		}
	}
	if !changed {
		return err
	}
	return &scrubbedError{msg: msg, err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }

func (e *scrubbedError) Unwrap() error { return e.err }
