// Command snapstore is the single snapstore binary: the server, and a CLI
// that does everything the HTTP API does.
//
//	snapstore serve                     the HTTP API, the scheduler and the console
//	snapstore get|scan|versions|diff    read datasets
//	snapstore datasets|tag|untag|rollback|gc
//	snapstore run|runs|adapters|connections
//	snapstore cluster nodes|backlog|drain|resume|forget|keys|partitions|keygen  the cluster
//	snapstore secrets rotate            encrypt stored secrets again with the first key
//	snapstore cert ca|node DIR          a cluster CA; a node's transfer certificate
//	snapstore hbase drop-table          delete the HBase table of a config
//	snapstore sqlite FILE [SQL]         SQL on a SQLite file (the sample source)
//	snapstore version                   the build version (also --version)
//
// `snapstore help` prints the commands, the flags every command takes and
// the exit codes; `snapstore help COMMAND` (or COMMAND --help) one
// command. docs/cli.md is the same for a reader.
//
// Configuration comes from defaults, the file (--config), SNAPSTORE_*
// environment variables and flags, in that order (docs/config.md).
//
// A client command runs where the user says (target.go): against the
// server named by --server, or on the data directory named by --data, in
// this process; with neither, against the server at the configured listen
// address when one answers, else on the configured data directory, and
// stderr says which. Either way it speaks the HTTP API: on a data
// directory the API is served in this process over an in-memory pipe, so
// both ways give the same answers, checks and errors.
//
// Each command lives in cmd_NAME.go, after serf's cmd/serf/command.
// cmdline.go parses command lines and prints help, target.go picks and
// opens the target, client.go speaks the API, output.go prints tables and
// JSON, follow.go follows a run with a progress bar; config.go is the
// schema of the configuration, its defaults and validation, and
// configdecode.go reads it from the file, the environment and the flags;
// stack.go opens storage, datasets and adapters (hbase.go the HBase
// backend, cluster.go the cluster membership).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/snapstore/snapstore/internal/errtext"
)

func main() {
	os.Exit(runMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes of every command; usage and docs/cli.md list them.
const (
	exitOK          = 0
	exitFailed      = 1 // the operation failed or was refused
	exitUsage       = 2 // bad command line or configuration
	exitUnreachable = 3 // no server at --server, or the data directory would not open
	exitInterrupted = 130
)

// exitError carries a process exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a bad command line: exit code 2.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// command runs one command with its arguments (the command name removed).
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// commandInfo is one line of the usage text.
type commandInfo struct {
	name    string
	run     command
	args    string // the synopsis after the name
	summary string
	group   string
}

// The usage text's groups, in order.
const (
	groupServer = "Server"
	groupData   = "Datasets"
	groupRuns   = "Runs, adapters and data connections"
	groupOther  = "Other"
)

// commands lists every command, one file each (cmd_NAME.go), in the
// order of the usage text.
var commands = []commandInfo{
	{"serve", cmdServe, "", "run the HTTP API, the scheduler and the web console (/ui/)", groupServer},
	{"get", cmdGet, "DATASET KEY...", "one row; a composite key is one argument per key column", groupData},
	{"scan", cmdScan, "DATASET", "rows in key order (--format ndjson|csv|arrow|parquet)", groupData},
	{"export", cmdExport, "DATASET", "a version as Parquet files in a directory (--out DIR)", groupData},
	{"versions", cmdVersions, "DATASET", "kept versions, newest first", groupData},
	{"diff", cmdDiff, "DATASET", "what changed between two versions, row by row (--from, --to)", groupData},
	{"tables", cmdTables, "DATASET", "the tables of a dataset of several tables at one version", groupData},
	{"datasets", cmdDatasets, "list|show|drop", "the datasets; one dataset; drop one (asks first)", groupData},
	{"tag", cmdTag, "DATASET TAG", "name a version (default the current one); GC keeps it", groupData},
	{"untag", cmdUntag, "DATASET TAG", "remove a tag", groupData},
	{"rollback", cmdRollback, "DATASET VERSION|TAG", "make an older version current again (asks first)", groupData},
	{"gc", cmdGC, "DATASET...|--all", "apply retention now and reclaim space (--dry-run reports only)", groupData},
	{"run", cmdRun, "ADAPTER", "one run of an adapter, followed to its end; exits 1 unless it succeeded", groupRuns},
	{"runs", cmdRuns, "list|show|follow", "runs; one run; follow a run with a progress bar", groupRuns},
	{"adapters", cmdAdapters, "list|show|create|delete|run", "adapters, from a YAML file of the config file's keys", groupRuns},
	{"connections", cmdConnections, "list|show|create|delete|test|resources", "data connections; test one; its tables", groupRuns},
	{"cluster", cmdCluster, "nodes|backlog|drain|resume|forget|keys|partitions|keygen", "the cluster: members, what waits to be sent, drain, forget, gossip keys, partitions", groupOther},
	{"audit", cmdAudit, "", "the audit trail: who changed, was refused, read what (--since, --actor, --action)", groupOther},
	{"cert", cmdCert, "ca|node|server DIR", "a CA; a node certificate for the transfer between nodes; a certificate of the HTTPS API", groupOther},
	{"tokens", cmdTokens, "create|list|revoke", "bearer tokens made through the API: create (shown once), list, revoke", groupOther},
	{"token", cmdToken, "new|hash", "a new random token and its hash; the hash of a token read on stdin", groupOther},
	{"secrets", cmdSecrets, "rotate", "encrypt every stored connection secret again with the first key", groupOther},
	{"notifications", cmdNotifications, "deliveries|test", "run notifications: the webhooks' delivery log; send a test event", groupOther},
	{"hbase", cmdHBase, "drop-table", "delete the HBase table of a config and everything in it (asks first)", groupOther},
	{"sqlite", cmdSQLite, "FILE [SQL]", "run SQL (argument or stdin) against a SQLite file, e.g. the sample source", groupOther},
	{"version", cmdVersion, "", "print the build version (also --version)", groupOther},
	{"help", nil, "[COMMAND]", "this text, or one command's", groupOther}, // runMain runs cmdHelp
}

// lookupCommand returns the command called name.
func lookupCommand(name string) (commandInfo, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return commandInfo{}, false
}

// usage is the text of `snapstore help`.
func usage() string {
	var b strings.Builder
	b.WriteString("snapstore: versioned snapshots of source tables.\n\nUsage: snapstore COMMAND [ARGUMENTS] [FLAGS]\n")
	group := ""
	for _, c := range commands {
		if c.group != group {
			group = c.group
			fmt.Fprintf(&b, "\n%s:\n", group)
		}
		syn := strings.TrimSpace(c.name + " " + c.args)
		if len(syn) > 30 {
			fmt.Fprintf(&b, "  %s\n  %-30s %s\n", syn, "", c.summary)
			continue
		}
		fmt.Fprintf(&b, "  %-30s %s\n", syn, c.summary)
	}
	b.WriteString("\n" + targetHelp + "\n" + exitCodesHelp)
	b.WriteString("\n`snapstore help COMMAND` or `snapstore COMMAND --help` tells more of each.\nDocs: README.md, docs/cli.md, docs/config.md, docs/api.md.\n")
	return b.String()
}

// targetHelp says where a client command runs and the flags they all
// take.
const targetHelp = `Where a command runs (every command but serve, sqlite, version, cert and cluster keygen):
  --server URL     ask the snapstore server at URL (also SNAPSTORE_SERVER)
  --data DIR       open the data directory DIR in this process; no server asked
  (neither)        the server at the configured listen address if one answers,
                   else the configured data directory; stderr says which
  --token TOKEN    bearer token of the API for --server; prefer SNAPSTORE_TOKEN,
                   since a flag shows in the process list. Never printed.
  --config FILE    YAML config (also SNAPSTORE_CONFIG): listen, data, the
                   connections and adapters of the file, and with tls the
                   certificate to trust (tls.ca_file, else tls.cert_file)
                   unless --ca-file is given
  --output FORMAT  table (default) or json: the API's JSON
  --listen ADDR, --log-level LEVEL: as in the config file
`

// exitCodesHelp lists the exit codes.
const exitCodesHelp = `Exit codes:
  0    done
  1    the operation failed: the server refused it (its problem code is
       printed), a run did not succeed, a connection test failed
  2    bad usage or configuration
  3    no server answered at --server, or the data directory would not open
       (a server holds it: give --server)
  130  interrupted (Ctrl-C)
`

// runMain runs one command and returns the process exit code (exitCodesHelp).
// Help goes to stdout, errors to stderr.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "-help":
		fmt.Fprint(stdout, usage())
		return exitOK
	case "--version", "-version":
		args = append([]string{"version"}, args[1:]...)
	}
	name, args := args[0], args[1:]
	cmd, ok := lookupCommand(name)
	if !ok {
		fmt.Fprintf(stderr, "snapstore: unknown command %q (snapstore help lists them)\n", name)
		return exitUsage
	}
	run := cmd.run
	if name == "help" {
		run = cmdHelp
	}
	err := run(ctx, args, stdout, stderr)
	if err == nil || errors.Is(err, errHelpShown) {
		return exitOK
	}
	fmt.Fprintf(stderr, "snapstore %s: %s\n", name, errtext.Text(err))
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailed
}

// cmdHelp is `snapstore help [COMMAND [SUBCOMMAND]]`: the usage text, or
// the help of a command, on stdout.
func cmdHelp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprint(stdout, usage())
		return nil
	}
	c, ok := lookupCommand(args[0])
	if !ok {
		return usageError("no command %q (snapstore help lists them)", args[0])
	}
	return c.run(ctx, append(args[1:], "--help"), stdout, stderr)
}
