package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/snapstore/snapstore/adapters"
)

// connectionView is a data connection as the API answers it: secrets
// read REDACTED, references (env:NAME) as given.
type connectionView struct {
	Name      string         `json:"name"`
	Type      string         `json:"type"`
	Sharing   string         `json:"sharing"`
	Options   map[string]any `json:"options"`
	Source    string         `json:"source"`
	Status    string         `json:"status"`
	Revision  int64          `json:"revision"`
	UpdatedAt time.Time      `json:"updated_at"`
	Adapters  []string       `json:"adapters"`
}

const connectionsHelp = `Data connections: named references to a source database (mysql, postgres,
sqlite) that adapters pull tables through. A secret option never shows: it
reads REDACTED, or as the reference it was given as (env:NAME).`

// cmdConnections is `snapstore connections list|show|create|delete|test|resources`.
func cmdConnections(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "connections", connectionsHelp, []subcommand{
		{"list", "", "every data connection", connectionsList},
		{"show", "CONNECTION", "one data connection, its options", connectionsShow},
		{"test", "CONNECTION", "connect, ask the server's version, SELECT 1", connectionsTest},
		{"resources", "CONNECTION", "the tables and views it reaches", connectionsResources},
		{"create", "-f FILE [--replace]", "a data connection from a YAML file (the config file's keys)", connectionsCreate},
		{"delete", "CONNECTION [--force]", "drop a data connection", connectionsDelete},
	}, args, stdout, stderr)
}

func connectionsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("connections list", "", "Every data connection: type, sharing mode, where it is defined, and the adapters that name it.", flagsClient, stdout)
	type answer struct {
		Connections []connectionView `json:"connections"`
	}
	return readCommand(ctx, c, args, stderr, 0, path0("/v1/connections"), func(_ []string, body answer) error {
		tb := newTable(stdout, "CONNECTION", "TYPE", "SHARING", "DEFINED IN", "STATUS", "ADAPTERS")
		for _, cn := range body.Connections {
			tb.row(cn.Name, cn.Type, cn.Sharing, cn.Source, cn.Status, strings.Join(cn.Adapters, ", "))
		}
		return tb.flush()
	})
}

// connectionPath is the request of a command about the connection its one
// argument names: /v1/connections/NAME and sub.
func connectionPath(sub string) func([]string) (string, url.Values) {
	return func(pos []string) (string, url.Values) { return pathOf("/v1/connections/", pos[0], sub), nil }
}

func connectionsShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("connections show", "CONNECTION", "One data connection: its type, sharing mode and options (secrets REDACTED or as their reference).", flagsClient, stdout)
	return readCommand(ctx, c, args, stderr, 1, connectionPath(""), func(_ []string, cn connectionView) error {
		kv := []string{"connection", cn.Name, "type", cn.Type, "sharing", cn.Sharing, "status", cn.Status,
			"defined in", fmt.Sprintf("%s (revision %d, updated %s)", cn.Source, cn.Revision, timeText(&cn.UpdatedAt)),
			"adapters", strings.Join(cn.Adapters, ", ")}
		names := make([]string, 0, len(cn.Options))
		for k := range cn.Options {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			b, _ := json.Marshal(cn.Options[k])
			kv = append(kv, "options."+k, valueText(b))
		}
		return printFields(stdout, kv...)
	})
}

const connectionsTestHelp = `Test a data connection: connect, ask the server's version and run SELECT 1,
under the connection's connect_timeout. A failed test says why (cause:
unreachable, auth, unknown_database, timeout, config, error) and is exit
code 1; the message names the server and the cause.`

func connectionsTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("connections test", "CONNECTION", connectionsTestHelp, flagsClient, stdout)
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		var res adapters.TestResult
		raw, err := t.api.send(ctx, http.MethodPost, pathOf("/v1/connections/", pos[0], "/test"), nil, nil, &res)
		if err != nil {
			return err
		}
		if c.cf.json() {
			err = printJSON(stdout, raw)
		} else if res.OK {
			err = printFields(stdout, "connection", pos[0], "result", "ok", "server", res.ServerVersion, "took", shortDuration(res.Latency))
		} else {
			err = printFields(stdout, "connection", pos[0], "result", "failed", "cause", res.Cause, "took", shortDuration(res.Latency), "message", res.Message)
		}
		if err != nil {
			return err
		}
		if !res.OK {
			return &exitError{code: exitFailed, err: fmt.Errorf("the test failed (%s)", res.Cause)}
		}
		return nil
	})
}

func connectionsResources(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("connections resources", "CONNECTION", "The tables and views a data connection reaches: schema, name, type, the estimated rows, and the key a run would choose when the source says.", flagsClient, stdout)
	type answer struct {
		Resources []adapters.Resource `json:"resources"`
	}
	return readCommand(ctx, c, args, stderr, 1, connectionPath("/resources"), func(_ []string, body answer) error {
		tb := newTable(stdout, "SCHEMA", "NAME", "TYPE", "ROWS (EST.)", "KEY")
		for _, r := range body.Resources {
			est := "unknown" // no statistics at the source
			if r.EstimatedRows >= 0 {
				est = count(r.EstimatedRows)
			}
			key := strings.Join(r.Key, ", ")
			if r.Type == "dataset" && len(r.Key) == 0 {
				// A dataset of several tables has no key of its own:
				// its tables, listed after it, are the resources.
				key = "its tables: below"
			}
			tb.row(r.Schema, r.Name, r.Type, est, key)
		}
		return tb.flush()
	})
}

const connectionsCreateHelp = `Create a data connection from a YAML file ("-" for stdin): one mapping with
the keys of an entry of the config file's connections list
(docs/connections.md lists each type's options), e.g.

  name: sakila
  type: mysql
  options:
    host: db1
    user: etl
    password: "..."   # stored encrypted
    database: sakila

Give a secret literally: it is stored encrypted with the server's key
(secrets.key_file, or one generated in a Pebble data directory;
docs/security.md). An env:NAME or file:/path reference, read by the
server when it connects, is taken only for variables starting with the
server's secrets.env_prefix and files under its secrets.file_dirs
(neither is set by default). --replace replaces a connection of that
name made this way. Errors that name a key say its line in the file.`

func connectionsCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return createDefinition(ctx, args, stdout, stderr, "connections create", "connection", "/v1/connections", connectionsCreateHelp,
		func(w io.Writer, raw []byte) error {
			var cn connectionView
			if err := json.Unmarshal(raw, &cn); err != nil {
				return err
			}
			_, err := fmt.Fprintf(w, "connection %s: %s, %s (revision %d); snapstore connections test %s checks it\n", cn.Name, cn.Type, cn.Sharing, cn.Revision, cn.Name)
			return err
		})
}

func connectionsDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("connections delete", "CONNECTION [--force]", "Drop a data connection made with create (or through the API). While adapters name it this is refused (connection_in_use), unless --force: their runs then fail until it is back. Runs that hold it finish.", flagsClient, stdout)
	force := c.fs.Bool("force", false, "drop it even while adapters name it")
	request := func(name string) (string, url.Values) {
		q := url.Values{}
		if *force {
			q.Set("force", "true")
		}
		return pathOf("/v1/connections/", name), q
	}
	return deleteCommand(ctx, c, args, stderr, request, "connection %s dropped")
}
