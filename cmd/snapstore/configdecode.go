package main

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/snapstore/snapstore/server"
	"go.yaml.in/yaml/v4"
)

// loadConfig builds the configuration: defaults, file, environment, flags;
// then validates it. Errors name the key and exit with code 2. SNAPSTORE_*
// variables that name no key are kept in cfg.unknownEnv for a warning.
func loadConfig(cf *commonFlags, environ []string) (*Config, error) {
	return loadConfigChecked(cf, environ, nil)
}

// loadServeConfig is loadConfig for serve: the same report also holds the
// problems of Config.checkServe (token references, listen without
// tokens), and it returns the resolved tokens.
func loadServeConfig(cf *commonFlags, environ []string) (*Config, []server.Token, error) {
	var tokens []server.Token
	cfg, err := loadConfigChecked(cf, environ, func(c *Config) []error {
		var errs []error
		tokens, errs = c.checkServe()
		return errs
	})
	return cfg, tokens, err
}

// loadConfigChecked is loadConfig with extra checks, run after Validate;
// their problems join the one report.
func loadConfigChecked(cf *commonFlags, environ []string, extra func(*Config) []error) (*Config, error) {
	cfg := defaultConfig()
	var errs []error
	decodeKeys := map[string]bool{} // keys the file or environment got wrong
	collect := func(err error) {
		for _, e := range joined(err) {
			var ce *configError
			if errors.As(e, &ce) {
				decodeKeys[ce.key] = true
			}
			errs = append(errs, e)
		}
	}
	if cf.config != "" {
		if err := loadFile(cf.config, &cfg); err != nil {
			var ce *configError
			if !errors.As(err, &ce) {
				// Unreadable or not YAML: nothing else can be checked.
				return nil, &exitError{code: 2, err: fmt.Errorf("config %s: %w", cf.config, err)}
			}
			collect(err)
		}
	}
	unknown, err := applyEnv(&cfg, environ)
	if err != nil {
		collect(err)
	}
	cfg.unknownEnv = unknown
	if cf.data != "" {
		cfg.Data = cf.data
	}
	if cf.listen != "" {
		cfg.Listen = cf.listen
	}
	if cf.logLevel != "" {
		cfg.Log.Level = cf.logLevel
	}
	// Every problem at once: the file's and the environment's above, then
	// the checks of the values (without follow-ons of a key already named).
	checks := joined(cfg.Validate())
	if extra != nil {
		checks = append(checks, extra(&cfg)...)
	}
	for _, e := range checks {
		var ce *configError
		if errors.As(e, &ce) && coveredKey(decodeKeys, ce.key) {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		sortConfigErrors(errs)
		where := "bad configuration"
		if cf.config != "" {
			where += " (" + cf.config + ")"
		}
		return nil, &exitError{code: 2, err: fmt.Errorf("%s:\n%w", where, errors.Join(errs...))}
	}
	return &cfg, nil
}

// sortConfigErrors puts the problems in the order of the file: by line,
// then key; those set by the environment, or of no key, after them in
// the order found.
func sortConfigErrors(errs []error) {
	type place struct {
		line int
		key  string
	}
	at := func(err error) place {
		var ce *configError
		if !errors.As(err, &ce) || ce.line == 0 {
			return place{line: math.MaxInt}
		}
		return place{ce.line, ce.key}
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		pa, pb := at(a), at(b)
		if c := cmp.Compare(pa.line, pb.line); c != 0 || pa.line == math.MaxInt {
			return c
		}
		return strings.Compare(pa.key, pb.key)
	})
}

// joined returns the errors an errors.Join holds, or err alone.
func joined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// coveredKey reports whether key or a key enclosing it is in keys.
func coveredKey(keys map[string]bool, key string) bool {
	for k := key; k != ""; k = parentKey(k) {
		if keys[k] {
			return true
		}
	}
	return false
}

// loadFile decodes the YAML file at path over cfg. Unknown keys and values
// of the wrong type are errors naming the key; every problem is reported.
func loadFile(path string, cfg *Config) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading config file: %w", err)
	}
	return decodeYAML(data, cfg)
}

// decodeYAML decodes a YAML document over cfg and records in cfg.lines the
// line of every key.
func decodeYAML(data []byte, cfg *Config) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return fmt.Errorf("parsing config file: %w", err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil // empty file
	}
	var errs []error
	if cfg.lines == nil {
		cfg.lines = map[string]int{}
	}
	decodeNode(root.Content[0], reflect.ValueOf(cfg).Elem(), "", &errs, cfg.lines)
	return errors.Join(errs...)
}

// Types that decodeNode and setEnv do not decode by kind: a duration is
// text ("30s"), and "storage: pebble" is short for a StorageConfig.
var (
	durationType      = reflect.TypeOf(time.Duration(0))
	storageType       = reflect.TypeOf(StorageConfig{})
	adapterNotifyType = reflect.TypeOf(AdapterNotifyConfig{})
)

// decodeNode decodes n into v, naming every bad key by its dotted path
// (adapters[0].schedule).
func decodeNode(n *yaml.Node, v reflect.Value, path string, errs *[]error, lines map[string]int) {
	bad := func(msg string, args ...any) {
		key := path
		if key == "" {
			key = "(top level)"
		}
		*errs = append(*errs, &configError{key: key, line: n.Line, msg: fmt.Sprintf(msg, args...)})
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // key present without a value: keep the default
	}
	switch {
	case v.Type() == storageType && n.Kind == yaml.ScalarNode:
		// Shorthand: "storage: pebble" sets storage.backend.
		v.FieldByName("Backend").SetString(n.Value)
	case v.Type() == adapterNotifyType && n.Kind == yaml.ScalarNode:
		// An adapter's "notify: [ops]" names a webhook of notify.webhooks.
		v.FieldByName("Name").SetString(n.Value)
	case v.Type() == durationType:
		if n.Kind != yaml.ScalarNode {
			bad("want a duration such as 30s or 24h")
			return
		}
		d, ok := parseDuration(n.Value)
		if !ok {
			bad("want a non-negative duration such as 30s or 24h, got %q", n.Value)
			return
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			bad("want a mapping of keys")
			return
		}
		fields := map[string]int{}
		for i := 0; i < v.NumField(); i++ {
			if k := yamlKey(v.Type().Field(i)); k != "" {
				fields[k] = i
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			sub := joinKey(path, k.Value)
			if first, ok := lines[sub]; ok {
				// YAML forbids a key twice in a mapping; the decoder of
				// nodes does not check it, and the later one would win
				// silently.
				*errs = append(*errs, &configError{key: sub, line: k.Line, msg: fmt.Sprintf("given twice (first at line %d)", first)})
				continue
			}
			lines[sub] = k.Line
			fi, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, &configError{key: sub, line: k.Line, msg: "unknown key (docs/config.md lists the keys)"})
				continue
			}
			decodeNode(val, v.Field(fi), sub, errs, lines)
		}
	case v.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			bad("want a list")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			key := fmt.Sprintf("%s[%d]", path, i)
			lines[key] = item.Line
			decodeNode(item, s.Index(i), key, errs, lines)
		}
		v.Set(s)
	case v.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			bad("want a mapping")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			sub := joinKey(path, k.Value)
			if first, ok := lines[sub]; ok {
				*errs = append(*errs, &configError{key: sub, line: k.Line, msg: fmt.Sprintf("given twice (first at line %d)", first)})
				return
			}
			lines[sub] = k.Line
		}
		m := reflect.New(v.Type())
		if err := n.Decode(m.Interface()); err != nil {
			bad("%v", yamlErrText(err))
			return
		}
		v.Set(m.Elem())
	default:
		if n.Kind != yaml.ScalarNode {
			bad("want a single value")
			return
		}
		p := reflect.New(v.Type())
		if err := n.Decode(p.Interface()); err != nil {
			bad("want %s, got %q", kindName(v.Type()), n.Value)
			return
		}
		v.Set(p.Elem())
	}
}

// yamlKey is the key of a configuration struct field in the file, from its
// yaml tag; "" for a field the file cannot set.
func yamlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if k == "-" {
		return ""
	}
	return k
}

// parseDuration parses a duration of the configuration: Go's syntax (30s,
// 24h, 0), never negative.
func parseDuration(s string) (time.Duration, bool) {
	d, err := time.ParseDuration(s)
	return d, err == nil && d >= 0
}

// joinKey appends key k to a key path.
func joinKey(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// kindName names the kind of value a field of type t wants, for errors.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint, reflect.Uint32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return t.String()
}

// yamlErrText is the text of a YAML decoding error without its prefix.
func yamlErrText(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return err.Error()
}

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
	case v.Type() == durationType || (v.Kind() != reflect.Struct && v.Kind() != reflect.Map && (v.Kind() != reflect.Slice || v.Type().Elem().Kind() == reflect.String)):
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
				return setEnv(v.Field(c.i), "", val, joinKey(path, c.key), key)
			}
			if strings.HasPrefix(rest, c.name+"_") {
				return setEnv(v.Field(c.i), rest[len(c.name)+1:], val, joinKey(path, c.key), key)
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
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		v.SetMapIndex(reflect.ValueOf(strings.ToLower(rest)), reflect.ValueOf(val))
		*key = joinKey(path, strings.ToLower(rest))
		return nil
	}
	return fmt.Errorf("%s: cannot be set from the environment", path)
}

// setScalar sets v, a field that is not a struct or map, from the text of
// the variable that names the key path.
func setScalar(v reflect.Value, val, path string) error {
	bad := func() error {
		return &configError{key: path, msg: fmt.Sprintf("want %s, got %q", kindName(v.Type()), val)}
	}
	switch {
	case v.Type() == durationType:
		d, ok := parseDuration(val)
		if !ok {
			return &configError{key: path, msg: fmt.Sprintf("want a duration such as 30s, got %q", val)}
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
