package adapters

import (
	"fmt"
	"github.com/snapstore/snapstore/adapters/source"
	"slices"
)

// connectorNames returns the registered connection type names, sorted.
func connectorNames() []string { return source.Names() }

// ConnectionType describes a registered connection type: its name, the
// options it accepts and the read options its adapters accept
// (source_options; none for most types). Forms build their fields from
// them.
type ConnectionType struct {
	Name        string
	Options     []OptionDef
	ReadOptions []OptionDef
}

// ConnectionTypes lists the registered connection types, by name.
func ConnectionTypes() []ConnectionType {
	var out []ConnectionType
	for _, name := range connectorNames() {
		c, _ := lookupConnector(name)
		ct := ConnectionType{Name: name, Options: slices.Clone(c.Options())}
		if ro, ok := c.(ReadOptioner); ok {
			ct.ReadOptions = slices.Clone(ro.ReadOptions())
		}
		out = append(out, ct)
	}
	return out
}

// lookupConnector returns the connector of type name; ErrUnknownType
// naming the known types.
func lookupConnector(name string) (Connector, error) {
	c, ok := source.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownType, name, connectorNames())
	}
	return c, nil
}
