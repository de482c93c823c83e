package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI_RunForceAndConfigHint: `run` without the config that defines
// the adapter says to pass --config; a guard-refused run exits 1 with code
// guard_refused, and `run --force` commits it.
func TestCLI_RunForceAndConfigHint(t *testing.T) {
	dir := t.TempDir()
	srcPath := filepath.Join(dir, "src.db")
	src := sqliteSource(t, srcPath, `CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
		INSERT INTO products VALUES (1,'cup'),(2,'jug'),(3,'grinder'),(4,'tray');`)
	cfgPath := writeFile(t, "c.yaml", fmt.Sprintf("connections:\n  - {name: src, type: sqlite, options: {path: %q}}\nadapters:\n  - {name: products, connection: src, resource: products}\n", srcPath))
	data := filepath.Join(dir, "data")
	base := []string{"--data", data, "--output", "json"}
	code, _, stderr := cli(t, append([]string{"run", "products"}, base...)...)
	if code != 1 || !strings.Contains(stderr, "--config") {
		t.Fatalf("run without --config: exit %d, stderr %q", code, stderr)
	}
	withCfg := append([]string{"--config", cfgPath}, base...)
	if code, _, stderr := cli(t, append([]string{"run", "products"}, withCfg...)...); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	if _, err := src.Exec(`DELETE FROM products WHERE id > 1`); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli(t, append([]string{"run", "products"}, withCfg...)...)
	if code != 1 || !strings.Contains(stdout, `"code": "guard_refused"`) || !strings.Contains(stdout, `"deleted": 3`) ||
		!strings.Contains(stdout, "with force=true to commit anyway") || !strings.Contains(stderr, "start the run with --force to commit anyway") {
		t.Fatalf("refused run: exit %d, stdout %s, stderr %s", code, stdout, stderr)
	}
	code, stdout, stderr = cli(t, append([]string{"run", "--force", "products"}, withCfg...)...)
	if code != 0 || !strings.Contains(stdout, `"forced": true`) || !strings.Contains(stdout, `"status": "succeeded"`) {
		t.Fatalf("forced run: exit %d, stdout %s, stderr %s", code, stdout, stderr)
	}
}
