package source

import (
	"maps"
	"slices"
	"sync"
)

var (
	connectorsMu sync.RWMutex
	connectors   = map[string]Connector{}
)

// Register makes a connector available under name, for the type of a data
// connection, from the init function of its package, after database/sql's
// sql.Register. It panics when name is taken or c is nil, as sql.Register
// does. A binary gets the connectors it imports (adapters/install imports
// them all).
func Register(name string, c Connector) {
	connectorsMu.Lock()
	defer connectorsMu.Unlock()
	if c == nil {
		panic("adapters: register connector is nil")
	}
	if _, dup := connectors[name]; dup {
		panic("adapters: register called twice for connector " + name)
	}
	connectors[name] = c
}

// Names returns the registered connection type names, sorted.
func Names() []string {
	connectorsMu.RLock()
	defer connectorsMu.RUnlock()
	return slices.Sorted(maps.Keys(connectors))
}

// Lookup returns the connector registered as name.
func Lookup(name string) (Connector, bool) {
	connectorsMu.RLock()
	defer connectorsMu.RUnlock()
	c, ok := connectors[name]
	return c, ok
}
