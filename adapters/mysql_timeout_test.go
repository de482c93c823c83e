package adapters

import (
	"testing"
	"time"
)

// A frozen source must fail a run, not hold its dataset forever (break-it
// test: kill -STOP on the source kept a run "running" indefinitely), so
// read_timeout has a default; 0s turns it off.
func TestMySQLReadTimeoutDefault(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]any
		want time.Duration
	}{
		{map[string]any{"host": "127.0.0.1", "user": "u"}, defaultReadTimeout},
		{map[string]any{"host": "127.0.0.1", "user": "u", "read_timeout": "30s"}, 30 * time.Second},
		{map[string]any{"host": "127.0.0.1", "user": "u", "read_timeout": "0s"}, 0},
	} {
		o, _, err := parseOptions("options.", mysqlOptionDefs, SharingShared, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := mysqlConfig(o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ReadTimeout != tc.want {
			t.Errorf("%v: read timeout %v, want %v", tc.opts, cfg.ReadTimeout, tc.want)
		}
	}
}
