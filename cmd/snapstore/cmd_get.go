package main

import (
	"context"
	"io"
	"net/url"

	"github.com/snapstore/snapstore/server"
)

// getCommand is `snapstore get DATASET KEY...`: one row as the JSON object
// of GET /v1/datasets/{dataset}/rows/{key}, on one line.
type getCommand struct {
	stdout  io.Writer
	at      atFlags
	columns string // comma-separated; "" for all
	dataset string
	key     []string // one argument per key column
}

func cmdGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("get", stderr, true)
	c := &getCommand{stdout: stdout}
	c.at.register(fs)
	fs.StringVar(&c.columns, "columns", "", "comma-separated columns to return")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usageError("usage: snapstore get DATASET KEY... (one argument per key column)")
	}
	c.dataset, c.key = pos[0], pos[1:]
	return runClient(ctx, cf, stderr, c)
}

func (c *getCommand) remote(ctx context.Context, srv *serverClient) error {
	q := url.Values{}
	c.at.query(q)
	if c.columns != "" {
		q.Set("columns", c.columns)
	}
	path := "/v1/datasets/" + url.PathEscape(c.dataset) + "/rows"
	for _, k := range c.key {
		path += "/" + url.PathEscape(k)
	}
	return srv.copyGet(ctx, c.stdout, path, q, "application/json") // the body ends with a newline
}

func (c *getCommand) local(ctx context.Context, stk *stack, _ *Config) error {
	r, err := c.at.reader(ctx, stk.db, c.dataset)
	if err != nil {
		return err
	}
	defer r.Close()
	k, err := r.ParseKey(c.key)
	if err != nil {
		return err
	}
	row, err := r.Get(ctx, k, splitList(c.columns))
	if err != nil {
		return err
	}
	v := r.Version()
	_, err = c.stdout.Write(append(server.AppendRowResult(nil, v.Dataset, v.Version, row), '\n'))
	return err
}
