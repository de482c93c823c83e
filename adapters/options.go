package adapters

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// parseOptions checks raw against defs (plus the pool options when
// pooled) and returns typed values. Every problem is an *OptionError whose
// Key is prefix+key; all problems are joined, sorted by key.
func parseOptions(prefix string, defs []OptionDef, sharing Sharing, raw map[string]any) (OptionValues, PoolOptions, error) {
	byKey := map[string]OptionDef{}
	for _, d := range defs {
		byKey[d.Key] = d
	}
	pooled := map[string]OptionDef{}
	for _, d := range poolOptionDefs {
		pooled[d.Key] = d
	}
	keys := slices.Sorted(maps.Keys(raw))
	out := OptionValues{}
	var pool PoolOptions
	pool.Pooled = sharing == SharingPooled
	var errs []error
	for _, k := range keys {
		d, ok := byKey[k]
		if !ok {
			if pd, isPool := pooled[k]; isPool {
				if sharing != SharingPooled {
					errs = append(errs, &OptionError{Key: prefix + k, Msg: fmt.Sprintf("only allowed with sharing %q", SharingPooled)})
					continue
				}
				d = pd
			} else {
				errs = append(errs, &OptionError{Key: prefix + k, Msg: "unknown option" + knownKeys(defs, sharing)})
				continue
			}
		}
		v, err := parseOption(d, raw[k])
		if err != nil {
			errs = append(errs, &OptionError{Key: prefix + k, Msg: err.Error()})
			continue
		}
		if _, isPool := pooled[k]; isPool && !byKeyHas(byKey, k) {
			switch k {
			case "max_open":
				pool.MaxOpen = int(v.(int64))
			case "max_idle":
				pool.MaxIdle = int(v.(int64))
			case "conn_max_lifetime":
				pool.ConnMaxLifetime = v.(time.Duration)
			case "conn_max_idle_time":
				pool.ConnMaxIdleTime = v.(time.Duration)
			}
			continue
		}
		out[k] = v
	}
	return out, pool, errors.Join(errs...)
}

func byKeyHas(m map[string]OptionDef, k string) bool { _, ok := m[k]; return ok }

func knownKeys(defs []OptionDef, sharing Sharing) string {
	var ks []string
	for _, d := range defs {
		ks = append(ks, d.Key)
	}
	if sharing == SharingPooled {
		for _, d := range poolOptionDefs {
			ks = append(ks, d.Key)
		}
	}
	slices.Sort(ks)
	return " (known: " + strings.Join(ks, ", ") + ")"
}

// parseOption converts one raw value (from JSON or YAML) to d's type. The
// message never quotes a secret value.
func parseOption(d OptionDef, v any) (any, error) {
	switch d.Type {
	case OptString:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %s", jsonKind(v))
		}
		if len(d.Allowed) > 0 {
			for _, a := range d.Allowed {
				if s == a {
					return s, nil
				}
			}
			return nil, fmt.Errorf("want one of %s, got %q", strings.Join(d.Allowed, ", "), s)
		}
		return s, nil
	case OptInt:
		n, err := toInt(v)
		if err != nil {
			return nil, err
		}
		if d.Max > d.Min && (n < d.Min || n > d.Max) {
			return nil, fmt.Errorf("want %d to %d, got %d", d.Min, d.Max, n)
		}
		return n, nil
	case OptBool:
		switch b := v.(type) {
		case bool:
			return b, nil
		case string:
			if p, err := strconv.ParseBool(b); err == nil {
				return p, nil
			}
		}
		return nil, fmt.Errorf("want true or false, got %s", jsonKind(v))
	case OptDuration:
		return parseDuration(v)
	case OptSecret:
		switch x := v.(type) {
		case string:
			if err := checkSecretRef(x); err != nil {
				return nil, err
			}
			return newSecret(x), nil
		case Secret:
			return x, nil
		}
		return nil, fmt.Errorf("want a string, got %s", jsonKind(v))
	case OptStringMap:
		return parseStringMap(v)
	case OptStringList:
		return parseStringList(v)
	}
	return nil, fmt.Errorf("unknown option type")
}

// parseDuration converts a raw value to an OptDuration's: a text such as
// "30s", never negative, or the number 0.
func parseDuration(v any) (any, error) {
	switch x := v.(type) {
	case string:
		dur, err := time.ParseDuration(x)
		if err != nil {
			return nil, fmt.Errorf("want a duration like \"30s\", got %q", x)
		}
		if dur < 0 {
			return nil, fmt.Errorf("want a non-negative duration, got %q", x)
		}
		return dur, nil
	default:
		// Numbers are refused (0 aside) so that nobody guesses the
		// unit, as for adapter durations (docs/api.md).
		n, err := toInt(v)
		if err == nil && n == 0 {
			return time.Duration(0), nil
		}
		if err == nil && n > 0 {
			return nil, fmt.Errorf("want a duration like \"30s\", got the number %d: write \"%ds\" for seconds (a number is refused so that nobody guesses the unit)", n, n)
		}
		return nil, fmt.Errorf("want a duration like \"30s\", got %s", jsonKind(v))
	}
}

// parseStringMap converts a raw value to an OptStringMap's: an object
// whose scalar values are taken as their text.
func parseStringMap(v any) (any, error) {
	out := map[string]string{}
	switch m := v.(type) {
	case map[string]string:
		for k, s := range m {
			out[k] = s
		}
	case map[string]any:
		for k, x := range m {
			switch s := x.(type) {
			case string:
				out[k] = s
			case bool, int, int64, float64, json.Number:
				out[k] = fmt.Sprint(s)
			default:
				return nil, fmt.Errorf("value of %q: want a string, got %s", k, jsonKind(x))
			}
		}
	default:
		return nil, fmt.Errorf("want an object of strings, got %s", jsonKind(v))
	}
	return out, nil
}

// parseStringList converts a raw value to an OptStringList's: a list, or
// one scalar as a list of one, each item a scalar taken as its text.
func parseStringList(v any) (any, error) {
	switch l := v.(type) {
	case string:
		return []string{l}, nil
	case bool, int, int64, float64, json.Number:
		return []string{fmt.Sprint(l)}, nil
	case []string:
		return slices.Clone(l), nil
	case []any:
		out := make([]string, 0, len(l))
		for i, x := range l {
			switch s := x.(type) {
			case string:
				out = append(out, s)
			case bool, int, int64, float64, json.Number:
				out = append(out, fmt.Sprint(s))
			default:
				return nil, fmt.Errorf("item %d: want a string, got %s", i, jsonKind(x))
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a list of strings, got %s", jsonKind(v))
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("integer too large")
		}
		return int64(x), nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, fmt.Errorf("want an integer, got %v", x)
		}
		return int64(x), nil
	case json.Number:
		return x.Int64()
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("want an integer, got %q", x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("want an integer, got %s", jsonKind(v))
}

// jsonKind names v's type without printing it (it may be a secret).
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, int32, uint64, float64, json.Number:
		return "a number"
	case map[string]any, map[string]string:
		return "an object"
	case []any, []string:
		return "an array"
	}
	return fmt.Sprintf("a %T", v)
}
