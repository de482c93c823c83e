package config

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/boundedread"
	"github.com/snapstore/snapstore/server"
	"go.yaml.in/yaml/v4"
)

// Flags are the values of the command line that the configuration
// takes, each empty when not given; they win over the file and the
// environment.
type Flags struct {
	// File is the YAML file (--config); empty for none.
	File string
	// Data, Listen and LogLevel set data, listen and log.level.
	Data, Listen, LogLevel string
}

// Load builds the configuration: defaults, file, environment (environ, as
// os.Environ gives it), flags; then validates it. A bad configuration is
// one error naming every offending key, with its line in the file or the
// variable that set it. SNAPSTORE_* variables that name no key are kept
// for UnknownEnv.
func Load(f Flags, environ []string) (*Config, error) {
	return loadChecked(f, environ, nil)
}

// LoadServe is Load for serve: the same report also holds the problems
// of Config.CheckServe (token references, listen without tokens), and it
// returns the resolved tokens.
func LoadServe(f Flags, environ []string) (*Config, []server.Token, error) {
	var tokens []server.Token
	cfg, err := loadChecked(f, environ, func(c *Config) []error {
		var errs []error
		tokens, errs = c.CheckServe()
		return errs
	})
	return cfg, tokens, err
}

// loadChecked is Load with extra checks, run after Validate; their
// problems join the one report.
func loadChecked(f Flags, environ []string, extra func(*Config) []error) (*Config, error) {
	cfg := Default()
	var errs []error
	decodeKeys := map[string]bool{} // keys the file or environment got wrong
	collect := func(err error) {
		for _, e := range joined(err) {
			var ke *KeyError
			if errors.As(e, &ke) {
				decodeKeys[ke.Key] = true
			}
			errs = append(errs, e)
		}
	}
	if f.File != "" {
		if err := loadFile(f.File, &cfg); err != nil {
			var ke *KeyError
			if !errors.As(err, &ke) {
				// Unreadable or not YAML: nothing else can be checked.
				return nil, fmt.Errorf("config %s: %w", f.File, err)
			}
			collect(err)
		}
	}
	unknown, err := applyEnv(&cfg, environ)
	if err != nil {
		collect(err)
	}
	cfg.unknownEnv = unknown
	cfg.file = f.File
	cfg.flagKeys = map[string]string{}
	if f.Data != "" {
		cfg.Data = f.Data
		cfg.flagKeys["data"] = "--data"
	}
	if f.Listen != "" {
		cfg.Listen = f.Listen
		cfg.flagKeys["listen"] = "--listen"
	}
	if f.LogLevel != "" {
		cfg.Log.Level = f.LogLevel
		cfg.flagKeys["log.level"] = "--log-level"
	}
	// Every problem at once: the file's and the environment's above, then
	// the checks of the values (without follow-ons of a key already named).
	checks := joined(cfg.Validate())
	if extra != nil {
		checks = append(checks, extra(&cfg)...)
	}
	for _, e := range checks {
		var ke *KeyError
		if errors.As(e, &ke) && coveredKey(decodeKeys, ke.Key) {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		sortErrors(errs)
		where := "bad configuration"
		if f.File != "" {
			where += " (" + f.File + ")"
		}
		return nil, fmt.Errorf("%s:\n%w", where, errors.Join(errs...))
	}
	return &cfg, nil
}

// sortErrors puts the problems in the order of the file: by line,
// then key; those set by the environment, or of no key, after them in
// the order found.
func sortErrors(errs []error) {
	type place struct {
		line int
		key  string
	}
	at := func(err error) place {
		var ce *KeyError
		if !errors.As(err, &ce) || ce.Line == 0 {
			return place{line: math.MaxInt}
		}
		return place{ce.Line, ce.Key}
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
	for k := key; k != ""; k = ParentKey(k) {
		if keys[k] {
			return true
		}
	}
	return false
}

// loadFile decodes the YAML file at path over cfg. Unknown keys and values
// of the wrong type are errors naming the key; every problem is reported.
func loadFile(path string, cfg *Config) error {
	data, err := boundedread.File(path, maxConfigFileBytes)
	if err != nil {
		return fmt.Errorf("reading config file: %w", err)
	}
	return decodeYAML(data, cfg)
}

// maxConfigFileBytes bounds the config file (16 MiB, thousands of
// adapters): --config /dev/zero, or another file named by mistake, is
// refused rather than read until the memory runs out.
const maxConfigFileBytes = 16 << 20

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
	durationType    = reflect.TypeOf(time.Duration(0))
	apiDurationType = reflect.TypeOf(api.Duration(0))
	storageType     = reflect.TypeOf(StorageConfig{})
)

// adapterNotifyKey matches the key of an entry of an adapter's notify
// list.
var adapterNotifyKey = regexp.MustCompile(`^adapters\[\d+\]\.notify\[\d+\]$`)

// isDuration reports whether t is a duration of the file: time.Duration or
// the wire schema's api.Duration.
func isDuration(t reflect.Type) bool { return t == durationType || t == apiDurationType }

// decodeNode decodes n into v, naming every bad key by its dotted path
// (adapters[0].schedule).
func decodeNode(n *yaml.Node, v reflect.Value, path string, errs *[]error, lines map[string]int) {
	bad := func(msg string, args ...any) {
		key := path
		if key == "" {
			key = "(top level)"
		}
		*errs = append(*errs, &KeyError{Key: key, Line: n.Line, Msg: fmt.Sprintf(msg, args...)})
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
	case n.Kind != yaml.ScalarNode && adapterNotifyKey.MatchString(path):
		// An adapter's definition is the API's too, stored with its
		// record: it names webhooks, whose URLs and secrets stay in the
		// file.
		bad("want the name of a webhook of notify.webhooks (an adapter's notify list holds names)")
	case isDuration(v.Type()):
		if n.Kind != yaml.ScalarNode {
			bad("want a duration such as 30s, 24h or 30d")
			return
		}
		d, ok := parseDuration(n.Value)
		if !ok {
			bad("want a non-negative duration such as 30s, 24h or 30d, got %q", n.Value)
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
			sub := JoinKey(path, k.Value)
			if first, ok := lines[sub]; ok {
				// YAML forbids a key twice in a mapping; the decoder of
				// nodes does not check it, and the later one would win
				// silently.
				*errs = append(*errs, &KeyError{Key: sub, Line: k.Line, Msg: fmt.Sprintf("given twice (first at line %d)", first)})
				continue
			}
			lines[sub] = k.Line
			fi, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, &KeyError{Key: sub, Line: k.Line, Msg: "unknown key (docs/config.md lists the keys)"})
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
			sub := JoinKey(path, k.Value)
			if first, ok := lines[sub]; ok {
				*errs = append(*errs, &KeyError{Key: sub, Line: k.Line, Msg: fmt.Sprintf("given twice (first at line %d)", first)})
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

// parseDuration parses a duration of the configuration as every
// definition's duration is parsed (api.ParseDuration: 30s, 24h, 30d, 0),
// never negative.
func parseDuration(s string) (time.Duration, bool) {
	d, err := api.ParseDuration(s)
	return time.Duration(d), err == nil
}

// JoinKey appends key k to a key path.
func JoinKey(path, k string) string {
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
	var le *yaml.LoadErrors
	if errors.As(err, &le) {
		msgs := make([]string, len(le.Errors))
		for i, e := range le.Errors {
			msgs[i] = fmt.Sprintf("line %d: %s", e.Mark.Line, e.Message)
		}
		return strings.Join(msgs, "; ")
	}
	return err.Error()
}
