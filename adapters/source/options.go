package source

import (
	"time"
)

// OptionType is the type of one connection option.
type OptionType int

const (
	// OptString is text.
	OptString OptionType = iota
	// OptInt is an integer; JSON numbers and decimal strings are accepted.
	OptInt
	// OptBool is true/false; the strings "true" and "false" are accepted.
	OptBool
	// OptDuration is a Go duration string ("30s", "5m"); a bare number
	// other than 0 is refused, so that nobody guesses the unit.
	OptDuration
	// OptSecret is a secret string: literal, or a reference "env:NAME" or
	// "file:/abs/path" resolved when the connection is opened. Parsed
	// values are Secret; resolved ones too.
	OptSecret
	// OptStringMap is an object of string values (scalars are formatted).
	OptStringMap
	// OptStringList is a list of strings (scalars are formatted); a
	// single scalar is a list of one.
	OptStringList
)

// String names the type as error messages and docs do ("integer").
func (t OptionType) String() string {
	switch t {
	case OptString:
		return "string"
	case OptInt:
		return "integer"
	case OptBool:
		return "boolean"
	case OptDuration:
		return "duration"
	case OptSecret:
		return "secret string"
	case OptStringMap:
		return "object of strings"
	case OptStringList:
		return "list of strings"
	}
	return "unknown"
}

// OptionDef declares one option a Connector accepts.
type OptionDef struct {
	Key  string
	Type OptionType
	// Min and Max bound OptInt values when Max > Min.
	Min, Max int64
	// Allowed lists the accepted values of an OptString option (empty: any).
	Allowed []string
	// Endpoint marks an option that says where the connection's secrets
	// are sent (host, port, user, database, TLS settings): a replacement
	// that changes it must give its secret options again rather than
	// "REDACTED" (keepRedactedSecrets).
	Endpoint bool
	// File marks an option whose value names a file on the server that
	// the connector opens (a database file, a certificate, a key): through
	// the API it may name only files the server's limits allow
	// (adapters.FileOptionLimits).
	File bool
	// Doc is one line for docs/connections.md.
	Doc string
}

// OptionValues is a connection's parsed, typed options: string, int64, bool,
// time.Duration, Secret, map[string]string or []string values by
// OptionDef.Type.
// Secrets are unresolved references until ResolveSecrets.
type OptionValues map[string]any

// String returns an OptString value or "".
func (o OptionValues) String(key string) string { s, _ := o[key].(string); return s }

// Int returns an OptInt value or def.
func (o OptionValues) Int(key string, def int64) int64 {
	if v, ok := o[key].(int64); ok {
		return v
	}
	return def
}

// Bool returns an OptBool value or def.
func (o OptionValues) Bool(key string, def bool) bool {
	if v, ok := o[key].(bool); ok {
		return v
	}
	return def
}

// Duration returns an OptDuration value or def.
func (o OptionValues) Duration(key string, def time.Duration) time.Duration {
	if v, ok := o[key].(time.Duration); ok {
		return v
	}
	return def
}

// Secret returns an OptSecret value (zero when absent).
func (o OptionValues) Secret(key string) Secret { s, _ := o[key].(Secret); return s }

// Map returns an OptStringMap value (nil when absent).
func (o OptionValues) Map(key string) map[string]string { m, _ := o[key].(map[string]string); return m }

// Strings returns an OptStringList value (nil when absent).
func (o OptionValues) Strings(key string) []string { l, _ := o[key].([]string); return l }

// Has reports whether key was given.
func (o OptionValues) Has(key string) bool { _, ok := o[key]; return ok }
