package postgres

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/internal/boundedread"
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

// TestPostgresConfig_SSLRootCertBounded: an sslrootcert file of more than
// boundedread.MaxPEMBytes (a device, a log named by mistake) is refused
// naming the option and the bound before pgconn reads it whole; a
// missing one is left to pgconn's message, as before.
func TestPostgresConfig_SSLRootCertBounded(t *testing.T) {
	big := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(big, []byte(strings.Repeat("#", boundedread.MaxPEMBytes+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{big, "/dev/zero"} {
		o := source.OptionValues{"user": "u", "sslmode": "verify-full", "sslrootcert": f}
		_, err := postgresConfig(o, source.PoolOptions{})
		var oe *source.OptionError
		if !errors.As(err, &oe) || oe.Key != "sslrootcert" || !strings.Contains(err.Error(), f+" is larger than 1048576 bytes") {
			t.Fatalf("%s: %v", f, err) // not on to /dev/zero: read whole, it would not end
		}
	}
}
