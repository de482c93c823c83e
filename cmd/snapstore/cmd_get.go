package main

import (
	"context"
	"io"
	"net/url"
	"strconv"
)

// atFlags are the version selector flags of the read commands (get, scan,
// datasets show): at most one of them.
type atFlags struct {
	version int64
	asOf    string
	tag     string
}

func (a *atFlags) register(c *cmdLine) {
	c.fs.Int64Var(&a.version, "version", 0, "read this `version`")
	c.fs.StringVar(&a.asOf, "as-of", "", "read the version current at this RFC 3339 `time`")
	c.fs.StringVar(&a.tag, "tag", "", "read the version with this `tag`")
}

// query sets the selector's query parameters of the HTTP API.
func (a *atFlags) query(q url.Values) {
	if a.version != 0 {
		q.Set("version", strconv.FormatInt(a.version, 10))
	}
	if a.asOf != "" {
		q.Set("as_of", a.asOf)
	}
	if a.tag != "" {
		q.Set("tag", a.tag)
	}
}

const getHelp = `One row of a dataset at one version (the current one unless --version,
--as-of or --tag), as the JSON object of GET /v1/datasets/{dataset}/rows/{key}
on one line; --table NAME reads a table of a dataset of several tables
(GET /v1/datasets/{dataset}/tables/{table}/rows/{key}). A composite key is one argument per key column, in key order;
put -- before a key that starts with "-". A row that is not there is exit
code 1 (row_not_found).`

// cmdGet is `snapstore get DATASET KEY...`.
func cmdGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("get", "DATASET KEY... [--table NAME] [--version N|--as-of TIME|--tag TAG] [--columns A,B]", getHelp, flagsClient, stdout)
	c.rawOutput("the API's JSON")
	var at atFlags
	at.register(c)
	var table tableFlag
	table.register(c)
	columns := c.fs.String("columns", "", "comma-separated `columns` to return (default all)")
	pos, err := c.parseN(args, 2, -1)
	if err != nil {
		return err
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		q := url.Values{}
		at.query(q)
		if *columns != "" {
			q.Set("columns", *columns)
		}
		path := table.path(pos[0], "/rows")
		for _, k := range pos[1:] {
			path += "/" + url.PathEscape(k)
		}
		return t.api.copyGet(ctx, stdout, path, q, "application/json") // the body ends with a newline
	})
}
