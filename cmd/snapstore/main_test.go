package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/internal/testenv"
	"go.uber.org/goleak"
)

// TestMain checks that serve and the client commands leave no goroutine
// behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// cli runs one command line in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb testenv.SyncBuffer
	code := runMain(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// cliAt returns a runner of command lines against the server at url
// that fails the test unless a command exits wantCode, and returns its
// output and errors.
func cliAt(t *testing.T, url string) func(wantCode int, args ...string) (string, string) {
	return func(wantCode int, args ...string) (string, string) {
		t.Helper()
		code, out, errs := cli(t, append(args, "--server", url)...)
		if code != wantCode {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, wantCode, out, errs)
		}
		return out, errs
	}
}

// writeFile writes text to a file name in a fresh temporary directory and
// returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// sqliteSource creates the SQLite source file path with script and returns
// it open; it is closed when the test ends.
func sqliteSource(t *testing.T, path, script string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(script); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestMain_UsageAndVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "snapstore ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version", "--help"}, {"-h"}, {"--help"}, {"help"}, {"help", "version"}} {
		code, stdout, stderr := cli(t, args...)
		if code != 0 || stdout == "" || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if code, stdout, _ := cli(t, "--version"); code != 0 || stdout != "snapstore "+buildVersion()+"\n" {
		t.Errorf("--version: %d %q", code, stdout)
	}
	if code := runMain(context.Background(), []string{"frobnicate"}, &out, &errb); code != 2 {
		t.Fatalf("unknown command exit %d", code)
	}
	// An unknown subcommand is one line naming the group's subcommands,
	// not the group's whole help.
	if code, _, stderr := cli(t, "adapters", "replace", "x"); code != 2 || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, `unknown subcommand "replace" (known: list, show, create, delete, run; snapstore help adapters tells more)`) {
		t.Errorf("unknown subcommand: exit %d, stderr %q", code, stderr)
	}
	if code := runMain(context.Background(), []string{"get", "onlydataset"}, &out, &errb); code != 2 {
		t.Fatalf("get without key exit %d", code)
	}
}

// zone is the regexp of the offset every time the CLI prints ends with
// (timeLayout): Z, or +01:00.
const zone = `(Z|[+-]\d\d:\d\d)`
