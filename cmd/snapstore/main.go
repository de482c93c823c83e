// Command snapstore is the single snapstore binary: the server and a small
// CLI.
//
//	snapstore serve                     run the HTTP API and the scheduler
//	snapstore run [--force] ADAPTER     one run of an adapter, then exit (non-zero on failure)
//	snapstore get DATASET KEY...        one row (a composite key is one argument per key column)
//	snapstore scan DATASET              rows in key order (NDJSON or CSV)
//	snapstore versions DATASET          kept versions, newest first
//	snapstore sqlite FILE [SQL]         run SQL against a SQLite file (the sample source)
//	snapstore cluster SUBCOMMAND        members, backlog, drain, resume, forget, gossip keys
//	snapstore cert ca|node DIR          a cluster CA; a node's transfer certificate
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
//
// Each command lives in cmd_NAME.go, after serf's cmd/serf/command. The
// client commands share client.go (server or data directory, the HTTP
// client); flags.go parses the command line; config.go is the schema of the
// configuration, its defaults and validation, and configdecode.go reads it
// from the file, the environment and the flags; stack.go opens storage,
// datasets and adapters (hbase.go the HBase backend, cluster.go the cluster
// membership).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

const usage = `snapstore: versioned snapshots of source tables.

Usage:
  snapstore serve                      run the HTTP API and the scheduler
  snapstore run [--force] ADAPTER      one run of an adapter; exits 1 unless it succeeded
                                       (--force commits even when a guard refuses)
  snapstore get DATASET KEY...         one row; a composite key is one argument per key column
  snapstore scan DATASET               rows in key order (--format ndjson|csv)
  snapstore versions DATASET           kept versions, newest first
  snapstore sqlite FILE [SQL]          run SQL (argument or stdin) against a SQLite file
  snapstore cluster nodes [--json]     the cluster's members as the server sees them
  snapstore cluster drain|resume|forget NODE   drain a node, take it back, remove a dead one
  snapstore cluster keys [install|use|remove --key-file F]   the gossip keys, rotation
  snapstore cluster backlog [--json]   what waits on the server to be sent to each node
  snapstore cluster keygen             print a new gossip key (base64) for cluster.gossip_key_file
  snapstore cert ca DIR                a cluster CA for the transfer (DIR/ca.crt, DIR/ca.key)
  snapstore cert node DIR [--id ID]    a node certificate signed by DIR's CA, naming the node id
                                       (default: the data directory's, created if new)
  snapstore version                    print the build version

Common flags (every command):
  --config FILE      YAML config (also SNAPSTORE_CONFIG)
  --data DIR         data directory (default ./data)
  --listen ADDR      HTTP listen address (default 127.0.0.1:8080)
  --log-level LEVEL  debug, info, warn, error
Client flags (run, get, scan, versions, cluster):
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

// command runs one command with its arguments (the command name removed).
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// commands maps each command name to its function, one file each
// (cmd_NAME.go). trivial-http is left out of the usage text: it is the
// baseline of make bench, not a user command.
var commands = map[string]command{
	"serve":        cmdServe,
	"run":          cmdRun,
	"get":          cmdGet,
	"scan":         cmdScan,
	"versions":     cmdVersions,
	"sqlite":       cmdSQLite,
	"cluster":      cmdCluster,
	"cert":         cmdCert,
	"version":      cmdVersion,
	"trivial-http": cmdTrivialHTTP,
}

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
	name, args := args[0], args[1:]
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "snapstore: unknown command %q\n\n%s", name, usage)
		return 2
	}
	err := cmd(ctx, args, stdout, stderr)
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "snapstore %s: %v\n", name, err)
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
