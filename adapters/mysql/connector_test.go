package mysql

import (
	"context"
	"strings"
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

// TestMySQLResourcesAsListed: a table whose name needs quoting (a
// backtick, a dot) is read under the name resources list, and listed with
// the key a run chooses.
func TestMySQLResourcesAsListed(t *testing.T) {
	e := mysqlEnv(t)
	db := e.tempDatabase(t, "listed")
	e.exec(t, db, "CREATE TABLE `we``ird.t` (a int NOT NULL, b int NOT NULL, c int, UNIQUE KEY u_c (c), UNIQUE KEY u_ab (a, b))",
		"INSERT INTO `we``ird.t` VALUES (1, 2, NULL), (2, 2, 3)")
	src := e.openSource(t, db)
	ctx := context.Background()
	res, err := src.(source.ResourceLister).Resources(ctx)
	if err != nil || len(res) != 1 || res[0].Name != "we`ird.t" || strings.Join(res[0].Key, ",") != "a,b" {
		t.Fatalf("resources %+v %v", res, err)
	}
	for _, name := range []string{res[0].Name, res[0].Schema + "." + res[0].Name} {
		tr, err := src.OpenTable(ctx, source.TableRequest{Resource: name})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		n := 0
		for tr.Next(ctx) {
			n++
		}
		if err := tr.Err(); err != nil || n != 2 {
			t.Errorf("%s: %d rows, %v", name, n, err)
		}
		tr.Close()
	}
}
