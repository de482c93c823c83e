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
--version, --as-of or --tag): NDJSON (one JSON object a row), or CSV with a
header line (NULL an empty field, bytes base64), streamed as
GET /v1/datasets/{dataset}/rows answers with Accept: application/x-ndjson or
text/csv. --start, --end and --prefix are key prefixes: repeat them once per
key column, in key order.`

// cmdScan is `snapstore scan DATASET`.
func cmdScan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("scan", "DATASET [--format ndjson|csv] [--start K]... [--end K]... [--prefix K]... [--limit N]", scanHelp, flagsClient, stdout)
	var at atFlags
	at.register(c)
	var start, end, prefix listFlag
	c.fs.Var(&start, "start", "first `key` included (repeat once per key column)")
	c.fs.Var(&end, "end", "first `key` excluded (repeat once per key column)")
	c.fs.Var(&prefix, "prefix", "key `prefix` (repeat once per key column)")
	columns := c.fs.String("columns", "", "comma-separated `columns` to return (default all)")
	limit := c.fs.Int("limit", 0, "most `rows` (0: all)")
	c.rawOutput("NDJSON, or CSV with --format csv")
	format := c.fs.String("format", "ndjson", "`format`, ndjson (one JSON object a line) or csv")
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	accept := map[string]string{"ndjson": "application/x-ndjson", "csv": "text/csv"}[*format]
	if accept == "" {
		return usageError("--format: want ndjson or csv, got %q", *format)
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
		return t.api.copyGet(ctx, stdout, pathOf("/v1/datasets/", pos[0], "/rows"), q, accept)
	})
}
