package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
)

// TestPostgresConfig: max_idle (which pgxpool cannot honour) is refused
// naming the key, and the runtime parameters are snapstore's whatever the
// libpq environment says.
func TestPostgresConfig(t *testing.T) {
	t.Setenv("PGTZ", "Asia/Tokyo")
	t.Setenv("PGOPTIONS", "-c DateStyle=German")
	t.Setenv("PGAPPNAME", "other")
	user := source.OptionValues{"user": "u"}
	if _, err := postgresConfig(user, source.PoolOptions{MaxIdle: 3, Pooled: true}); err == nil || !strings.Contains(err.Error(), "max_idle") {
		t.Errorf("max_idle: %v", err)
	}
	o := source.OptionValues{"user": "u", "statement_timeout": 90 * time.Second, "application_name": "nightly"}
	cfg, err := postgresConfig(o, source.PoolOptions{MaxOpen: 3, Pooled: true})
	if err != nil {
		t.Fatal(err)
	}
	rp := cfg.ConnConfig.RuntimeParams
	if cfg.MaxConns != 3 || rp["timezone"] != "UTC" || rp["datestyle"] != "ISO, YMD" || rp["application_name"] != "nightly" ||
		rp["statement_timeout"] != "90000" || rp["options"] != "" || cfg.ConnConfig.Database != "u" {
		t.Errorf("config: max conns %d, database %q, runtime params %v", cfg.MaxConns, cfg.ConnConfig.Database, rp)
	}
	// Unset, statement_timeout is the server's own.
	if cfg, err = postgresConfig(user, source.PoolOptions{}); err != nil {
		t.Fatal(err)
	}
	if v, set := cfg.ConnConfig.RuntimeParams["statement_timeout"]; set {
		t.Errorf("default statement_timeout sent as %q", v)
	}
}
