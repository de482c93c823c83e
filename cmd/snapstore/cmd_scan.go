package main

import (
	"context"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

const scanHelp = `Rows of a dataset in key order, at one version (the current one unless
--version, --as-of or --tag): NDJSON (one JSON object a row), CSV with a
header line (NULL an empty field, an empty string "", bytes base64), an
Apache Arrow IPC stream (--format arrow) or a Parquet file (--format parquet, --compression zstd or
snappy), as GET /v1/datasets/{dataset}/rows answers with that format. The
bytes go to standard output, or to --out FILE; Arrow and Parquet, which
are binary, never to a terminal. --start, --end and --prefix
are key prefixes: repeat them once per key column, in key order. --table
NAME scans a table of a dataset of several tables
(GET /v1/datasets/{dataset}/tables/{table}/rows).`

// cmdScan is `snapstore scan DATASET`.
func cmdScan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("scan", "DATASET [--table NAME] [--format ndjson|csv|arrow|parquet] [--out FILE] [--start K]... [--end K]... [--prefix K]... [--limit N]", scanHelp, flagsClient, stdout)
	var at atFlags
	at.register(c)
	var table tableFlag
	table.register(c)
	var start, end, prefix listFlag
	c.fs.Var(&start, "start", "first `key` included (repeat once per key column)")
	c.fs.Var(&end, "end", "first `key` excluded (repeat once per key column)")
	c.fs.Var(&prefix, "prefix", "key `prefix` (repeat once per key column)")
	columns := c.fs.String("columns", "", "comma-separated `columns` to return (default all)")
	limit := c.intFlag("limit", 0, "most `rows` (0: all)")
	c.rawOutput("NDJSON, or CSV, Arrow or Parquet with --format")
	format := c.fs.String("format", "ndjson", "`format`: ndjson (one JSON object a line), csv, arrow (an Arrow IPC stream) or parquet")
	compression := c.fs.String("compression", "", "Parquet `compression`: zstd (the server's default) or snappy")
	out := c.fs.String("out", "", "write to this `file` instead of standard output (written whole or not at all)")
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	accept := scanMedia[*format]
	if accept == "" {
		return usageError("--format: want ndjson, csv, arrow or parquet, got %q", *format)
	}
	if *limit < 0 {
		// Not "all": a negative count is a mistake, as for versions.
		return usageError("--limit: want a positive number, or 0 for every row, got %d", *limit)
	}
	if (*format == "arrow" || *format == "parquet") && *out == "" && isTerminal(stdout) {
		return usageError("--format %s is binary: give --out FILE or redirect standard output to a file or a pipe", *format)
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		q := url.Values{}
		at.query(q)
		for name, vs := range map[string]listFlag{"start": start, "end": end, "prefix": prefix} {
			for _, v := range vs {
				q.Add(name, v)
			}
		}
		if *columns != "" {
			q.Set("columns", *columns)
		}
		if *limit > 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		if *compression != "" {
			q.Set("compression", *compression)
		}
		path := table.path(pos[0], "/rows")
		if *out != "" {
			return t.api.getFile(ctx, *out, path, q, accept)
		}
		return t.api.copyGet(ctx, stdout, path, q, accept)
	})
}

// scanMedia maps --format to the media type asked for.
var scanMedia = map[string]string{
	"ndjson":  "application/x-ndjson",
	"csv":     "text/csv",
	"arrow":   "application/vnd.apache.arrow.stream",
	"parquet": "application/vnd.apache.parquet",
}
