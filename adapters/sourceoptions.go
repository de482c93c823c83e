package adapters

import (
	"errors"
	"fmt"
)

// parseSourceOptions checks an adapter's source_options against the read
// options of its connection's type c (ReadOptioner), named typ, and
// returns them typed; nil when there are none. Every problem is an
// *OptionError whose Key is prefix+key ("adapters[0].source_options.",
// "source_options."), joined.
func parseSourceOptions(prefix string, c Connector, typ string, raw map[string]any) (OptionValues, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	ro, ok := c.(ReadOptioner)
	if !ok {
		return nil, &OptionError{Key: prefix[:len(prefix)-1], Msg: fmt.Sprintf("a data connection of type %q takes no source_options", typ)}
	}
	// The options that parsed are validated too, so that every problem is
	// named at once; a key that did not parse is not in opts, so it is not
	// reported twice.
	opts, _, err := parseOptions(prefix, ro.ReadOptions(), "", raw)
	if verr := ro.ValidateRead(opts); verr != nil {
		err = errors.Join(err, prefixOptionErrors(prefix, verr))
	}
	if err != nil {
		return nil, err
	}
	return opts, nil
}
