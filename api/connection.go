package api

// Connection defines a data connection: a named, typed reference to a
// source system. It is an entry of the config file's connections list and
// the body of POST /v1/connections (docs/config.md, docs/api.md).
type Connection struct {
	// Name names the connection; in a PUT the path gives it.
	Name string `json:"name" yaml:"name"`
	// Type is the connector: mysql, postgres, sqlite or snapstore.
	Type string `json:"type" yaml:"type"`
	// Sharing is shared (default), pooled or single-use.
	Sharing string `json:"sharing,omitempty" yaml:"sharing"`
	// Options are the connector's options; secrets may be "env:NAME" or
	// "file:/path".
	Options map[string]any `json:"options,omitempty" yaml:"options"`
}
