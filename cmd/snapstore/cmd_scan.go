package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

// scanCommand is `snapstore scan DATASET`: rows in key order, as NDJSON (one
// JSON object a row) or CSV with a header line, as GET
// /v1/datasets/{dataset}/rows answers them.
type scanCommand struct {
	stdout             io.Writer
	at                 atFlags
	start, end, prefix listFlag // one value per key column
	columns            string   // comma-separated; "" for all
	limit              int      // most rows; 0 for all
	format             string   // ndjson or csv
	dataset            string
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func cmdScan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("scan", stderr, true)
	c := &scanCommand{stdout: stdout}
	c.at.register(fs)
	fs.Var(&c.start, "start", "first key included (repeat once per key column)")
	fs.Var(&c.end, "end", "first key excluded (repeat once per key column)")
	fs.Var(&c.prefix, "prefix", "key prefix (repeat once per key column)")
	fs.StringVar(&c.columns, "columns", "", "comma-separated columns to return")
	fs.IntVar(&c.limit, "limit", 0, "most rows (0: all)")
	fs.StringVar(&c.format, "format", "ndjson", "ndjson or csv")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("usage: snapstore scan DATASET [--format ndjson|csv] [--start K]... [--limit N]")
	}
	if c.format != "ndjson" && c.format != "csv" {
		return usageError("--format: want ndjson or csv, got %q", c.format)
	}
	c.dataset = pos[0]
	return runClient(ctx, cf, stderr, c)
}

func (c *scanCommand) remote(ctx context.Context, srv *serverClient) error {
	q := url.Values{}
	c.at.query(q)
	for _, f := range []struct {
		n string
		v listFlag
	}{{"start", c.start}, {"end", c.end}, {"prefix", c.prefix}} {
		for _, v := range f.v {
			q.Add(f.n, v)
		}
	}
	if c.columns != "" {
		q.Set("columns", c.columns)
	}
	if c.limit > 0 {
		q.Set("limit", strconv.Itoa(c.limit))
	}
	accept := "application/x-ndjson"
	if c.format == "csv" {
		accept = "text/csv"
	}
	return srv.copyGet(ctx, c.stdout, "/v1/datasets/"+url.PathEscape(c.dataset)+"/rows", q, accept)
}

func (c *scanCommand) local(ctx context.Context, stk *stack, _ *Config) error {
	r, err := c.at.reader(ctx, stk.db, c.dataset)
	if err != nil {
		return err
	}
	defer r.Close()
	opts := snapshot.ScanOptions{Columns: splitList(c.columns), Limit: c.limit}
	for _, f := range []struct {
		v   listFlag
		dst *[]snapshot.Value
	}{{c.start, &opts.Start}, {c.end, &opts.End}, {c.prefix, &opts.Prefix}} {
		if len(f.v) > 0 {
			if *f.dst, err = r.ParseKey(f.v); err != nil {
				return err
			}
		}
	}
	it, err := r.Scan(ctx, opts)
	if err != nil {
		return err
	}
	defer it.Close()
	bw := bufio.NewWriter(c.stdout)
	defer bw.Flush()
	var cw *csv.Writer
	if c.format == "csv" {
		cw = csv.NewWriter(bw)
		defer cw.Flush()
	}
	var b []byte
	var rec []string
	n := 0
	for it.Next() {
		row := it.Row()
		if cw != nil {
			if n == 0 {
				_ = cw.Write(row.Columns)
			}
			rec = rec[:0]
			for _, v := range row.Values {
				rec = append(rec, server.ValueText(v))
			}
			_ = cw.Write(rec)
		} else {
			b = append(row.AppendJSON(b[:0]), '\n')
			if _, err := bw.Write(b); err != nil {
				return err
			}
		}
		n++
	}
	return it.Err()
}
