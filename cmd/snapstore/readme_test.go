package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readmeText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeCommands returns the bin/snapstore command lines of the README's
// first walk-through (the code block after "A few minutes with `make
// run`"), each split into arguments as a shell would (double quotes, and
// a "#" comment dropped).
func readmeCommands(t *testing.T) [][]string {
	t.Helper()
	text := readmeText(t)
	i := strings.Index(text, "## A few minutes with `make run`")
	if i < 0 {
		t.Fatal("README.md has no section \"A few minutes with `make run`\"")
	}
	block := text[i:]
	start := strings.Index(block, "```sh\n")
	end := strings.Index(block[start+6:], "```")
	if start < 0 || end < 0 {
		t.Fatal("the walk-through has no code block")
	}
	var cmds [][]string
	for _, line := range strings.Split(block[start+6:start+6+end], "\n") {
		if !strings.HasPrefix(line, "bin/snapstore ") {
			continue
		}
		var args []string
		var cur strings.Builder
		inQuote, inWord := false, false
	scan:
		for _, r := range line[len("bin/snapstore "):] {
			switch {
			case r == '"':
				inQuote, inWord = !inQuote, true
			case inQuote:
				cur.WriteRune(r)
			case r == '#':
				break scan
			case r == ' ':
				if inWord {
					args = append(args, cur.String())
					cur.Reset()
					inWord = false
				}
			default:
				cur.WriteRune(r)
				inWord = true
			}
		}
		if inWord {
			args = append(args, cur.String())
		}
		cmds = append(cmds, args)
	}
	return cmds
}

// TestReadmeFirstRun runs the README's walk-through as written, its
// client commands given the address of a server started here on the
// sample (examples/shop.sql, examples/snapstore.yaml): the first version,
// the tag, the change at the source, a run, the new price, the diff since
// the tag naming the changed column, the deleted row read at the tag, the
// versions.
func TestReadmeFirstRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "shop.db")
	script, err := os.ReadFile("../../examples/shop.sql")
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, "sqlite", db, string(script)); code != 0 {
		t.Fatalf("creating the sample: %d %s %s", code, out, errs)
	}
	cfg, err := loadConfig(&commonFlags{config: "../../examples/snapstore.yaml", data: filepath.Join(dir, "data"), listen: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Connections[0].Options["path"] = db
	for i := range cfg.Adapters {
		cfg.Adapters[i].Schedule = "" // the test starts runs itself
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, cfg, nil, slog.New(slog.DiscardHandler), ready) }()
	addr := <-ready
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	// The sample runs its adapters once at start (run_on_start).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, out, _ := cli(t, "runs", "list", "--adapter", "products", "--listen", addr)
		if strings.Contains(out, "succeeded") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no succeeded run at start: %s", out)
		}
	}
	cmds := readmeCommands(t)
	if len(cmds) < 8 {
		t.Fatalf("the walk-through has %d commands: %q", len(cmds), cmds)
	}
	outs := map[string]string{}
	gets := 0
	for _, args := range cmds {
		if args[0] == "sqlite" {
			args[1] = db
		} else {
			args = append(args, "--listen", addr)
		}
		code, out, errs := cli(t, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s%s", args, code, out, errs)
		}
		if args[0] != "sqlite" && !strings.Contains(errs, "using the server at http://"+addr) {
			t.Errorf("%q does not say which server it asks: %q", args, errs)
		}
		key := args[0]
		if key == "get" {
			gets++
			key = fmt.Sprint("get", gets)
		}
		outs[key] = out
	}
	for key, want := range map[string][]string{
		"get1":     {`"name":"Milk jug"`, `"price":"8.9"`},
		"tag":      {"is tagged first"},
		"run":      {"status:    succeeded", "1 inserted, 1 updated, 1 deleted"},
		"get2":     {`"price":"7.49"`},
		"diff":     {"update  2    price: 8.9 -> 7.49", "delete  5", "insert  9    id=9 name=Teapot", "1 inserted, 1 updated, 1 deleted"},
		"get3":     {`"name":"Tamper"`},
		"versions": {"first", "*"},
	} {
		for _, w := range want {
			if !strings.Contains(outs[key], w) {
				t.Errorf("%s: the output lacks %q:\n%s", key, w, outs[key])
			}
		}
	}
}
