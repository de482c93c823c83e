package main

import (
	"os"
	"strings"
	"testing"
)

// TestDocs_ReadmeLinksEveryDoc fails when a page of docs/ (or the
// design records' folder) is not linked from README.md's table: a reader
// starts there.
func TestDocs_ReadmeLinksEveryDoc(t *testing.T) {
	readme := readmeText(t)
	entries, err := os.ReadDir("../../docs")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		var link string
		switch {
		case e.IsDir() && e.Name() == "rfcs":
			link = "(docs/rfcs/)"
		case e.IsDir():
			continue // a page's assets (console screenshots)
		case strings.HasSuffix(e.Name(), ".md"), strings.HasSuffix(e.Name(), ".yaml"):
			link = "(docs/" + e.Name() + ")"
		default:
			continue
		}
		n++
		if !strings.Contains(readme, link) {
			t.Errorf("README.md does not link %s", strings.Trim(link, "()"))
		}
	}
	if n < 10 {
		t.Fatalf("only %d docs found", n)
	}
}
