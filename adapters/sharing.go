package adapters

import (
	"database/sql"
	"fmt"
	"time"
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

// PoolOptions are database/sql pool limits; zero fields keep database/sql's
// defaults. Only a pooled connection sets them.
type PoolOptions struct {
	MaxOpen         int
	MaxIdle         int
	ConnMaxLifetime time.Duration
	ConnMaxIdleTime time.Duration
	// set reports whether the connection is pooled (limits apply).
	set bool
}

// applyPool sets database/sql pool limits of a pooled connection.
func applyPool(db *sql.DB, p PoolOptions) {
	if !p.set {
		return
	}
	if p.MaxOpen > 0 {
		db.SetMaxOpenConns(p.MaxOpen)
	}
	if p.MaxIdle > 0 {
		db.SetMaxIdleConns(p.MaxIdle)
	}
	if p.ConnMaxLifetime > 0 {
		db.SetConnMaxLifetime(p.ConnMaxLifetime)
	}
	if p.ConnMaxIdleTime > 0 {
		db.SetConnMaxIdleTime(p.ConnMaxIdleTime)
	}
}
