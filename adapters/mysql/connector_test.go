package mysql

import (
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
)

// TestMySQLReadTimeoutDefault: a frozen source (a server stopped with
// SIGSTOP) must fail a run, not hold its dataset forever, so read_timeout
// has a default; 0 turns it off.
func TestMySQLReadTimeoutDefault(t *testing.T) {
	for _, tc := range []struct {
		opts source.OptionValues
		want time.Duration
	}{
		{source.OptionValues{"host": "127.0.0.1", "user": "u"}, defaultReadTimeout},
		{source.OptionValues{"host": "127.0.0.1", "user": "u", "read_timeout": 30 * time.Second}, 30 * time.Second},
		{source.OptionValues{"host": "127.0.0.1", "user": "u", "read_timeout": time.Duration(0)}, 0},
	} {
		cfg, err := mysqlConfig(tc.opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ReadTimeout != tc.want {
			t.Errorf("%v: read timeout %v, want %v", tc.opts, cfg.ReadTimeout, tc.want)
		}
	}
}
