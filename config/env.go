package config

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// envPrefix starts every configuration environment variable.
const envPrefix = "SNAPSTORE_"

// applyEnv overrides cfg from SNAPSTORE_* variables. A variable's name is
// the key path in upper case with dots and brackets turned into
// underscores: SNAPSTORE_LISTEN, SNAPSTORE_STORAGE_HBASE_THRIFT,
// SNAPSTORE_ADAPTERS_0_SCHEDULE, SNAPSTORE_CONNECTIONS_0_OPTIONS_PASSWORD
// (an option key, lower-cased). Lists of strings take comma-separated
// values. A bad value, or a list index past the file's list, is an error
// naming the variable. Variables that name no key are returned as unknown
// (the scripts and tests use SNAPSTORE_* variables of their own); serve
// logs them as a warning.
func applyEnv(cfg *Config, environ []string) (unknown []string, err error) {
	var errs []error
	slices.Sort(environ)
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, envPrefix) {
			continue
		}
		rest := strings.TrimPrefix(name, envPrefix)
		if key, ok := envAliases[name]; ok {
			rest = key
		}
		var key string
		err := setEnv(reflect.ValueOf(cfg).Elem(), rest, val, "", &key)
		switch {
		case errors.Is(err, errNoSuchKey):
			unknown = append(unknown, name)
		case err != nil:
			errs = append(errs, fmt.Errorf("environment variable %s: %w", name, err))
		default:
			if cfg.envKeys == nil {
				cfg.envKeys = map[string]string{}
			}
			cfg.envKeys[key] = name
		}
	}
	return unknown, errors.Join(errs...)
}

// envAliases are variables that set a key under another name than its
// path: the spelling older docs and scripts use. A variable of the key's
// own name, sorted after it, wins.
var envAliases = map[string]string{
	"SNAPSTORE_HBASE_READ_ONLY": "STORAGE_HBASE_READ_ONLY", // storage.hbase.read_only
}

// errNoSuchKey marks a variable that names no configuration key.
var errNoSuchKey = errors.New("no such configuration key")

// setEnv sets the key that rest names below v and stores its path in
// *key.
func setEnv(v reflect.Value, rest, val, path string, key *string) error {
	switch {
	case isDuration(v.Type()) || (v.Kind() != reflect.Struct && v.Kind() != reflect.Map && (v.Kind() != reflect.Slice || v.Type().Elem().Kind() == reflect.String)):
		if rest != "" {
			return fmt.Errorf("%s has no key %s: %w", path, rest, errNoSuchKey)
		}
		*key = path
		return setScalar(v, val, path)
	case v.Kind() == reflect.Struct:
		// Longest field name first, so STORAGE_HBASE_THRIFT does not stop at a
		// shorter field that is a prefix.
		type cand struct {
			key  string // the YAML key
			name string // the key in upper case, as in a variable
			i    int
		}
		var cs []cand
		for i := 0; i < v.NumField(); i++ {
			if k := yamlKey(v.Type().Field(i)); k != "" {
				cs = append(cs, cand{k, strings.ToUpper(k), i})
			}
		}
		slices.SortFunc(cs, func(a, b cand) int { return cmp.Compare(len(b.name), len(a.name)) })
		for _, c := range cs {
			if rest == c.name {
				return setEnv(v.Field(c.i), "", val, JoinKey(path, c.key), key)
			}
			if strings.HasPrefix(rest, c.name+"_") {
				return setEnv(v.Field(c.i), rest[len(c.name)+1:], val, JoinKey(path, c.key), key)
			}
		}
		return errNoSuchKey
	case v.Kind() == reflect.Slice:
		idx, sub, _ := strings.Cut(rest, "_")
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 {
			return fmt.Errorf("%s: want a list index after it", path)
		}
		if i >= v.Len() {
			return fmt.Errorf("%s[%d]: the list has %d entries; define the entry in the config file", path, i, v.Len())
		}
		return setEnv(v.Index(i), sub, val, fmt.Sprintf("%s[%d]", path, i), key)
	case v.Kind() == reflect.Map:
		if rest == "" {
			return fmt.Errorf("%s: name an option after it", path)
		}
		if !reflect.TypeOf(val).AssignableTo(v.Type().Elem()) {
			// adapters[].table_keys: its keys are table names, which a
			// variable's name cannot spell.
			return fmt.Errorf("%s: cannot be set from the environment; set it in the config file", path)
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		v.SetMapIndex(reflect.ValueOf(strings.ToLower(rest)), reflect.ValueOf(val))
		*key = JoinKey(path, strings.ToLower(rest))
		return nil
	}
	return fmt.Errorf("%s: cannot be set from the environment", path)
}

// setScalar sets v, a field that is not a struct or map, from the text of
// the variable that names the key path.
func setScalar(v reflect.Value, val, path string) error {
	bad := func() error {
		return &KeyError{Key: path, Msg: fmt.Sprintf("want %s, got %q", kindName(v.Type()), val)}
	}
	switch {
	case isDuration(v.Type()):
		d, ok := parseDuration(val)
		if !ok {
			return &KeyError{Key: path, Msg: fmt.Sprintf("want a duration such as 30s, 24h or 30d, got %q", val)}
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(val)
	case v.Kind() == reflect.Slice:
		v.Set(reflect.ValueOf(splitList(val)))
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return bad()
		}
		v.SetBool(b)
	case v.CanInt():
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return bad()
		}
		v.SetInt(n)
	case v.CanUint():
		n, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			return bad()
		}
		v.SetUint(n)
	case v.CanFloat():
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return bad()
		}
		v.SetFloat(f)
	default:
		return bad()
	}
	return nil
}

// splitList splits a comma-separated value of a list of strings.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
