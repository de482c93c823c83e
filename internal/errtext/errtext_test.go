package errtext

import (
	"errors"
	"fmt"
	"testing"
)

// TestClean drops the package prefixes at the start and where wrapped
// errors join, and leaves other text (a backend's name, a colon inside a
// sentence) alone.
func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"snapshot: row not found":                                                     "row not found",
		"adapters: adapter does not exist: \"x\"":                                     "adapter does not exist: \"x\"",
		`resource "t" through data connection "c": adapters: resource does not exist`: `resource "t" through data connection "c": resource does not exist`,
		"reading (snapshot: version not kept; store: closed)":                         "reading (version not kept; closed)",
		"hbase: connection refused":                                                   "hbase: connection refused",
		"the snapshot: store: x":                                                      "the snapshot: x",
		"snapshot: store: closed":                                                     "closed",
		"no prefix here":                                                              "no prefix here",
		"mysnapshot: x":                                                               "mysnapshot: x",
		// errors.Join puts each error on a line of its own.
		"adapters: option \"connection\": required\nadapters: option \"resource\": required": "option \"connection\": required\noption \"resource\": required",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	err := fmt.Errorf("reading: %w", errors.New("snapshot: dataset does not exist"))
	if got := Text(err); got != "reading: dataset does not exist" {
		t.Errorf("Text = %q", got)
	}
	if Text(nil) != "" {
		t.Error("Text(nil) is not empty")
	}
}
