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
		{[]string{"--output", "json", "ds"}, "ds", "", true},
		{[]string{"-- SQL comment\nSELECT 1"}, "-- SQL comment\nSELECT 1", "", false},
		{[]string{"ds", "--", "--data", "x"}, "ds|--data|x", "", false},
	} {
		c0 := newCmdLine("t", "", "", flagsClient, io.Discard)
		pos, err := c0.parse(c.args)
		if err != nil || strings.Join(pos, "|") != c.pos || c0.cf.data != c.data || c0.cf.dataSet != (c.data != "") || c0.cf.json() != c.js {
			t.Errorf("parse(%q) = %q data %q json %v, %v", c.args, pos, c0.cf.data, c0.cf.json(), err)
		}
	}
	if _, err := newCmdLine("t", "", "", flagsClient, io.Discard).parse([]string{"--data"}); err == nil {
		t.Error("--data without a value accepted")
	}
	if _, err := newCmdLine("t", "", "", flagsClient, io.Discard).parse([]string{"--output", "yaml"}); err == nil {
		t.Error("--output yaml accepted")
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
