package source

import (
	"database/sql"
	"time"
)

// PoolOptions are database/sql pool limits; zero fields keep database/sql's
// defaults. Only a pooled connection sets them.
type PoolOptions struct {
	MaxOpen         int
	MaxIdle         int
	ConnMaxLifetime time.Duration
	ConnMaxIdleTime time.Duration
	// Pooled reports whether the connection is pooled (limits apply).
	Pooled bool
}

// ApplyPool sets database/sql pool limits of a pooled connection.
func ApplyPool(db *sql.DB, p PoolOptions) {
	if !p.Pooled {
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
