package main

import (
	"io"
	"os"
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
	if _, err := newCmdLine("t", "", "", flagsClient, io.Discard).parse([]string{"--data"}); err == nil || !strings.Contains(err.Error(), "argument: --data") {
		t.Errorf("--data without a value: %v", err)
	}
	c1 := newCmdLine("t", "", "", flagsClient, io.Discard)
	c1.fs.Int("rows", 0, "")
	if _, err := c1.parse([]string{"--rows", "many"}); err == nil || !strings.Contains(err.Error(), `invalid value "many" for flag --rows`) {
		t.Errorf("--rows many: %v", err)
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

// TestHelp_OnStdout: the help of the binary, of every command and of
// every subcommand goes to stdout with exit code 0, names the command and
// its flags; the client commands' help lists the exit codes. A command
// line that is wrong goes to stderr with exit code 2.
func TestHelp_OnStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}} {
		code, out, errs := cli(t, args...)
		if code != 0 || errs != "" || !strings.Contains(out, "Exit codes:") || !strings.Contains(out, "--server URL") {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errs, out)
		}
	}
	if code, out, errs := cli(t); code != 2 || out != "" || !strings.Contains(errs, "Usage: snapstore") {
		t.Errorf("no arguments: exit %d %q %q", code, out, errs)
	}
	groups := map[string][]string{
		"datasets": {"list", "show", "drop"}, "runs": {"list", "show", "follow"},
		"adapters": {"list", "show", "create", "delete", "run"}, "cluster": {"nodes", "backlog", "drain", "resume", "forget", "keys", "partitions", "keygen"}, "cert": {"ca", "node"},
		"connections": {"list", "show", "test", "resources", "create", "delete"},
	}
	for _, c := range commands {
		var lines [][]string
		if subs, ok := groups[c.name]; ok {
			lines = append(lines, []string{c.name, "--help"})
			for _, s := range subs {
				lines = append(lines, []string{c.name, s, "--help"}, []string{"help", c.name, s})
			}
		} else {
			lines = append(lines, []string{c.name, "--help"}, []string{"help", c.name})
		}
		for _, args := range lines {
			code, out, errs := cli(t, args...)
			name := strings.Join(args[:len(args)-1], " ")
			if args[0] == "help" {
				name = strings.Join(args[1:], " ")
			}
			if name == "help" {
				name = "" // snapstore help help: the usage text
			}
			if code != 0 || errs != "" || !strings.HasPrefix(out, "Usage: snapstore "+name) && !strings.Contains(out, "\nUsage: snapstore COMMAND") {
				t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errs, out)
				continue
			}
			if strings.Contains(out, "\n  --server URL") && !strings.Contains(out, "Exit codes:") {
				t.Errorf("%v: a client command's help without the exit codes:\n%s", args, out)
			}
		}
	}
	for _, args := range [][]string{{"datasets"}, {"datasets", "frob"}, {"diff"}, {"diff", "a", "b"}, {"help", "frob"}, {"runs", "list", "--bogus"}} {
		if code, out, errs := cli(t, args...); code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	// Defaults as typed (a number unquoted); get and scan do not offer a
	// table they never print; scan names its formats.
	for args, want := range map[string]string{"versions --help": "(default 100)\n", "get --help": "always prints the API's JSON", "scan --help": "ndjson (one JSON object a line), csv, arrow (an Arrow IPC stream) or parquet"} {
		_, out, _ := cli(t, strings.Fields(args)...)
		if !strings.Contains(out, want) || args != "versions --help" && strings.Contains(out, `(default "table")`) {
			t.Errorf("%s lacks %q (or offers a table):\n%s", args, want, out)
		}
	}
	// The README's command summary names every cluster subcommand.
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "snapstore cluster "+strings.Join(groups["cluster"], "|")) {
		t.Errorf("the README's summary lacks cluster %s", strings.Join(groups["cluster"], "|"))
	}
	// A token from the environment is never shown as a flag's default.
	t.Setenv(envToken, "env-token-Qa91")
	if _, out, _ := cli(t, "diff", "--help"); strings.Contains(out, "env-token-Qa91") {
		t.Errorf("help shows the token:\n%s", out)
	}
}

// TestCLI_LimitIsDecimal: --limit is read in decimal: "010" (which
// flag.Int read as octal 8), "0x10" and "0b11" are a usage error saying
// the form, before any request; "10" and the default are taken.
func TestCLI_LimitIsDecimal(t *testing.T) {
	const nowhere = "http://127.0.0.1:1" // refused: a request would be exit 3
	for _, v := range []string{"010", "0x10", "0b11", "1e3", "+5", "00"} {
		for _, cmd := range [][]string{
			{"scan", "products"}, {"versions", "products"}, {"runs", "list"}, {"audit"}, {"notifications", "deliveries"},
		} {
			args := append(append([]string{}, cmd...), "--limit", v, "--server", nowhere)
			code, _, errs := cli(t, args...)
			if code != exitUsage || !strings.Contains(errs, `want a number in decimal digits without a leading zero, got "`+v+`"`) {
				t.Errorf("%q: exit %d %s", args, code, errs)
			}
		}
	}
	if code, _, errs := cli(t, "scan", "products", "--limit", "10", "--server", nowhere); code != exitUnreachable {
		t.Errorf("--limit 10: exit %d %s", code, errs)
	}
}

// TestCLI_JSONFlagIsBoolean: --json takes a boolean only (--json=maybe
// was taken and ignored), and --json=false after --output json sets the
// table back.
func TestCLI_JSONFlagIsBoolean(t *testing.T) {
	if code, _, errs := cli(t, "datasets", "list", "--json=maybe", "--server", "http://127.0.0.1:1"); code != exitUsage || !strings.Contains(errs, `want --json alone, or --json=true or false, got "maybe"`) {
		t.Errorf("--json=maybe: exit %d %s", code, errs)
	}
	url, _, _ := startServe(t, 0, nil)
	code, out, errs := cli(t, "datasets", "list", "--output", "json", "--json=false", "--server", url)
	if code != 0 || !strings.HasPrefix(out, "DATASET ") {
		t.Errorf("--json=false: exit %d %s%s", code, out, errs)
	}
}
