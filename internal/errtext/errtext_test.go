package errtext

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
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

// TestLine makes one line of a text of many (errors.Join, a Java stack
// trace, a Thrift exception's message), bounds it to MaxLine bytes at a
// character's boundary saying how much was cut, and leaves a short line
// as it is.
func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"no line break here": "no line break here",
		"option \"connection\": required\noption \"resource\": required": "option \"connection\": required; option \"resource\": required",
		"hbase: put: java.io.IOException: Over memstore limit\n\tat org.apache.hadoop.hbase.regionserver.HRegion.checkResources(HRegion.java:4979)\r\n\tat X.y(X.java:1)\n": "hbase: put: java.io.IOException: Over memstore limit; at org.apache.hadoop.hbase.regionserver.HRegion.checkResources(HRegion.java:4979); at X.y(X.java:1)",
		"a\n\n\u2028  b\tc\x00d": "a; b c d",
		"  \n":                   "",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("é", MaxLine) // two bytes each
	got := Line("start " + long + "\nend")
	if len(got) > MaxLine || !utf8.ValidString(got) || !strings.HasPrefix(got, "start é") || strings.Contains(got, "end") || strings.ContainsAny(got, "\n\r") {
		t.Fatalf("Line of %d bytes = %d bytes %q", len(long)+10, len(got), got)
	}
	kept := strings.Index(got, " ... [")
	if want := fmt.Sprintf(" ... [%d more bytes cut; the whole text is in the log]", len("start "+long+"; end")-kept); got[kept:] != want {
		t.Fatalf("Line's end = %q, want %q", got[kept:], want)
	}
	if exact := strings.Repeat("x", MaxLine); Line(exact) != exact {
		t.Fatal("a line of MaxLine bytes was cut")
	}
}
