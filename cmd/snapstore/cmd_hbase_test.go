package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/store/hbase"
)

// TestHBaseDropTable, on the real HBase: a connection made on a table is
// gone after `hbase drop-table --yes`; without --yes and a terminal
// nothing is deleted (exit code 2); a Pebble config is a usage error.
func TestHBaseDropTable(t *testing.T) {
	addr := testenv.HBaseThrift(t)
	table := fmt.Sprintf("droptest_%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = hbase.DropTable(context.Background(), hbase.Options{Addr: addr, Table: table}) })
	cfg := writeFile(t, "hb.yaml", fmt.Sprintf("storage: {backend: hbase, hbase: {thrift: %q, table: %s}}\n", addr, table))
	src := writeFile(t, "conn.yaml", "name: keepme\ntype: sqlite\noptions: {path: /nonexistent.db}\n")
	base := []string{"--config", cfg, "--listen", "127.0.0.1:1"}
	if code, out, errs := cli(t, append([]string{"connections", "create", "-f", src}, base...)...); code != 0 {
		t.Fatalf("connections create: exit %d %s %s", code, out, errs)
	}
	if code, _, errs := cli(t, "hbase", "drop-table", "--config", cfg, "--listen", "127.0.0.1:1"); code != 2 || !strings.Contains(errs, "snapstore:"+table) {
		t.Fatalf("drop-table without --yes: exit %d %s", code, errs)
	}
	if _, out, _ := cli(t, append([]string{"connections", "list"}, base...)...); !strings.Contains(out, "keepme") {
		t.Fatalf("refused drop-table deleted the table: %s", out)
	}
	code, out, errs := cli(t, "hbase", "drop-table", "--config", cfg, "--listen", "127.0.0.1:1", "--yes")
	if code != 0 || !strings.Contains(out, "deleted the HBase table snapstore:"+table+" through the gateway "+addr) {
		t.Fatalf("drop-table --yes: exit %d %s %s", code, out, errs)
	}
	if _, out, _ := cli(t, append([]string{"connections", "list"}, base...)...); strings.Contains(out, "keepme") {
		t.Errorf("the connection outlived drop-table: %s", out)
	}
	if code, _, _ := cli(t, "hbase", "drop-table", "--config", writeFile(t, "p.yaml", "data: "+t.TempDir()+"\n"), "--listen", "127.0.0.1:1", "--yes"); code != 2 {
		t.Errorf("drop-table of a Pebble config: exit %d, want 2", code)
	}
}
