package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// versionsCommand is `snapstore versions DATASET`: the kept versions of a
// dataset, newest first, as a table or (--json) as the object of GET
// /v1/datasets/{dataset}/versions.
type versionsCommand struct {
	stdout  io.Writer
	asJSON  bool
	dataset string
}

func cmdVersions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("versions", stderr, true)
	c := &versionsCommand{stdout: stdout}
	fs.BoolVar(&c.asJSON, "json", false, "print JSON instead of a table")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("usage: snapstore versions DATASET [--json]")
	}
	c.dataset = pos[0]
	return runClient(ctx, cf, stderr, c)
}

// versionRow is the part of a version the table shows.
type versionRow struct {
	Version     int64             `json:"version"`
	CommittedAt time.Time         `json:"committed_at"`
	Stats       snapshot.RunStats `json:"stats"`
	Tags        []string          `json:"tags"`
	Current     bool              `json:"current"`
}

func (c *versionsCommand) remote(ctx context.Context, srv *serverClient) error {
	var body struct {
		Versions []json.RawMessage `json:"versions"`
	}
	if err := srv.decode(ctx, http.MethodGet, "/v1/datasets/"+url.PathEscape(c.dataset)+"/versions", nil, "versions", &body); err != nil {
		return err
	}
	if c.asJSON {
		return json.NewEncoder(c.stdout).Encode(body)
	}
	var vs []snapshot.VersionInfo
	for _, raw := range body.Versions {
		var v versionRow
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("decoding a version: %w", err)
		}
		vs = append(vs, snapshot.VersionInfo{Version: v.Version, CommittedAt: v.CommittedAt, Stats: v.Stats, Tags: v.Tags, Current: v.Current})
	}
	return c.table(vs)
}

func (c *versionsCommand) local(ctx context.Context, stk *stack, _ *Config) error {
	vs, err := stk.db.Versions(ctx, c.dataset)
	if err != nil {
		return err
	}
	if c.asJSON {
		return json.NewEncoder(c.stdout).Encode(map[string]any{"versions": vs})
	}
	return c.table(vs)
}

// table prints vs as an aligned table, the current version starred.
func (c *versionsCommand) table(vs []snapshot.VersionInfo) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tCOMMITTED\tROWS\tINSERTED\tUPDATED\tDELETED\tTAGS\tCURRENT")
	for _, v := range vs {
		cur := ""
		if v.Current {
			cur = "*"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", v.Version, v.CommittedAt.Local().Format(time.DateTime), v.Stats.Rows, v.Stats.Inserted, v.Stats.Updated, v.Stats.Deleted, strings.Join(v.Tags, ","), cur)
	}
	return tw.Flush()
}
