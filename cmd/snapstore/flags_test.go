package main

import (
	"io"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		pos  string
		data string
		js   bool
	}{
		{[]string{"ds", "-5", "--data", "d1"}, "ds|-5", "d1", false},
		{[]string{"--data=d2", "ds", "--json", "k"}, "ds|k", "d2", true},
		{[]string{"-- SQL comment\nSELECT 1"}, "-- SQL comment\nSELECT 1", "", false},
		{[]string{"ds", "--", "--data", "x"}, "ds|--data|x", "", false},
	} {
		fs, cf := newFlagSet("t", io.Discard, false)
		js := fs.Bool("json", false, "")
		pos, err := parseArgs(fs, c.args)
		if err != nil || strings.Join(pos, "|") != c.pos || cf.data != c.data || *js != c.js {
			t.Errorf("parseArgs(%q) = %q data %q json %v, %v", c.args, pos, cf.data, *js, err)
		}
	}
	fs, _ := newFlagSet("t", io.Discard, false)
	if _, err := parseArgs(fs, []string{"--data"}); err == nil {
		t.Error("--data without a value accepted")
	}
}

// TestCLI_UnknownFlagAfterPositionals: a misspelt flag
// after the arguments is reported as an unknown flag (exit 2), not taken
// as a key part; "-5" stays a key.
func TestCLI_UnknownFlagAfterPositionals(t *testing.T) {
	for _, args := range [][]string{
		{"get", "products", "2", "--verison", "1"},
		{"serve", "--lisen", "127.0.0.1:0"},
		{"scan", "products", "-formt=csv"},
	} {
		code, _, stderr := cli(t, args...)
		if code != 2 || !strings.Contains(stderr, "unknown flag "+args[len(args)-2]) && !strings.Contains(stderr, "unknown flag "+args[len(args)-1]) {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}
