package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/snapstore/snapstore/api"
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

// resolveSecret returns the secret text a reference points to; limits is
// nil for a reference of the config file, else the limits of an API one
// (secretref.go, F1-F4). The error names the variable or file, never the
// value, and for a file never the cause (F4), which goes to log.
func resolveSecret(ctx context.Context, log *slog.Logger, key string, s Secret, limits *SecretRefLimits) (Secret, error) {
	v := s.Reveal()
	if limits != nil {
		if err := limits.check(key, v); err != nil {
			return Secret{}, err
		}
	}
	switch {
	case strings.HasPrefix(v, secretEnvPrefix):
		name := v[len(secretEnvPrefix):]
		val, ok := os.LookupEnv(name)
		if !ok {
			return Secret{}, &OptionError{Key: key, Msg: fmt.Sprintf("environment variable %s is not set in the server's environment (set it where the server starts, and restart it)", name)}
		}
		return newSecret(val), nil
	case strings.HasPrefix(v, secretFilePrefix):
		p := v[len(secretFilePrefix):]
		text, err := readSecretFile(ctx, p, limits)
		if err != nil {
			log.Warn("secret file reference refused", "option", key, "path", p, "err", err)
			return Secret{}, errSecretFile(key, p)
		}
		return newSecret(text), nil
	}
	return s, nil
}

// resolveSecrets returns a copy of o with every Secret resolved, within
// ctx (resolveSecret).
func resolveSecrets(ctx context.Context, log *slog.Logger, prefix string, o OptionValues, limits *SecretRefLimits) (OptionValues, error) {
	out := make(OptionValues, len(o))
	var errs []error
	for k, v := range o {
		if s, ok := v.(Secret); ok {
			r, err := resolveSecret(ctx, log, prefix+k, s, limits)
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
// refused with an *OptionError rather than stored as a password; so it is
// when the replacement sends the secret elsewhere (another type, or
// another value of an Endpoint option: host, port, user, database, ...),
// or an admin could point the connection at a server of theirs and read
// the stored password out of the login it receives. spec is returned with
// the previous secrets filled in; its Options map is copied, never
// modified.
func keepRedactedSecrets(spec api.Connection, old *connDef) (api.Connection, error) {
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
		key := "options." + def.Key
		if old != nil && old.spec.Type != spec.Type {
			return spec, &OptionError{Key: key, Msg: fmt.Sprintf(`"REDACTED" keeps the stored secret only while the connection's type stays %s; give the secret again for type %s`, old.spec.Type, spec.Type)}
		}
		if old != nil {
			if changed := changedEndpoint(c.Options(), old.spec.Options, spec.Options); changed != "" {
				return spec, &OptionError{Key: key, Msg: fmt.Sprintf(`"REDACTED" keeps the stored secret only while the connection's endpoint stays the same; options.%s changed, so give the secret again`, changed)}
			}
		}
		var prev any
		if old != nil {
			prev = old.spec.Options[def.Key]
		}
		if ps, ok := prev.(string); !ok || ps == redacted || isSecretRef(ps) {
			return spec, &OptionError{Key: key, Msg: `"REDACTED" is the placeholder responses show for a secret; give the secret itself or an env:NAME / file:/path reference`}
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

// changedEndpoint returns the key of the first Endpoint option of defs
// whose value differs between the raw options old and new (given in one,
// absent in the other included; values compared once typed, so that a port
// 5432 equals "5432"), or "" when none does.
func changedEndpoint(defs []OptionDef, old, new map[string]any) string {
	typed := func(d OptionDef, v any, ok bool) any {
		if !ok {
			return nil
		}
		if t, err := parseOption(d, v); err == nil {
			return t
		}
		return v
	}
	for _, d := range defs {
		if !d.Endpoint {
			continue
		}
		ov, ook := old[d.Key]
		nv, nok := new[d.Key]
		if !reflect.DeepEqual(typed(d, ov, ook), typed(d, nv, nok)) {
			return d.Key
		}
	}
	return ""
}
