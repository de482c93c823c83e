// Command snapstore is the single snapstore binary: the server and a small
// CLI.
//
//	snapstore serve                     run the HTTP API and the scheduler
//	snapstore run [--force] ADAPTER     one run of an adapter, then exit (non-zero on failure)
//	snapstore get DATASET KEY...        one row (a composite key is one argument per key column)
//	snapstore scan DATASET              rows in key order (NDJSON or CSV)
//	snapstore versions DATASET          kept versions, newest first
//	snapstore sqlite FILE [SQL]         run SQL against a SQLite file (the sample source)
//	snapstore version                   print the build version
//
// Every command takes --config FILE, --data DIR, --listen ADDR and
// --log-level LEVEL; configuration comes from defaults, the file, SNAPSTORE_*
// environment variables and flags, in that order (docs/config.md).
//
// run, get, scan and versions talk to a running server when one answers:
// the one named by --server (or SNAPSTORE_SERVER), else the configured
// listen address. When none answers they open the data directory
// themselves; Pebble's directory lock keeps a second process out while a
// server runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"unicode"
)

// version is set at build time with -ldflags "-X main.version=..."; else
// the module version from the build info.
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v := bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
		if v != "" {
			return v
		}
	}
	return "(devel)"
}

const usage = `snapstore: versioned snapshots of source tables.

Usage:
  snapstore serve                      run the HTTP API and the scheduler
  snapstore run [--force] ADAPTER      one run of an adapter; exits 1 unless it succeeded
                                       (--force commits even when a guard refuses)
  snapstore get DATASET KEY...         one row; a composite key is one argument per key column
  snapstore scan DATASET               rows in key order (--format ndjson|csv)
  snapstore versions DATASET           kept versions, newest first
  snapstore sqlite FILE [SQL]          run SQL (argument or stdin) against a SQLite file
  snapstore version                    print the build version

Common flags (every command):
  --config FILE      YAML config (also SNAPSTORE_CONFIG)
  --data DIR         data directory (default ./data)
  --listen ADDR      HTTP listen address (default 127.0.0.1:8080)
  --log-level LEVEL  debug, info, warn, error
Client flags (run, get, scan, versions):
  --server URL       talk to this server (also SNAPSTORE_SERVER); default: the
                     listen address if a server answers there, else the data dir
  --token TOKEN      bearer token for --server (also SNAPSTORE_TOKEN)

Docs: README.md, docs/getting-started.md, docs/config.md, docs/api.md.
`

func main() {
	os.Exit(runMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries a process exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// runMain runs one command and returns the process exit code: 0 on
// success, 1 on failure (a failed run included), 2 on bad usage or config.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, args := args[0], args[1:]
	var err error
	switch cmd {
	case "serve":
		err = cmdServe(ctx, args, stdout, stderr)
	case "run":
		err = cmdRun(ctx, args, stdout, stderr)
	case "get":
		err = cmdGet(ctx, args, stdout, stderr)
	case "scan":
		err = cmdScan(ctx, args, stdout, stderr)
	case "versions":
		err = cmdVersions(ctx, args, stdout, stderr)
	case "sqlite":
		err = cmdSQLite(ctx, args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "snapstore", buildVersion())
		return 0
	case "trivial-http":
		err = cmdTrivialHTTP(ctx, args, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "snapstore: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "snapstore %s: %v\n", cmd, err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

// usageError is a bad command line: exit code 2.
func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// commonFlags are the flags every command takes.
type commonFlags struct {
	config   string
	data     string
	listen   string
	logLevel string
	server   string
	token    string
}

func newFlagSet(name string, stderr io.Writer, client bool) (*flag.FlagSet, *commonFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := &commonFlags{}
	fs.StringVar(&cf.config, "config", os.Getenv("SNAPSTORE_CONFIG"), "YAML config file")
	fs.StringVar(&cf.data, "data", "", "data directory (overrides the config)")
	fs.StringVar(&cf.listen, "listen", "", "HTTP listen address host:port (overrides the config)")
	fs.StringVar(&cf.logLevel, "log-level", "", "debug, info, warn or error (overrides the config)")
	if client {
		fs.StringVar(&cf.server, "server", os.Getenv("SNAPSTORE_SERVER"), "server URL, e.g. http://127.0.0.1:8080")
		fs.StringVar(&cf.token, "token", os.Getenv("SNAPSTORE_TOKEN"), "bearer token for the server")
	}
	return fs, cf
}

// parseArgs parses flags placed before or after positional arguments. An
// argument spelt like a flag (-name, --name, --name=value) that names no
// flag of fs is a usage error naming it; anything else starting with "-"
// is positional, so a negative key ("get ds -5") or SQL starting with a
// "-- " comment stays an argument; "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos, flagArgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		name, hasValue := flagName(a)
		f := fs.Lookup(name)
		if name == "h" || name == "help" {
			flagArgs = append(flagArgs, a)
			continue
		}
		if f == nil {
			if looksLikeFlag(name) {
				return nil, usageError("unknown flag %s (flags: %s; put -- before an argument that starts with -)", a, flagList(fs))
			}
			pos = append(pos, a)
			continue
		}
		flagArgs = append(flagArgs, a)
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); hasValue || (ok && bf.IsBoolFlag()) {
			continue
		}
		if i+1 < len(args) {
			i++
			flagArgs = append(flagArgs, args[i])
		}
	}
	if err := fs.Parse(flagArgs); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &exitError{code: 2, err: err}
	}
	return pos, nil
}

// looksLikeFlag reports whether name (from flagName) is spelt like a
// flag: a letter, then letters, digits and '-'. "-5" and "-- comment" are
// arguments.
func looksLikeFlag(name string) bool {
	if name == "" || !unicode.IsLetter(rune(name[0])) {
		return false
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' {
			return false
		}
	}
	return true
}

// flagList names fs's flags as "--a, --b".
func flagList(fs *flag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return strings.Join(names, ", ")
}

// flagName returns the flag name of "-name", "--name" or "--name=value",
// and whether the value is attached; "" for anything else.
func flagName(a string) (string, bool) {
	if len(a) < 2 || a[0] != '-' {
		return "", false
	}
	n := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	if n == "" || n[0] == '-' || n[0] == '=' {
		return "", false
	}
	name, _, hasValue := strings.Cut(n, "=")
	return name, hasValue
}
