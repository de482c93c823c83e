package adapters

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// checkSecretRef validates the shape of a reference; literals always pass.
func checkSecretRef(s string) error {
	switch {
	case strings.HasPrefix(s, secretEnvPrefix):
		name := s[len(secretEnvPrefix):]
		if name == "" || strings.ContainsAny(name, "= \t\n") {
			return fmt.Errorf("env reference wants a variable name, as env:NAME")
		}
	case strings.HasPrefix(s, secretFilePrefix):
		p := s[len(secretFilePrefix):]
		if !filepath.IsAbs(p) {
			return fmt.Errorf("file reference wants an absolute path, as file:/path")
		}
	}
	return nil
}

// resolveSecret returns the secret text a reference points to. The error
// names the variable or file, never the value.
func resolveSecret(key string, s Secret) (Secret, error) {
	v := s.Reveal()
	switch {
	case strings.HasPrefix(v, secretEnvPrefix):
		name := v[len(secretEnvPrefix):]
		val, ok := os.LookupEnv(name)
		if !ok {
			return Secret{}, &OptionError{Key: key, Msg: fmt.Sprintf("environment variable %s is not set", name)}
		}
		return newSecret(val), nil
	case strings.HasPrefix(v, secretFilePrefix):
		p := v[len(secretFilePrefix):]
		b, err := os.ReadFile(p)
		if err != nil {
			var pe *os.PathError
			msg := "cannot read secret file " + p
			if errors.As(err, &pe) {
				msg += ": " + pe.Err.Error()
			}
			return Secret{}, &OptionError{Key: key, Msg: msg}
		}
		return newSecret(strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")), nil
	}
	return s, nil
}

// resolveSecrets returns a copy of o with every Secret resolved.
func resolveSecrets(prefix string, o OptionValues) (OptionValues, error) {
	out := make(OptionValues, len(o))
	var errs []error
	for k, v := range o {
		if s, ok := v.(Secret); ok {
			r, err := resolveSecret(prefix+k, s)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out[k] = r
			continue
		}
		out[k] = v
	}
	return out, errors.Join(errs...)
}

// redactOptions renders raw options for a response: secret literals as
// REDACTED, secret references (env:, file:) as given, other values as given
// (N4).
func redactOptions(defs []OptionDef, raw map[string]any) map[string]any {
	secret := map[string]bool{}
	for _, d := range defs {
		if d.Type == OptSecret {
			secret[d.Key] = true
		}
	}
	out := make(map[string]any, len(raw))
	for k, v := range raw {
		if secret[k] {
			if s, ok := v.(string); ok && isSecretRef(s) {
				out[k] = s
			} else {
				out[k] = redacted
			}
			continue
		}
		out[k] = v
	}
	return out
}

// keepRedactedSecrets lets a client GET a connection, change a field and PUT
// the body back: a secret option whose value is the placeholder "REDACTED"
// (what responses show for a literal secret) keeps the secret of the
// connection it replaces, as Grafana does with its secure fields. Without
// a previous literal secret of the same type and key, the placeholder is
// refused with an *OptionError rather than stored as a password. spec is
// returned with the previous secrets filled in; its Options map is copied,
// never modified.
func keepRedactedSecrets(spec ConnectionSpec, old *connDef) (ConnectionSpec, error) {
	c, err := lookupConnector(spec.Type)
	if err != nil {
		return spec, nil // parseConnection reports the unknown type
	}
	var opts map[string]any
	for _, def := range c.Options() {
		if def.Type != OptSecret {
			continue
		}
		v, ok := spec.Options[def.Key].(string)
		if !ok || v != redacted {
			continue
		}
		var prev any
		if old != nil && old.spec.Type == spec.Type {
			prev = old.spec.Options[def.Key]
		}
		if ps, ok := prev.(string); !ok || ps == redacted || isSecretRef(ps) {
			return spec, &OptionError{Key: "options." + def.Key, Msg: `"REDACTED" is the placeholder responses show for a secret; give the secret itself or an env:NAME / file:/path reference`}
		}
		if opts == nil {
			opts = make(map[string]any, len(spec.Options))
			for k, v := range spec.Options {
				opts[k] = v
			}
		}
		opts[def.Key] = prev
	}
	if opts != nil {
		spec.Options = opts
	}
	return spec, nil
}
