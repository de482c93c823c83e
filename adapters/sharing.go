package adapters

import (
	"fmt"
)

// Sharing is a data connection's sharing mode (after Hazelcast's data
// connections' "shared" flag, extended with a tunable pool).
type Sharing string

const (
	// SharingShared keeps one pool per connection for every run (default).
	SharingShared Sharing = "shared"
	// SharingPooled is shared with pool limits from options max_open,
	// max_idle, conn_max_lifetime, conn_max_idle_time.
	SharingPooled Sharing = "pooled"
	// SharingSingleUse opens a connection for a run and closes it after.
	SharingSingleUse Sharing = "single-use"
)

// parseSharing checks a sharing mode; "" is SharingShared. key names the
// option in the error.
func parseSharing(key string, s Sharing) (Sharing, error) {
	switch s {
	case "":
		return SharingShared, nil
	case SharingShared, SharingPooled, SharingSingleUse:
		return s, nil
	}
	return s, &OptionError{Key: key, Msg: fmt.Sprintf("want %s, %s or %s, got %q", SharingShared, SharingPooled, SharingSingleUse, s)}
}

// poolOptionDefs are the options every database/sql connector accepts when
// the sharing mode is pooled (database/sql's DB.SetMaxOpenConns and
// friends).
var poolOptionDefs = []OptionDef{
	{Key: "max_open", Type: OptInt, Min: 0, Max: 10000, Doc: "most open connections (0: unlimited)"},
	{Key: "max_idle", Type: OptInt, Min: 0, Max: 10000, Doc: "most idle connections kept (default 2)"},
	{Key: "conn_max_lifetime", Type: OptDuration, Doc: "close connections older than this (0: never)"},
	{Key: "conn_max_idle_time", Type: OptDuration, Doc: "close connections idle longer than this (0: never)"},
}
