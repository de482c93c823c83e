package adapters

import (
	"os"
	"strings"
	"testing"
)

// TestDocs_EveryOption fails when an option of a connection type, a read
// option of its adapters (source_options), or an option of the pool, is
// missing from docs/connections.md or from the table of
// docs/config.md (Thanos's check-docs): the docs list every option rather
// than point at this package.
func TestDocs_EveryOption(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	connections, config := read("../docs/connections.md"), read("../docs/config.md")
	keys := map[string]bool{}
	for _, ct := range ConnectionTypes() {
		if !strings.Contains(connections, "## `"+ct.Name+"`") || !strings.Contains(config, "| `"+ct.Name+"` |") {
			t.Errorf("connection type %s has no section in docs/connections.md or column in docs/config.md", ct.Name)
		}
		for _, o := range ct.Options {
			keys[o.Key] = true
		}
		for _, o := range ct.ReadOptions {
			keys[o.Key] = true
		}
	}
	for _, o := range poolOptionDefs {
		keys[o.Key] = true
	}
	if len(keys) < 20 {
		t.Fatalf("only %d options", len(keys))
	}
	for k := range keys {
		if !strings.Contains(connections, "| `"+k+"` |") {
			t.Errorf("docs/connections.md does not list the option %s", k)
		}
		if !strings.Contains(config, "| `"+k+"` |") {
			t.Errorf("docs/config.md does not list the option %s", k)
		}
	}
}
